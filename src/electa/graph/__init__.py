"""The knowledge graph (SPEC A6, B5; issue 11): entities and relations extracted at ingest."""

"""The HTTP API (SPEC H1): a thin edge over the engine."""

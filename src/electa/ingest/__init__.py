"""Ingestion: files -> documents -> chunks, with a report of what was skipped and why."""

"""Evaluation on BEIR-layout data sets (SPEC I1)."""

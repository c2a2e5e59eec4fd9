"""Answers: small talk, prompt assembly, answerers (LLMs and the extractive default), checks."""

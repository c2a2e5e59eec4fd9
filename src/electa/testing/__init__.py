"""Shipped test helpers: deterministic fakes and contract suites that every backend inherits."""

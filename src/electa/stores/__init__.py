"""Stores: where sources, chunks, vectors and the full-text index live."""

from electa.stores.protocol import AllowedSet, Store, StoredUnit

__all__ = ["AllowedSet", "Store", "StoredUnit"]

"""Stores: where sources, chunks, vectors and the full-text index live."""

from electa.stores.protocol import (
    AllowedSet,
    IndexStore,
    OperationalStore,
    Store,
    StoredUnit,
    TextIndex,
    VectorIndex,
)

__all__ = ["AllowedSet", "IndexStore", "OperationalStore", "Store", "StoredUnit", "TextIndex", "VectorIndex"]

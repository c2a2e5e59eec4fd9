"""Electa: hybrid retrieval and grounded answers over an organisation's own knowledge.

Example::

    from electa import Access, Caller, Engine
    with Engine.open("electa-data") as engine:
        engine.ingest(["docs/"], Access(org="acme"))
        for hit in engine.search("refund policy", Caller(org="acme")).passing:
            print(f"{hit.score:.2f}", hit.title, hit.url)
"""

from electa.config import Settings
from electa.engine import Engine
from electa.errors import (
    AuthError,
    ConfigError,
    ElectaError,
    EmbedderUnavailable,
    IngestError,
    ModelMismatchError,
    NotFoundError,
    StoreError,
    UnsupportedFormat,
)
from electa.served_order import Order
from electa.types import Access, Caller, ChunkKind, Hit, LegResult, LegStatus, LegVote, Passage, SearchResult

__version__ = "0.1.0"

__all__ = [
    "Access",
    "AuthError",
    "Caller",
    "ChunkKind",
    "ConfigError",
    "ElectaError",
    "EmbedderUnavailable",
    "Engine",
    "Hit",
    "IngestError",
    "LegResult",
    "LegStatus",
    "LegVote",
    "ModelMismatchError",
    "NotFoundError",
    "Order",
    "Passage",
    "SearchResult",
    "Settings",
    "StoreError",
    "UnsupportedFormat",
    "__version__",
]

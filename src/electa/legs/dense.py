"""The dense leg: ANN over embeddings (SPEC B2)."""

from __future__ import annotations

from electa.embedders.protocol import Embedder
from electa.stores.protocol import AllowedSet, VectorIndex
from electa.types import Caller


class DenseLeg:
    """Cosine HNSW search over parent, child, whole-document and Q&A vectors.

    With no embedder (none configured, or its package missing) the leg is unavailable and
    says why; there is no silent hash "embedding" in its place (SPEC B2).
    """

    name = "dense"

    def __init__(self, embedder: Embedder | None, index: VectorIndex | None, why: str = "") -> None:
        self.embedder = embedder
        self.index = index
        self._why = why

    def available(self) -> bool:
        return self.embedder is not None and self.index is not None

    @property
    def why(self) -> str:
        return self._why

    def search(self, query: str, caller: Caller, allowed: AllowedSet, depth: int) -> list[tuple[int, float]]:
        if self.embedder is None or self.index is None:
            return []
        vec = self.embedder.embed_query(query)
        return self.index.search(vec, depth, allowed)

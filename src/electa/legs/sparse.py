"""The learned-sparse leg (SPEC B3): SPLADE term weights of the question against those of every
parent unit, by dot product, over an in-memory inverted index (:mod:`electa.stores.sparse_index`).

It earns its keep where the dense leg is weakest (the three-lane reference: "rare tokens that
the model has learned to weight heavily") while, unlike full text, matching words the passage
does not use: the model expands a text with the vocabulary entries it implies.
"""

from __future__ import annotations

from electa.embedders.protocol import SparseEncoder
from electa.stores.protocol import AllowedSet, SparseTermStore
from electa.stores.sparse_index import SparseIndex
from electa.types import Caller


class SparseLeg:
    """Dot product of learned term weights. With no encoder (the model is not installed, or the
    store cannot hold the weights) the leg is unavailable and says why."""

    name = "sparse"

    def __init__(self, encoder: SparseEncoder | None, index: SparseIndex | None, why: str = "") -> None:
        self.encoder, self.index, self._why = encoder, index, why
        self.missing = 0  # parent units without this model's weights (the engine counts them)

    def recount(self, store: SparseTermStore) -> None:
        """Count the parent units that lack this model's weights (the store's two counts)."""
        if self.encoder is not None:
            self.missing = max(0, store.count_parents() - store.count_sparse(self.encoder.model_id))

    def available(self) -> bool:
        return self.encoder is not None and self.index is not None

    @property
    def why(self) -> str:
        """Why the leg cannot run; or, while it runs, how many units it cannot find yet."""
        if not self.available():
            return self._why
        if self.missing:
            return (f"{self.missing} parent units have no learned term weights yet (stored before the leg was on,"
                    " under another model, or by a write cut short): run `electa reindex`")
        return ""

    def search(self, query: str, caller: Caller, allowed: AllowedSet, depth: int) -> list[tuple[int, float]]:
        if self.encoder is None or self.index is None:
            return []
        self.index.sync(wait=False)  # another process's writes: one range read when there are none
        terms, weights = self.encoder.encode([query])[0]
        return self.index.search(terms, weights, depth, allowed)

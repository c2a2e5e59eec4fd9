"""The dense leg: ANN over embeddings (SPEC B2)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from electa.embedders.chain import LanguageRouted, score_map
from electa.embedders.protocol import Embedder
from electa.legs.crossing import CrossingScorer
from electa.stores.protocol import AllowedSet, VectorIndex
from electa.types import Caller

log = logging.getLogger(__name__)


class DenseLeg:
    """Cosine HNSW search over parent, child, whole-document and Q&A vectors.

    With no embedder (none configured, or its package missing) the leg is unavailable and
    says why; there is no silent hash "embedding" in its place (SPEC B2).
    """

    name = "dense"

    def __init__(self, embedder: Embedder | None, index: VectorIndex | None, why: str = "",
                 languages: Callable[[Caller, int], tuple[str, ...]] | None = None,
                 own: Callable[[Caller, int], tuple[Embedder, VectorIndex] | None] | None = None,
                 crossing: CrossingScorer | None = None) -> None:
        self.embedder = embedder
        self.index = index
        self._why = why
        # A chain's units of another language than the question's, scored by the model that
        # carries a question across languages (:mod:`electa.legs.crossing`).
        self._crossing = crossing
        self._crossing_failed = False
        # The languages of the caller's units at a store generation: a chain of models embeds
        # the question only with the models that read them.
        self._languages = languages
        # The model and index of an organisation that reads with its own
        # (:mod:`electa.legs.dense_readings`), or None for the engine's.
        self._own = own

    def available(self) -> bool:
        return self.embedder is not None and self.index is not None

    @property
    def why(self) -> str:
        return self._why

    def search(self, query: str, caller: Caller, allowed: AllowedSet, depth: int) -> list[tuple[int, float]]:
        if self.embedder is None or self.index is None:
            return []
        own = self._own(caller, allowed.generation) if self._own is not None else None
        if own is not None:
            return _mapped(own[1].search(own[0].embed_query(query), depth, allowed), score_map(own[0]))
        if not isinstance(self.embedder, LanguageRouted):
            return _mapped(self.index.search(self.embedder.embed_query(query), depth, allowed), score_map(self.embedder))
        languages = self._languages(caller, allowed.generation) if self._languages is not None else None
        vec = self.embedder.embed_query(query) if languages is None else self.embedder.embed_query_in(query, languages)
        halves = []
        for part, (scale, shift) in self.embedder.halves(vec):
            # A unit of the other half scores exactly 0 here (its vector is zero in this half):
            # its score is the one of its own half, whatever this half's map makes of 0.
            halves.append({uid: scale * score + shift for uid, score in self.index.search(part, depth, allowed)
                           if score != 0.0})
        if self._crossing is not None:
            try:
                halves = self._crossing.rescore(query, halves, languages)
            except Exception as exc:  # (the chain's own scores still answer)
                if not self._crossing_failed:
                    log.warning("scoring units in another language than the question's failed (%s): the chain's"
                                " scores stand (said once)", exc)
                    self._crossing_failed = True
        best = {uid: score for half in halves for uid, score in half.items()}
        return sorted(best.items(), key=lambda item: (-item[1], item[0]))[:depth]


def _mapped(hits: list[tuple[int, float]], map_: tuple[float, float]) -> list[tuple[int, float]]:
    scale, shift = map_
    return hits if map_ == (1.0, 0.0) else [(uid, scale * score + shift) for uid, score in hits]

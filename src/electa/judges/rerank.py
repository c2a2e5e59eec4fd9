"""The rerank judge (SPEC D1): a pair scorer reads the question beside each of the top hits
(title + the first 2,000 characters) and its scores reorder them.

Hits are scored in the order fusion left them, a batch at a time, each batch reported as soon as
it is scored: when the budget runs out, the best-ranked hits are the ones scored ("anytime"
reranking, as in reference/three-lane-company-search.txt: top 100 within 3 s). Scorers are
interchangeable behind :class:`PairScorer` (:mod:`electa.judges.scorers`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Protocol

from electa.judges.protocol import Progress, order_by_score
from electa.types import Caller, Hit


class PairScorer(Protocol):
    """Scores (question, passage) pairs.

    Contract: ``score(query, passages, deadline)`` returns one finite number per passage, in
    order, higher meaning more relevant; scores of one call are comparable with each other (not
    necessarily across calls or scorers). Once ``time.monotonic()`` passes ``deadline`` (when
    given) it should stop, returning the scores of the passages it finished (a prefix) or
    raising; it should not wait on a server past it. It may raise (the judge then fails soft).
    ``name`` identifies the scorer and its model in responses (``onnx:<folder>``,
    ``http:<url>``, ``llm:<answerer>``).
    """

    name: str

    def score(self, query: str, passages: Sequence[str], deadline: float | None = None) -> list[float]: ...


def reranker_text(title: str, text: str, chars: int) -> str:
    """A title and the first ``chars`` characters of a text, cut at a word boundary: what a
    reranker reads (and what ``bench/train_cross_encoder.py`` trains on)."""
    if len(text) > chars:
        cut = text.rfind(" ", 0, chars + 1)
        text = text[: cut if cut > chars // 2 else chars]
    return f"{title}\n{text}" if title else text


def passage_of(hit: Hit, chars: int) -> str:
    """What a reranker reads of a hit (SPEC D1): its title and the first ``chars`` characters,
    cut at a word boundary.

    >>> from electa.types import ChunkKind
    >>> h = Hit(1, 1, 1, ChunkKind.PARENT, "Refunds", "Annual plans are refunded in full", "", "", 0, 0, True, ())
    >>> passage_of(h, 20)
    'Refunds\\nAnnual plans are'
    """
    return reranker_text(hit.title, hit.text, chars)


PACE_MARGIN = 0.9  # the share of the time left a batch may be predicted to take
_clock = time.monotonic  # (the tests pace a scorer on a clock of their own)


class RerankJudge:
    """``RerankJudge(scorer, depth=100, chars=2000, batch=16, blend=1.0)``: see the module."""

    name = "rerank"

    def __init__(self, scorer: PairScorer, depth: int = 100, chars: int = 2000, batch: int = 16,
                 blend: float = 1.0) -> None:
        self.scorer = scorer
        self.depth, self.chars, self.batch, self.blend = depth, chars, max(1, batch), blend

    def available(self, caller: Caller) -> bool:
        return True

    @property
    def why(self) -> str:
        return ""

    def score(self, query: str, caller: Caller, hits: Sequence[Hit], progress: Progress, deadline: float) -> None:
        passages = [passage_of(h, self.chars) for h in hits[: self.depth]]
        # Batches grow from four to ``batch``: a tight budget still gets the first few scored.
        # A scorer may cap them (the LLM grades one pair a call, so each grade counts at once).
        batch = min(self.batch, getattr(self.scorer, "max_batch", self.batch))
        start, size = 0, min(4, batch)
        began, quickest = _clock(), math.inf
        while start < len(passages):
            now = _clock()
            if now >= deadline:
                progress.stop_for_budget(ran_out=True)
                return
            if start and now > began:
                # Start only a batch that should end before the deadline: one still running there
                # is thrown away, and the search waits out the budget for it. A batch is predicted
                # to take this call's pace so far (seconds a pair) times its size, and no less
                # than the quickest batch yet (a call has a cost of its own, whatever its size),
                # within nine tenths of the time left.
                room = PACE_MARGIN * (deadline - now)
                fits = int(room * start / (now - began))
                if quickest > room or fits < 1:
                    progress.stop_for_budget()
                    return
                size = min(size, fits)
            part = passages[start: start + size]
            start, size = start + len(part), min(batch, size * 2)
            sent = _clock()
            try:
                scores = self.scorer.score(query, part, deadline)
            except Exception:
                if _clock() >= deadline:  # failed because time ran out (a server timeout at the deadline)
                    progress.stop_for_budget(ran_out=True)
                    return
                raise
            ended = _clock()
            quickest, late = min(quickest, ended - sent), ended >= deadline
            if len(scores) > len(part) or (len(scores) < len(part) and not late):
                raise ValueError(f"scorer {self.scorer.name} gave {len(scores)} scores for {len(part)} passages")
            progress.add(scores)
            if len(scores) < len(part):  # stopped at the deadline: what it finished counts
                progress.stop_for_budget(ran_out=True)
                return

    def order(self, hits: Sequence[Hit], scores: Sequence[float]) -> list[int]:
        return order_by_score(scores, self.blend)

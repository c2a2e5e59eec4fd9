"""The rerank judge (SPEC D1): a pair scorer reads the question beside each of the top hits
(title + the first 2,000 characters) and its scores reorder them.

Hits are scored in the order fusion left them, a batch at a time, each batch reported as soon as
it is scored: when the budget runs out, the best-ranked hits are the ones scored ("anytime"
reranking, as in reference/three-lane-company-search.txt: top 100 within 3 s). A batch starts
only when it is predicted to end before the deadline: by the search's own pace from its second
batch on, and for its first by the scorer's recent batches for the same organisation, kept
across searches (:class:`Pace`). Scorers are interchangeable behind :class:`PairScorer`
(:mod:`electa.judges.scorers`).
"""

from __future__ import annotations

import collections
import math
import statistics
import threading
import time
import weakref
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
PROBE_EVERY = 16  # of the searches recent batches say cannot end a first batch in time, one tries anyway
NOT_A_PACE = 3.0  # a batch taking this many times its search's budget is a hang or a cold start, not a pace
STALE_S = 60.0  # a batch noted longer ago than this says nothing of the scorer's pace now
SKIP_AFTER = 3  # recent batches needed before a first batch is skipped (one slow moment is not a pace)
_clock = time.monotonic  # (the tests pace a scorer on a clock of their own)


class Pace:
    """What one scorer's batches have cost lately for one organisation, kept across its searches:
    the last ``KEPT`` batches of each size, of the last ``STALE_S`` seconds.

    It decides a search's first batch, which the search's own pace cannot (it has none yet): a
    model slower than its budget for four pairs (MiniLM's cross-encoder, ~100 ms for four of
    SciFact's passages, within a 100 ms budget; a model server that answers in 120 ms) would
    otherwise start a batch at every search that is thrown away at the deadline, the search
    waiting out its budget for nothing. A batch of ``m`` pairs is predicted to take no less than
    the typical (median) recent batch of the largest size up to ``m`` (a call has a cost of its
    own), nor less than ``m`` times the typical seconds a pair at the size that costs least a
    pair. Typical, not best: a batch that ends in time once in a while, where it usually does
    not, must not be started at every search. The first batch is cut to the most pairs predicted
    to end in the time left; when not even two are (one score reorders nothing; one, for a
    scorer that takes one pair a call), it is skipped, once ``SKIP_AFTER`` recent batches say so
    (before that it tries the least batch). A batch cut at the deadline (a server's timeout, a
    prefix of scores) counts with the time it took, at least what it would have: enough to say
    it does not fit. A batch that took more than ``NOT_A_PACE`` times its search's whole budget
    is not noted: a hung server that recovers, or a model's first run, says nothing of its pace.
    One in every ``PROBE_EVERY`` searches skipped in a row still tries the least batch, and
    batches older than ``STALE_S`` are forgotten, so a slow spell does not outlive itself.

    Kept per organisation (:func:`pace_of`): how long a batch takes depends on the passages'
    lengths, so one organisation's long pages never cut another's reranking."""

    KEPT = 5

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._recent: dict[int, collections.deque[tuple[float, float]]] = {}  # size -> (when, seconds)
        self._skipped = 0  # searches in a row whose first batch was skipped

    def note(self, pairs: int, seconds: float) -> None:
        """A batch of ``pairs`` took ``seconds`` (or was cut at the deadline after them)."""
        with self._lock:
            self._recent.setdefault(pairs, collections.deque(maxlen=self.KEPT)).append((_clock(), seconds))

    def first(self, room: float, size: int) -> int:
        """How many pairs a search's first batch may hold, at most ``size``, to end within
        ``room`` seconds by the recent batches: ``size`` with no recent past, 0 to skip it."""
        with self._lock:
            fresh = _clock() - STALE_S
            typical = {n: statistics.median(t for when, t in times if when >= fresh)
                       for n, times in self._recent.items() if any(when >= fresh for when, _ in times)}
            if not typical:
                return size
            per_pair = min(t / max(1, n) for n, t in typical.items())
            least = min(2, size)  # (one score reorders nothing; a scorer of one pair a call adds more)
            for m in range(size, least - 1, -1):
                below = [n for n in typical if n <= m]
                floor = typical[max(below)] if below else 0.0
                if max(floor, per_pair * m) <= room:
                    self._skipped = 0
                    return m
            seen = sum(1 for times in self._recent.values() for when, _ in times if when >= fresh)
            if seen < SKIP_AFTER:
                return least
            self._skipped += 1
            if self._skipped >= PROBE_EVERY:
                self._skipped = 0
                return least
            return 0


_paces: weakref.WeakKeyDictionary[object, dict[str, Pace]] = weakref.WeakKeyDictionary()
_paces_lock = threading.Lock()


def pace_of(scorer: object, org: str) -> Pace:
    """The :class:`Pace` kept for ``scorer`` and organisation ``org`` while the scorer lives (a
    fresh one for a scorer that cannot be weakly referenced: it keeps no past)."""
    with _paces_lock:
        try:
            by_org = _paces.get(scorer)
            if by_org is None:
                by_org = _paces[scorer] = {}
        except TypeError:
            return Pace()
        return by_org.setdefault(org, Pace())


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
        began, quickest, pace = _clock(), math.inf, pace_of(self.scorer, caller.org)

        def note(pairs: int, seconds: float) -> None:
            if seconds <= NOT_A_PACE * (deadline - began):
                pace.note(pairs, seconds)

        while start < len(passages):
            now = _clock()
            if now >= deadline:
                progress.stop_for_budget(ran_out=True)
                return
            if not start:
                size = pace.first(PACE_MARGIN * (deadline - now), size)
                if size < 1:
                    progress.stop_for_budget()
                    return
            elif now > began:
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
                ended = _clock()
                if ended >= deadline:  # failed because time ran out (a server timeout at the deadline)
                    note(len(part), ended - sent)
                    progress.stop_for_budget(ran_out=True)
                    return
                raise
            ended = _clock()
            quickest, late = min(quickest, ended - sent), ended >= deadline
            if len(scores) > len(part) or (len(scores) < len(part) and not late):
                raise ValueError(f"scorer {self.scorer.name} gave {len(scores)} scores for {len(part)} passages")
            progress.add(scores)
            note(len(part), ended - sent)
            if len(scores) < len(part):  # stopped at the deadline: what it finished counts
                progress.stop_for_budget(ran_out=True)
                return

    def order(self, hits: Sequence[Hit], scores: Sequence[float]) -> list[int]:
        return order_by_score(scores, self.blend)

"""The judge contract (SPEC D1-D3): what a judge is given, how it reports progress, and how its
scores become an order.

A judge refines the order of the hits fusion produced. It is optional, runs within its own time
budget and fails soft: the funnel (:mod:`electa.judges.funnel`) runs it on a worker thread and,
whatever happens, gives the caller an order at the deadline.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Protocol

from electa.errors import JudgeError
from electa.types import Caller, Hit


class Progress:
    """The scores a judge has produced so far, for the hits it was given in their order: hit
    ``i`` has score ``values[i]``. A judge adds each batch as soon as it is known, so a budget
    cut still finds the best-ranked hits scored ("anytime" judging); the funnel reads a copy
    at the deadline (or when the judge ends), and whatever the judge adds after that is ignored."""

    def __init__(self) -> None:
        self._values: list[float] = []
        self._lock = threading.Lock()
        self._closed = False
        #: why the judge stopped before its depth for its budget (:meth:`stop_for_budget`), in
        #: the words of the stage's note; "" when it did not
        self.budget_stop = ""

    def stop_for_budget(self, ran_out: bool = False) -> None:
        """Say that the judge stops here for its budget: with time left, because what it would
        do next would not end before the deadline, or (``ran_out``) at or past the deadline. The
        funnel reports either as a budget cut when the judge scored fewer hits than it was given,
        even when the judge ends before the funnel's own wait does. (A judge that scores fewer
        hits than it is given for any other reason, such as a learned ranker trained shallower,
        does not call this.)"""
        self.budget_stop = "ran out" if ran_out else "left too little for the next batch"

    def add(self, values: Sequence[float]) -> None:
        with self._lock:
            if not self._closed:
                self._values.extend(float(v) for v in values)

    def close(self) -> list[float]:
        """The scores so far; later additions are dropped (the funnel has moved on)."""
        with self._lock:
            self._closed = True
            return list(self._values)

    def __len__(self) -> int:
        with self._lock:
            return len(self._values)


class Judge(Protocol):
    """One stage of the funnel.

    Contract:

    - ``name`` is the stage's name in responses (``rerank``, ``ltr``, ``personalise``);
    - ``depth`` is how many of the incoming hits it looks at (the first ones, in the order it
      is given);
    - ``available()`` says whether it can run at all; ``why`` says why not (missing model,
      nothing trained for this organisation), and the funnel reports it;
    - ``score(query, caller, hits, progress, deadline)`` scores ``hits`` (at most ``depth`` of
      them) in the order given, adding scores to ``progress`` as they are known, and should
      stop once ``time.monotonic()`` passes ``deadline``, calling
      ``progress.stop_for_budget(ran_out=True)``, or sooner, calling
      ``progress.stop_for_budget()``, when its next step would not end by then (either is
      reported as a budget cut). It may raise or hang: the funnel then keeps the previous order
      and says so. It must only read what ``caller`` may read;
    - ``order(hits, scores)`` returns the new order of ``hits[:len(scores)]`` as indices into
      that prefix, a pure function of its arguments.
    """

    name: str
    depth: int

    def available(self, caller: Caller) -> bool: ...

    @property
    def why(self) -> str: ...

    def score(self, query: str, caller: Caller, hits: Sequence[Hit], progress: Progress, deadline: float) -> None: ...

    def order(self, hits: Sequence[Hit], scores: Sequence[float]) -> list[int]: ...


def order_by_score(scores: Sequence[float], blend: float = 1.0, k: float = 60.0) -> list[int]:
    """The order of hits by a judge's scores, optionally blended with the order they came in.

    ``blend = 1`` sorts by score alone (ties keep the incoming order). Below 1, each hit's key is
    reciprocal-rank fusion of the two orders (Cormack, Clarke & Büttcher 2009, k = 60):
    ``blend / (k + judged rank) + (1 - blend) / (k + incoming rank)``, so a weak judge moves
    hits without overturning fusion.

    >>> order_by_score([0.1, 0.9, 0.5])
    [1, 2, 0]
    >>> order_by_score([0.1, 0.9, 0.5], blend=0.0)
    [0, 1, 2]
    """
    by_score = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    if blend >= 1.0:
        return by_score
    judged_rank = {i: r for r, i in enumerate(by_score, start=1)}
    key = {i: blend / (k + judged_rank[i]) + (1.0 - blend) / (k + i + 1) for i in range(len(scores))}
    return sorted(range(len(scores)), key=lambda i: (-key[i], i))


class UnavailableJudge:
    """A judge the settings turn on but that could not be made (a missing model folder, an
    unknown scorer): every search says why in its stage, and the order stands."""

    depth = 1

    def __init__(self, name: str, why: str, failing: bool = False) -> None:
        # ``failing``: a fault of this worker at this moment (a model that is there but does not
        # load), reported as an error, so the result is not cached for other workers to replay.
        self.name, self._why, self.failing = name, why, failing

    def available(self, caller: Caller) -> bool:
        return False

    @property
    def why(self) -> str:
        return self._why

    def score(self, query: str, caller: Caller, hits: Sequence[Hit], progress: Progress, deadline: float) -> None:
        raise JudgeError(self._why)

    def order(self, hits: Sequence[Hit], scores: Sequence[float]) -> list[int]:
        return list(range(len(scores)))

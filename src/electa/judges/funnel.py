"""The judge funnel (SPEC D1-D3, D6): judges refine the fused order one after another, each
within its own time budget, each failing soft, each leaving a :class:`~electa.types.Stage`.

A judge runs on a thread of its own; the caller waits at most its budget. At the deadline the
funnel takes the scores the judge had produced (:class:`~electa.judges.protocol.Progress`): the
hits it scored, the best-ranked ones since it scores in the order given, are reordered among
themselves and every other hit keeps its place. A judge that raises, returns something
malformed or scores fewer than two hits in time leaves the order as it was, and its stage says
why. Calls still running past their deadline (a hung model server) are counted: once
``STUCK_LIMIT`` of one judge's are, it is skipped ("busy") until one ends, so hung calls cannot
pile up threads. Calls within their budget are never counted: any number may run at once.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace

from electa.errors import ConfigError
from electa.judges.protocol import Judge, Progress
from electa.types import Caller, Hit, Stage

log = logging.getLogger(__name__)

# The reference's reranker budget (reference/three-lane-company-search.txt: 3 s).
DEFAULT_BUDGET_MS = 3000.0


class Funnel:
    """``Funnel([RerankJudge(...)], {"rerank": 3000}).run(query, caller, hits)``."""

    STUCK_LIMIT = 2  # calls of one judge still running past their deadline before it is skipped

    def __init__(self, judges: Sequence[Judge], budgets_ms: Mapping[str, float] | None = None) -> None:
        self.judges: dict[str, Judge] = {j.name: j for j in judges}
        self.budgets_ms = dict(budgets_ms or {})
        self._overdue: dict[str, int] = dict.fromkeys(self.judges, 0)  # calls running past their deadline
        self._lock = threading.Lock()
        self._closed = False

    def depth(self, names: Sequence[str] | None = None) -> int:
        """How many fused hits the chosen judges look at (0 with none)."""
        return max((self.judges[n].depth for n in self._chosen(names)), default=0)

    def _chosen(self, names: Sequence[str] | None) -> list[str]:
        if names is None:
            return list(self.judges)
        unknown = [n for n in names if n not in self.judges]
        if unknown:
            valid = ", ".join(self.judges) or "none are configured on this server"
            raise ConfigError(f"unknown judge {unknown[0]!r}; valid judges: {valid}")
        twice = [n for i, n in enumerate(names) if n in names[:i]]
        if twice:  # each repeat would cost the judge's whole work again
            raise ConfigError(f"judge {twice[0]!r} is named twice; name each judge once")
        return list(names)

    def run(self, query: str, caller: Caller, hits: Sequence[Hit], names: Sequence[str] | None = None,
            budgets_ms: Mapping[str, float] | None = None) -> tuple[list[Hit], list[Stage]]:
        """The hits in the order the chosen judges (default: all, in the order given at
        construction) leave them, and one stage per judge."""
        order = list(hits)
        stages = []
        for name in self._chosen(names):
            budget = (budgets_ms or {}).get(name, self.budgets_ms.get(name, DEFAULT_BUDGET_MS))
            order, stage = self._one(self.judges[name], query, caller, order, float(budget))
            stages.append(stage)
        return order, stages

    def _one(self, judge: Judge, query: str, caller: Caller, hits: list[Hit], budget_ms: float) -> tuple[list[Hit], Stage]:
        start = time.monotonic()
        considered = hits[: judge.depth]

        def stage(ran: bool = False, changed: bool = False, scored: int = 0, note: str = "") -> Stage:
            return Stage(judge.name, ran, changed, (time.monotonic() - start) * 1000.0, scored, len(considered), note)

        if not considered:
            return hits, stage(note="no hits to judge")
        try:
            if not judge.available(caller):
                return hits, stage(note=f"unavailable: {judge.why}")
        except Exception as exc:  # a broken availability check is the judge failing, softly
            log.warning("judge %s: availability check failed", judge.name, exc_info=True)
            return hits, stage(note=f"error: {type(exc).__name__}: {exc}")
        with self._lock:
            if self._closed:
                return hits, stage(note="unavailable: the engine is closing")
            if self._overdue[judge.name] >= self.STUCK_LIMIT:
                return hits, stage(note="busy: earlier calls are still running past their budget")
        progress = Progress()
        deadline = start + budget_ms / 1000.0
        call = _Call(self, judge.name)
        # A daemon thread: a hung call never holds up the process's exit.
        threading.Thread(target=call.run, args=(judge, query, caller, considered, progress, deadline),
                         name=f"judge-{judge.name}", daemon=True).start()
        note = ""
        if not call.done.wait(max(0.0, deadline - time.monotonic())) and call.overdue():
            note = f"budget of {budget_ms:.0f} ms ran out"
        elif call.error is not None:
            progress.close()
            failure = call.error
            log.warning("judge %s failed; the previous order stands", judge.name, exc_info=failure)
            return hits, stage(note=f"error: {type(failure).__name__}: {failure}")
        scores = progress.close()[: len(considered)]
        if not all(math.isfinite(s) for s in scores):
            return hits, stage(note="error: the judge gave a score that is not a finite number")
        if note:
            note += f": scored {len(scores)} of {len(considered)}"
        if len(scores) < 2:
            return hits, stage(scored=len(scores), note=note or "scored fewer than two hits")
        prefix = considered[: len(scores)]
        try:
            new = judge.order(prefix, scores)
            if sorted(new) != list(range(len(prefix))):
                raise ValueError(f"order() gave {len(new)} positions, not a permutation of {len(prefix)}")
        except Exception as exc:
            log.warning("judge %s: order failed; the previous order stands", judge.name, exc_info=True)
            return hits, stage(scored=len(scores), note=f"error: {type(exc).__name__}: {exc}")
        judged = [replace(prefix[i], judged=(*prefix[i].judged, (judge.name, scores[i]))) for i in new]
        return judged + hits[len(prefix):], stage(True, new != list(range(len(prefix))), len(scores), note)

    def close(self) -> None:
        """Take no more calls; calls still running (hung) end on their own (daemon threads)."""
        with self._lock:
            self._closed = True


class _Call:
    """One judge call on its thread: whether it ended, how, and whether the funnel gave up on
    it (then it counts as overdue until it ends)."""

    def __init__(self, funnel: Funnel, name: str) -> None:
        self.funnel, self.name = funnel, name
        self.done = threading.Event()
        self.error: BaseException | None = None
        self._overdue = False

    def run(self, judge: Judge, query: str, caller: Caller, hits: list[Hit], progress: Progress,
            deadline: float) -> None:
        try:
            judge.score(query, caller, hits, progress, deadline)
        except BaseException as exc:  # reported by the funnel's thread, which is still waiting
            self.error = exc
        finally:
            with self.funnel._lock:
                self.done.set()
                if self._overdue:
                    self.funnel._overdue[self.name] -= 1

    def overdue(self) -> bool:
        """Called at the deadline: True (and counted) if the call is still running."""
        with self.funnel._lock:
            if self.done.is_set():
                return False
            self._overdue = True
            self.funnel._overdue[self.name] += 1
            return True

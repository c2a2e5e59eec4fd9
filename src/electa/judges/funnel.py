"""The judge funnel (SPEC D1-D3, D6): judges refine the fused order one after another, each
within its own time budget, each failing soft, each leaving a :class:`~electa.types.Stage`.

A judge runs on a thread of its own; the caller waits at most its budget. At the deadline, or
when the judge stops early because its next step would not end in time, the funnel takes the
scores the judge had produced (:class:`~electa.judges.protocol.Progress`): the hits it scored,
the best-ranked ones since it scores in the order given, are reordered among themselves and
every other hit keeps its place; either is reported as a budget cut. A judge that raises, returns something
malformed or scores fewer than two hits in time leaves the order as it was, and its stage says
why. Calls still running well past their deadline (by ``GRACE_S`` or their budget, whichever
is longer: a hung model server, not a slow batch finishing) are counted: once ``STUCK_LIMIT`` of
one judge's are, it is skipped ("busy") until one ends, so hung calls cannot pile up threads.
Other calls never count: any number may run at once.
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

    STUCK_LIMIT = 2  # calls of one judge hung past their deadline before it is skipped
    GRACE_S = 1.0  # past its deadline by more than this (and its budget) a call counts as hung

    def __init__(self, judges: Sequence[Judge], budgets_ms: Mapping[str, float] | None = None) -> None:
        self.judges: dict[str, Judge] = {j.name: j for j in judges}
        self.budgets_ms = dict(budgets_ms or {})
        self._abandoned: dict[str, set[_Call]] = {name: set() for name in self.judges}  # still running at the deadline
        self._live = 0  # calls whose thread has not ended
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._closed = False

    def _hung(self, name: str) -> int:
        now = time.monotonic()
        return sum(1 for c in self._abandoned[name] if now - c.deadline > max(self.GRACE_S, c.budget_s))

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no judge call is running (benchmarks: a cut call must not overlap the next
        measurement). True if none is."""
        with self._idle:
            return self._idle.wait_for(lambda: self._live == 0, timeout)

    def depth(self, names: Sequence[str] | None, caller: Caller, judges: Mapping[str, Judge] | None = None) -> int:
        """How many fused hits the chosen judges look at (0 with none), counting only the judges
        that can run for ``caller`` (a search need not build the hits that a judge with no model
        for this agent would have read). ``judges``: as for :meth:`run`."""
        chosen = self.runnable(caller, names, judges)
        return max(((judges or {}).get(n, self.judges[n]).depth for n in chosen), default=0)

    def runnable(self, caller: Caller, names: Sequence[str] | None = None,
                 judges: Mapping[str, Judge] | None = None) -> list[str]:
        """The chosen judges that can run for ``caller`` (a judge whose check fails counts: it
        fails when it runs, and its stage says so)."""
        return [n for n in self.chosen(names) if self._may_run((judges or {}).get(n, self.judges[n]), caller)]

    @staticmethod
    def _may_run(judge: Judge, caller: Caller) -> bool:
        try:
            return judge.available(caller)
        except Exception:  # it fails when it runs, and its stage says so
            return True

    def chosen(self, names: Sequence[str] | None) -> list[str]:
        """The judges ``names`` picks (default: all, in funnel order); an unknown or repeated
        name raises :class:`ConfigError`."""
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
            budgets_ms: Mapping[str, float] | None = None,
            judges: Mapping[str, Judge] | None = None) -> tuple[list[Hit], list[Stage]]:
        """The hits in the order the chosen judges (default: all, in the order given at
        construction) leave them, and one stage per judge. ``judges`` stands in for some of
        them in this call only, by name (the judge bound to this caller's own model)."""
        order = list(hits)
        stages = []
        for name in self.chosen(names):
            budget = (budgets_ms or {}).get(name, self.budgets_ms.get(name, DEFAULT_BUDGET_MS))
            judge = (judges or {}).get(name, self.judges[name])
            order, stage = self._one(judge, query, caller, order, float(budget))
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
                return hits, stage(note=f"{'error' if getattr(judge, 'failing', False) else 'unavailable'}: {judge.why}")
        except Exception as exc:  # a broken availability check is the judge failing, softly
            log.warning("judge %s: availability check failed", judge.name, exc_info=True)
            return hits, stage(note=f"error: {type(exc).__name__}: {exc}")
        with self._lock:
            if self._closed:
                return hits, stage(note="unavailable: the engine is closing")
            if self._hung(judge.name) >= self.STUCK_LIMIT:
                return hits, stage(note="busy: earlier calls are still running long past their budget")
            self._live += 1
        progress = Progress()
        deadline = start + budget_ms / 1000.0
        call = _Call(self, judge.name, deadline, budget_ms / 1000.0)
        # A daemon thread: a hung call never holds up the process's exit.
        threading.Thread(target=call.run, args=(judge, query, caller, considered, progress, deadline),
                         name=f"judge-{judge.name}", daemon=True).start()
        note = ""
        if not call.done.wait(max(0.0, deadline - time.monotonic())) and call.abandon():
            note = f"budget of {budget_ms:.0f} ms ran out"
        elif call.error is not None:
            progress.close()
            failure = call.error
            log.warning("judge %s failed; the previous order stands", judge.name, exc_info=failure)
            return hits, stage(note=f"error: {type(failure).__name__}: {failure}")
        scores = progress.close()[: len(considered)]
        if not all(math.isfinite(s) for s in scores):
            return hits, stage(note="error: the judge gave a score that is not a finite number")
        # (A judge that ended just before the wait did, or stopped in time, says so.)
        if not note and progress.budget_stop and len(scores) < len(considered):
            note = f"budget of {budget_ms:.0f} ms {progress.budget_stop}"
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

    def close(self, wait_s: float = 10.0) -> None:
        """Take no more calls, and wait up to ``wait_s`` for those still running: a call cut at
        its deadline is usually inside a model batch, and a process that exits under a native
        library's running thread is aborted (onnxruntime: "terminate called without an active
        exception"). A call still hung after that is left to its daemon thread."""
        with self._lock:
            self._closed = True
        if not self.wait_idle(wait_s):
            log.warning("judge calls still running after %.0f s; leaving them", wait_s)


class _Call:
    """One judge call on its thread: whether it ended, how, and whether the funnel stopped
    waiting for it (then it is one of the judge's abandoned calls until it ends)."""

    def __init__(self, funnel: Funnel, name: str, deadline: float, budget_s: float) -> None:
        self.funnel, self.name, self.deadline, self.budget_s = funnel, name, deadline, budget_s
        self.done = threading.Event()
        self.error: BaseException | None = None

    def run(self, judge: Judge, query: str, caller: Caller, hits: list[Hit], progress: Progress,
            deadline: float) -> None:
        try:
            judge.score(query, caller, hits, progress, deadline)
        except BaseException as exc:  # reported by the funnel's thread, which is still waiting
            self.error = exc
        finally:
            with self.funnel._lock:
                self.done.set()
                self.funnel._abandoned[self.name].discard(self)
                self.funnel._live -= 1
                self.funnel._idle.notify_all()

    def abandon(self) -> bool:
        """Called at the deadline: True (and the call kept as abandoned) if it is still running."""
        with self.funnel._lock:
            if self.done.is_set():
                return False
            self.funnel._abandoned[self.name].add(self)
            return True

"""Runs legs in parallel, each within its own time budget (SPEC B7, B9).

Python cannot stop a running thread, so a leg that hangs keeps its worker until it returns.
:class:`LegRunner` keeps a hung leg from taking the others down with it:

- each leg runs in **its own pool** of workers, so however many of one leg's calls hang or
  queue, the other legs' calls never wait behind them;
- a call still queued at its deadline is cancelled (it never runs), so a hung leg's queue does
  not grow;
- once a leg has ``max_overdue`` calls still running past their deadline, new calls to it are
  refused at once (reported ``timeout``, "not started") instead of waiting out a budget.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from electa.errors import new_incident
from electa.legs.protocol import Leg
from electa.stores.protocol import AllowedSet
from electa.types import Caller, LegHit, LegResult, LegStatus

# The depth a leg runs at when the settings name none for it.
DEFAULT_DEPTH = 50

log = logging.getLogger(__name__)
MAX_OVERDUE = 4
WORKERS_PER_LEG = 8


def _timed(leg: Leg, query: str, caller: Caller, allowed: AllowedSet, depth: int) -> tuple[list[tuple[int, float]], float]:
    start = time.perf_counter()
    hits = leg.search(query, caller, allowed, depth)
    return hits, (time.perf_counter() - start) * 1000.0


class _DaemonPool:
    """A fixed number of daemon worker threads behind a queue. ``concurrent.futures``' pool
    joins its workers when the interpreter exits, so one leg hung for good would keep
    ``electa search`` or a stopping server from ever exiting; daemon workers do not."""

    def __init__(self, workers: int, name: str) -> None:
        self._queue: queue.SimpleQueue[tuple[Future[Any], Callable[..., Any], tuple[Any, ...]] | None] = queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True) for i in range(workers)]
        for thread in self._threads:
            thread.start()

    def _work(self) -> None:
        while (item := self._queue.get()) is not None:
            future, fn, args = item
            if not future.set_running_or_notify_cancel():
                continue  # cancelled while queued: it never runs
            try:
                future.set_result(fn(*args))
            except BaseException as exc:
                future.set_exception(exc)

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        self._queue.put((future, fn, args))
        return future

    def close(self) -> None:
        for _ in self._threads:
            self._queue.put(None)


class LegRunner:
    """``LegRunner().run(legs, query, caller, allowed, depths, budgets_ms)``."""

    def __init__(self, max_overdue: int = MAX_OVERDUE, workers_per_leg: int = WORKERS_PER_LEG) -> None:
        self.max_overdue = min(max_overdue, workers_per_leg)
        self.workers_per_leg = workers_per_leg
        self._pools: dict[str, _DaemonPool] = {}
        self._overdue: dict[str, int] = {}
        self._lock = threading.Lock()
        self._closed = False

    def _pool(self, leg: str) -> _DaemonPool:
        with self._lock:
            if self._closed:
                raise RuntimeError("the leg runner is closed (the engine was closed)")
            pool = self._pools.get(leg)
            if pool is None:
                pool = self._pools[leg] = _DaemonPool(self.workers_per_leg, f"electa-{leg}")
            return pool

    def overdue(self, leg: str) -> int:
        """Calls of ``leg`` still running past their deadline."""
        with self._lock:
            return self._overdue.get(leg, 0)

    def _mark_overdue(self, leg: str, future: Future[tuple[list[tuple[int, float]], float]]) -> None:
        with self._lock:
            self._overdue[leg] = self._overdue.get(leg, 0) + 1

        def finished(_: object) -> None:
            with self._lock:
                self._overdue[leg] -= 1

        future.add_done_callback(finished)

    def run(self, legs: Sequence[Leg], query: str, caller: Caller, allowed: AllowedSet,
            depths: Mapping[str, int], budgets_ms: Mapping[str, float]) -> list[LegResult]:
        """Start every leg at once; collect each by its own deadline.

        A leg that raises is reported ``error``; one still running at its deadline is reported
        ``timeout`` and its late answer is ignored; one with ``max_overdue`` calls still hung is
        not started. The others carry the query.
        """
        started = time.perf_counter()
        by_name = {leg.name: leg for leg in legs}
        futures: dict[str, Future[tuple[list[tuple[int, float]], float]]] = {}
        results: list[LegResult] = []
        for leg in legs:
            if not leg.available():
                results.append(LegResult(leg.name, LegStatus.UNAVAILABLE, detail=leg.why))
                continue
            hung = self.overdue(leg.name)
            if hung >= self.max_overdue:
                results.append(LegResult(leg.name, LegStatus.TIMEOUT,
                                         detail=f"not started: {hung} earlier calls are still running past their budget"))
                continue
            depth = depths.get(leg.name, DEFAULT_DEPTH)
            futures[leg.name] = self._pool(leg.name).submit(_timed, leg, query, caller, allowed, depth)
        for name, future in futures.items():
            budget_s = budgets_ms.get(name, 2000.0) / 1000.0
            remaining = max(0.0, budget_s - (time.perf_counter() - started))
            try:
                hits, elapsed = future.result(timeout=remaining)
            except FutureTimeout:
                if not future.cancel():  # already running: it holds its worker until it returns
                    self._mark_overdue(name, future)
                results.append(LegResult(name, LegStatus.TIMEOUT, elapsed_ms=budget_s * 1000.0,
                                         detail=f"over its {budget_s * 1000:.0f} ms budget"))
                continue
            except Exception:
                # The exception's text may hold paths or data: it goes to the log, the caller gets an id.
                incident = new_incident()
                log.warning("leg %s failed (incident %s)", name, incident, exc_info=True)
                results.append(LegResult(name, LegStatus.ERROR, elapsed_ms=(time.perf_counter() - started) * 1000.0,
                                         detail=f"failed; incident {incident} in the server log"))
                continue
            notes = getattr(hits, "notes", None) or {}  # (a leg's word on each hit: the graph's summaries)
            ranked = tuple(LegHit(unit, rank, score, notes.get(unit, "")) for rank, (unit, score) in enumerate(hits, 1))
            # A leg that runs may still say something (the learned-sparse leg: units without weights).
            results.append(LegResult(name, LegStatus.OK, ranked, elapsed, detail=by_name[name].why))
        order = {leg.name: i for i, leg in enumerate(legs)}
        return sorted(results, key=lambda r: order[r.leg])

    def close(self) -> None:
        with self._lock:
            self._closed = True
            pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            pool.close()

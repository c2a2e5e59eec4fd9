"""Runs legs in parallel, each within its own time budget (SPEC B7, B9).

Python cannot stop a running thread, so a leg that hangs keeps its worker until it returns.
:class:`LegRunner` makes sure a hung leg cannot take the others down with it: each leg may
have at most ``max_overdue`` calls still running past their deadline; while it has that many,
new calls to it are refused at once (reported ``timeout``, "still running") instead of queueing
behind the hung ones, and the pool is sized so that the healthy legs always find a worker.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

from electa.legs.protocol import Leg
from electa.stores.protocol import AllowedSet
from electa.types import Caller, LegHit, LegResult, LegStatus

MAX_OVERDUE = 4
HEALTHY_WORKERS = 16


def _timed(leg: Leg, query: str, caller: Caller, allowed: AllowedSet, depth: int) -> tuple[list[tuple[int, float]], float]:
    start = time.perf_counter()
    hits = leg.search(query, caller, allowed, depth)
    return hits, (time.perf_counter() - start) * 1000.0


class LegRunner:
    """``LegRunner(legs=3).run(legs, query, caller, allowed, depths, budgets_ms)``."""

    def __init__(self, legs: int = 3, max_overdue: int = MAX_OVERDUE, healthy_workers: int = HEALTHY_WORKERS) -> None:
        self.max_overdue = max_overdue
        self._pool = ThreadPoolExecutor(max_workers=healthy_workers + legs * max_overdue,
                                        thread_name_prefix="electa-leg")
        self._overdue: dict[str, int] = {}
        self._lock = threading.Lock()

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
            futures[leg.name] = self._pool.submit(_timed, leg, query, caller, allowed, depths.get(leg.name, 50))
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
            except Exception as exc:
                results.append(LegResult(name, LegStatus.ERROR, elapsed_ms=(time.perf_counter() - started) * 1000.0,
                                         detail=f"{type(exc).__name__}: {exc}"))
                continue
            ranked = tuple(LegHit(unit, rank, score) for rank, (unit, score) in enumerate(hits, 1))
            results.append(LegResult(name, LegStatus.OK, ranked, elapsed))
        order = {leg.name: i for i, leg in enumerate(legs)}
        return sorted(results, key=lambda r: order[r.leg])

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

"""Runs legs in parallel, each within its own time budget (SPEC B7, B9)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

from electa.legs.protocol import Leg
from electa.stores.protocol import AllowedSet
from electa.types import Caller, LegHit, LegResult, LegStatus


def _timed(leg: Leg, query: str, caller: Caller, allowed: AllowedSet, depth: int) -> tuple[list[tuple[int, float]], float]:
    start = time.perf_counter()
    hits = leg.search(query, caller, allowed, depth)
    return hits, (time.perf_counter() - start) * 1000.0


def run_legs(pool: ThreadPoolExecutor, legs: Sequence[Leg], query: str, caller: Caller,
             allowed: AllowedSet, depths: Mapping[str, int], budgets_ms: Mapping[str, float]) -> list[LegResult]:
    """Start every leg at once; collect each by its own deadline.

    A leg that raises is reported ``error``; one still running at its deadline is reported
    ``timeout`` and its late answer is ignored. The others carry the query.
    """
    started = time.perf_counter()
    futures: dict[str, Future[tuple[list[tuple[int, float]], float]]] = {}
    results: list[LegResult] = []
    for leg in legs:
        if not leg.available():
            results.append(LegResult(leg.name, LegStatus.UNAVAILABLE, detail=leg.why))
            continue
        futures[leg.name] = pool.submit(_timed, leg, query, caller, allowed, depths.get(leg.name, 50))
    for name, future in futures.items():
        budget_s = budgets_ms.get(name, 2000.0) / 1000.0
        remaining = max(0.0, budget_s - (time.perf_counter() - started))
        try:
            hits, elapsed = future.result(timeout=remaining)
        except FutureTimeout:
            future.cancel()
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

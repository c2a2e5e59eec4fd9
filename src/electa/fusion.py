"""Weighted Reciprocal Rank Fusion with provenance (SPEC C1, C2). Pure functions.

RRF (Cormack, Clarke & Büttcher, SIGIR 2009): a candidate's fused value is the sum over the
lists it appears in of ``w_leg / (k + rank)``, ranks 1-based, ``k = 60`` as in the paper and
reference/support-bot-retrieval.txt; per-leg weights as in reference/three-lane-company-search.txt
(``weight * (1 / (k + rank))``). Raw scores never enter the sum; they ride along as provenance.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from electa.types import LegVote

K = TypeVar("K", bound=Hashable)

RRF_K = 60.0


@dataclass(frozen=True)
class Fused(Generic[K]):
    key: K
    fused: float
    votes: tuple[LegVote, ...]


def rrf_contribution(rank: int, weight: float = 1.0, k: float = RRF_K) -> float:
    """``weight / (k + rank)``.

    >>> round(rrf_contribution(1), 4), round(rrf_contribution(8), 4)
    (0.0164, 0.0147)
    """
    if rank < 1:
        raise ValueError("ranks are 1-based")
    return weight / (k + rank)


def weighted_rrf(
    rankings: Mapping[str, Sequence[tuple[K, float]]],
    weights: Mapping[str, float] | None = None,
    k: float = RRF_K,
) -> list[Fused[K]]:
    """Fuse ranked lists ``{leg: [(key, raw_score), ...best first]}``.

    A leg missing from ``weights`` weighs 1.0; a weight of 0 keeps the leg's votes as
    provenance but adds nothing. Ties are broken by the number of agreeing legs, then by the
    best single rank, then by first appearance (deterministic).

    >>> out = weighted_rrf({"a": [("x", 9.0), ("y", 5.0)], "b": [("y", 0.8)]})
    >>> [(f.key, round(f.fused, 4)) for f in out]
    [('y', 0.0325), ('x', 0.0164)]
    """
    return [Fused(key, fused, tuple(LegVote(*v) for v in votes)) for key, fused, votes in rrf_rows(rankings, weights, k)]


Vote = tuple[str, int, float, float]
"""A :class:`~electa.types.LegVote`'s fields as a plain tuple: (leg, rank, raw score, contribution)."""


def rrf_rows(
    rankings: Mapping[str, Sequence[tuple[K, float]]],
    weights: Mapping[str, float] | None = None,
    k: float = RRF_K,
) -> list[tuple[K, float, list[Vote]]]:
    """:func:`weighted_rrf` as ``(key, fused, votes)`` rows, votes as plain tuples: the search
    path builds objects only for the hits it returns (issue 12 item 8: fusion at native speed).

    >>> rrf_rows({"a": [("x", 9.0)], "b": [("x", 0.5)]}, {"b": 0.0}, k=1)
    [('x', 0.5, [('a', 1, 9.0, 0.5), ('b', 1, 0.5, 0.0)])]
    """
    weights = weights or {}
    # One entry per key: [fused, votes, best rank, first appearance], built in one pass.
    entries: dict[K, list] = {}  # type: ignore[type-arg]
    for leg, ranked in rankings.items():
        w = float(weights.get(leg, 1.0))
        seen: set[K] = set()
        rank = 0
        for key, raw in ranked:
            if key in seen:  # a leg votes once per key: its best rank
                continue
            seen.add(key)
            rank += 1
            contribution = w / (k + rank)
            entry = entries.get(key)
            if entry is None:
                entries[key] = [contribution, [(leg, rank, float(raw), contribution)], rank, len(entries)]
            else:
                entry[0] += contribution
                entry[1].append((leg, rank, float(raw), contribution))
                if rank < entry[2]:
                    entry[2] = rank
    order = sorted(entries.items(), key=lambda kv: (-kv[1][0], -len(kv[1][1]), kv[1][2], kv[1][3]))
    return [(key, entry[0], entry[1]) for key, entry in order]


def fused_values(rankings: Mapping[str, Sequence[K]], weights: Mapping[str, float],
                 k: float = RRF_K) -> dict[K, tuple[float, int, int]]:
    """``key -> (fused value, number of legs, best rank)`` without provenance: for tuning,
    where the same lists are re-fused under hundreds of settings.

    >>> fused_values({"a": ["x"], "b": ["x"]}, {"a": 1.0, "b": 1.0}, k=1)
    {'x': (1.0, 2, 1)}
    """
    out: dict[K, tuple[float, int, int]] = {}
    for leg, keys in rankings.items():
        w = float(weights.get(leg, 1.0))
        for rank, key in enumerate(keys, 1):
            value, legs, best = out.get(key, (0.0, 0, rank))
            out[key] = (value + w / (k + rank), legs + 1, min(best, rank))
    return out


def fused_order(rankings: Mapping[str, Sequence[K]], weights: Mapping[str, float], k: float = RRF_K,
                top: int | None = 10) -> list[K]:
    """The keys :func:`weighted_rrf` ranks first (same ties rule: agreement, then best rank);
    ``top=None``: all of them.

    >>> fused_order({"a": ["x", "y"], "b": ["y"]}, {"a": 1.0, "b": 1.0})
    ['y', 'x']
    """
    values = fused_values(rankings, weights, k)
    return sorted(values, key=lambda key: (-values[key][0], -values[key][1], values[key][2]))[:top]


def lift_scale(weights: Mapping[str, float], rankings: Mapping[str, Sequence[object]], k: float = RRF_K) -> float:
    """The C4 lift's scale: :func:`max_fused` over the legs whose list is not empty (a leg that
    ran and found nothing cannot vote, so it must not shrink the lift). The engine and the
    tuner's simulation of the served order both read it here.

    >>> round(lift_scale({}, {"fulltext": ["a"], "qa": []}) * 61, 6)
    1.0
    """
    return max_fused(weights, [leg for leg, ranked in rankings.items() if ranked], k)


def max_fused(weights: Mapping[str, float], legs: Sequence[str], k: float = RRF_K) -> float:
    """The fused value of a candidate ranked first by every leg in ``legs`` (the legs that found
    something): the scale for normalising."""
    return sum(float(weights.get(leg, 1.0)) for leg in legs) / (k + 1.0)

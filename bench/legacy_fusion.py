"""Fusion, scoring and the title rescue as they stood before issue 12 item 8 (commit aeddaf2),
kept verbatim (as functions of the engine) as the baseline rows of bench/fusion_cost.py, but for
the lift's scale, which follows the engine's fix (legs that found something). Not part of the
product."""
# ruff: noqa
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import replace

from electa.engine import Engine
from electa.served_order import FULLTEXT_LEGS, PAGE_BOOST, SHOWN_AS_PARENT, Order
from electa.title_rescue import RESCUE_STOP
from electa.fusion import RRF_K, Fused, K, max_fused, rrf_contribution
from electa.scoring import AGREEMENT_K, COVERAGE_BASE, COVERAGE_CAP, COVERAGE_SPAN, LIFT, absolute_score, order_value
from electa.stores.protocol import StoredUnit
from electa.text import STOPWORDS, content_stems, tokens
from electa.types import Caller, Hit, LegResult, LegStatus, LegVote


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
    weights = weights or {}
    fused: dict[K, float] = {}
    votes: dict[K, list[LegVote]] = {}
    first_seen: dict[K, int] = {}
    for leg, ranked in rankings.items():
        w = float(weights.get(leg, 1.0))
        seen: set[K] = set()
        rank = 0
        for key, raw in ranked:
            if key in seen:  # a leg votes once per key: its best rank
                continue
            seen.add(key)
            rank += 1
            contribution = rrf_contribution(rank, w, k)
            fused[key] = fused.get(key, 0.0) + contribution
            votes.setdefault(key, []).append(LegVote(leg, rank, float(raw), contribution))
            first_seen.setdefault(key, len(first_seen))
    order = sorted(
        fused,
        key=lambda key: (-fused[key], -len(votes[key]), min(v.rank for v in votes[key]), first_seen[key]),
    )
    return [Fused(key, fused[key], tuple(votes[key])) for key in order]


def coverage(question_stems: Iterable[str], passage_stems: Set[str]) -> float:
    """Lexical coverage of the question by the passage.

    >>> coverage(["export", "csv", "error", "e1042"], {"csv", "file"})
    0.4
    >>> coverage([], {"x"})
    0.25
    """
    q = list(dict.fromkeys(question_stems))
    if not q:
        return COVERAGE_BASE
    share = sum(1 for s in q if s in passage_stems) / len(q)
    return round(min(COVERAGE_CAP, COVERAGE_BASE + COVERAGE_SPAN * share), 10)


def shares_stem(question_stems: Iterable[str], passage_stems: Set[str]) -> bool:
    return any(s in passage_stems for s in question_stems)




def _qa_minimum(votes: Sequence[LegVote]) -> bool:
    """Whether a Q&A pair earns the 0.85 minimum (SPEC C3).

    The support-bot reference gives it to every pair its Q&A leg matches and names the cost: a
    pair sharing one loose word pushes better passages out. Electa asks for a second opinion:
    the Q&A leg ranks the pair first, or the dense leg ranks it among its top three."""
    qa = next((v for v in votes if v.leg == "qa"), None)
    return qa is not None and (qa.rank == 1 or any(v.leg == "dense" and v.rank <= 3 for v in votes))


def _fuse_and_score(self: Engine, text: str, results: Sequence[LegResult], weights: Mapping[str, float],
                    k: float, floor: float, order: Order, page_url: str | None, lift: float = LIFT) -> list[Hit]:
    ok = [r for r in results if r.status is LegStatus.OK]
    units = self.store.units(sorted({h.unit_id for r in ok for h in r.hits}))
    parents = self.store.units(sorted({u.parent_id for u in units.values()
                                       if u.kind in SHOWN_AS_PARENT and u.parent_id is not None}))
    # C6: parent, child, title and whole-document units of one document vote as that document.
    rankings: dict[str, list[tuple[int, float]]] = {}
    unit_of: dict[tuple[str, int], StoredUnit] = {}
    for r in ok:
        ranked: list[tuple[int, float]] = []
        for h in r.hits:
            unit = units.get(h.unit_id)
            if unit is None:  # deleted between the leg's match and now
                continue
            unit_of.setdefault((r.leg, unit.document_id), unit)
            ranked.append((unit.document_id, h.score))
        rankings[r.leg] = ranked
    fused = weighted_rrf(rankings, weights, k)
    # The one change since aeddaf2, so the bench still compares like with like: the lift's scale
    # counts the legs that found something (an empty Q&A leg no longer shrinks it).
    scale = max_fused(weights, [leg for leg, ranked in rankings.items() if ranked], k)
    q_stems = content_stems(text)
    hits: list[tuple[float, Hit]] = []
    for f in fused:
        best_vote = max(f.votes, key=lambda v: (v.contribution, -v.rank))
        unit = unit_of[(best_vote.leg, f.key)]
        shown = parents.get(unit.parent_id or -1, unit) if unit.kind in SHOWN_AS_PARENT else unit
        passage_stems = self._passage_stems(shown)
        voters = {v.leg for v in f.votes}
        if voters <= FULLTEXT_LEGS and not shares_stem(q_stems, passage_stems):
            continue
        cosine = next((v.raw_score for v in f.votes if v.leg == "dense"), None)
        score = absolute_score(coverage(q_stems, passage_stems), cosine, qa_hit=_qa_minimum(f.votes))
        if order is Order.SCORED:
            key = order_value(score, f.fused, scale, lift)
        elif order is Order.ABSOLUTE:
            key = score
        else:
            key = f.fused
        url, also = shown.url, shown.also_urls
        if page_url and page_url in also:  # A3: the copy on the visitor's page wins
            url, also = page_url, tuple(u for u in (shown.url, *also) if u != page_url)
        if page_url and url == page_url and order is not Order.FUSED:
            key += PAGE_BOOST  # D4: the page the visitor is reading (order only, never the floor)
        hits.append((key, Hit(shown.id, shown.document_id, shown.source_id, shown.kind, shown.title,
                              shown.text, url, shown.ext_id, f.fused, score, score >= floor,
                              f.votes, also, key)))
    hits.sort(key=lambda pair: -pair[0])
    return [h for _, h in hits]


def _title_rescue(self: Engine, text: str, hits: list[Hit], caller: Caller) -> list[Hit]:
    """SPEC B6 (chat-widget reference, card #741): keep at most two hits the floor rejected
    whose title names a distinctive word of the question: four letters or more, not a common
    question, shop or setting word, a whole title word (singular or plural, never a prefix),
    and in at most two of the titles this caller can see. Rarest word first; only hits the
    search already returned."""
    failing = [h for h in hits if not h.passes]
    if not failing:
        return hits
    words = [w for w in dict.fromkeys(tokens(text)) if len(w) >= 4 and w.isalpha()
             and w not in STOPWORDS and w not in RESCUE_STOP]
    counted = []
    for word in words:
        base = word[:-1] if len(word) > 4 and word.endswith("s") and not word.endswith("ss") else word
        pattern = re.compile(rf"\b{re.escape(base)}(?:s|es)?\b", re.IGNORECASE)
        titles = self.store.title_matches(word, caller, 50)
        docs = {u.document_id for u in self.store.units(titles).values() if pattern.search(u.title)}
        if 0 < len(docs) <= 2:
            counted.append((len(docs), word, pattern))
    rescued: dict[int, str] = {}
    for _, word, pattern in sorted(counted):
        for h in failing:
            if len(rescued) < 2 and h.unit_id not in rescued and pattern.search(h.title.split(" > ")[0]):
                rescued[h.unit_id] = word
    if not rescued:
        return hits
    return [replace(h, passes=True, rescued_by=rescued[h.unit_id]) if h.unit_id in rescued else h for h in hits]



def search(self: Engine, text: str, caller: Caller, depths: Mapping[str, int], top: int) -> tuple[list[Hit], float, float]:
    """Engine.search of commit aeddaf2 for a caller with no agent profile (so no calibration),
    default settings: (hits, fusion stage ms, whole search ms), timed as it timed them."""
    import time

    s = self.settings
    t0 = time.perf_counter()
    results, _ = self.retrieve(text, caller, depths=depths)
    t1 = time.perf_counter()
    hits = _fuse_and_score(self, text, results, dict(s.weights), AGREEMENT_K, s.floor, Order.SCORED, None, LIFT)
    hits = _title_rescue(self, text, hits, caller)
    t2 = time.perf_counter()
    return hits[:top], (t2 - t1) * 1000.0, (t2 - t0) * 1000.0

"""Calibration and abstention, measured (SPEC C5, I1; issue: evaluation that decides).

For each labelled query the engine's scored candidates are kept with each leg's raw score.

- **Calibration**: per leg, an isotonic map raw score -> P(relevant) is fitted on the labelled
  candidates of the training folds; a candidate's calibrated score is the highest of its legs'
  probabilities (the reference's "take the higher of" rule, now on one scale), passed through a
  second isotonic map fitted on those maxima, since a maximum of probabilities over-states.
- **Abstention**: an unanswerable twin of each held-out query is made by removing its relevant
  documents from the candidates (as if they had never been ingested; other documents keep their
  leg ranks, and BM25's IDF would move only slightly). A question is *abstained on* when nothing
  passes the floor; an answerable one *keeps* when a relevant document is among its top 4
  passing candidates.
- The floor for the calibrated score is chosen on the training folds: the highest floor that
  keeps at least ``target_keep`` of answerable questions. The fixed rule (absolute score >= 0.4)
  is reported beside it, on the same folds.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from electa.calibration import COMBINED, Calibrator, calibrated_score, fit_isotonic, reliability

Candidate = tuple[str, float, dict[str, float]]  # (doc id, absolute score, {leg: raw score})


@dataclass
class FloorReport:
    rule: str
    floor: float
    abstain_unanswerable: float
    keep_answerable: float
    precision: float
    recall: float


@dataclass
class AbstentionReport:
    folds: int
    queries: int
    target_keep: float
    rows: list[FloorReport] = field(default_factory=list)
    reliability: dict[str, list[tuple[float, float, int]]] = field(default_factory=dict)


def fit_leg_calibrators(tables: Mapping[str, Sequence[Candidate]], qrels: Mapping[str, Mapping[str, int]],
                        qids: Sequence[str]) -> dict[str, Calibrator]:
    per_leg: dict[str, tuple[list[float], list[int]]] = {}
    for q in qids:
        for doc, _, votes in tables[q]:
            label = 1 if qrels[q].get(doc, 0) > 0 else 0
            for leg, raw in votes.items():
                xs, ys = per_leg.setdefault(leg, ([], []))
                xs.append(raw)
                ys.append(label)
    cal = {leg: fit_isotonic(xs, ys) for leg, (xs, ys) in per_leg.items() if xs}
    best, labels = [], []
    for q in qids:
        for doc, _, votes in tables[q]:
            best.append(calibrated_score(cal, votes))
            labels.append(1 if qrels[q].get(doc, 0) > 0 else 0)
    if best:
        cal[COMBINED] = fit_isotonic(best, labels)
    return cal


def measure(tables: Mapping[str, Sequence[Candidate]], qrels: Mapping[str, Mapping[str, int]], qids: Sequence[str],
            score: Callable[[Candidate], float], floor: float, top: int = 4) -> tuple[float, float, float, float]:
    """(abstain share on unanswerable twins, keep share on answerable, precision, recall) at ``floor``."""
    abstain = keep = passed = passed_rel = total_rel = 0
    for q in qids:
        rel = {d for d, g in qrels[q].items() if g > 0}
        ranked = sorted(tables[q], key=lambda c: -score(c))
        passing = [c for c in ranked if score(c) >= floor]
        keep += any(c[0] in rel for c in passing[:top])
        abstain += not any(c[0] not in rel for c in passing)
        passed += len(passing)
        passed_rel += sum(c[0] in rel for c in passing)
        total_rel += sum(c[0] in rel for c in ranked)
    n = max(len(qids), 1)
    return abstain / n, keep / n, passed_rel / max(passed, 1), passed_rel / max(total_rel, 1)


def choose_floor(tables: Mapping[str, Sequence[Candidate]], qrels: Mapping[str, Mapping[str, int]],
                 qids: Sequence[str], score: Callable[[Candidate], float], target_keep: float) -> float:
    best = 0.0
    for i in range(1, 100):
        floor = i / 100
        _, keep, _, _ = measure(tables, qrels, qids, score, floor)
        if keep >= target_keep:
            best = floor
    return best


def cross_validate(tables: Mapping[str, Sequence[Candidate]], qrels: Mapping[str, Mapping[str, int]],
                   fixed_floor: float = 0.4, folds: int = 5, target_keep: float = 0.9,
                   seed: int = 13) -> AbstentionReport:
    qids = sorted(q for q in tables if any(g > 0 for g in qrels.get(q, {}).values()))
    shuffled = qids[:]
    random.Random(seed).shuffle(shuffled)
    parts = [shuffled[i::folds] for i in range(folds)]
    sums: dict[str, list[float]] = {"fixed": [0.0] * 5, "calibrated": [0.0] * 5}
    probs: list[float] = []
    labels: list[int] = []
    for i, test in enumerate(parts):
        train = [q for j, p in enumerate(parts) if j != i for q in p]
        cal = fit_leg_calibrators(tables, qrels, train)
        by_cal: Callable[[Candidate], float] = lambda c, cal=cal: calibrated_score(cal, c[2])  # type: ignore[misc]
        by_abs: Callable[[Candidate], float] = lambda c: c[1]
        cal_floor = choose_floor(tables, qrels, train, by_cal, target_keep)
        for name, fn, floor in (("fixed", by_abs, fixed_floor), ("calibrated", by_cal, cal_floor)):
            values = measure(tables, qrels, test, fn, floor)
            acc = sums[name]
            acc[0] += floor * len(test)
            for j, v in enumerate(values, 1):
                acc[j] += v * len(test)
        for q in test:
            for c in tables[q]:
                probs.append(by_cal(c))
                labels.append(1 if qrels[q].get(c[0], 0) > 0 else 0)
    report = AbstentionReport(folds, len(qids), target_keep)
    for name, rule in (("fixed", f"absolute score >= {fixed_floor} (reference rule)"),
                       ("calibrated", f"calibrated P(relevant), floor chosen for >= {target_keep:.0%} kept")):
        a = [v / max(len(qids), 1) for v in sums[name]]
        report.rows.append(FloorReport(rule, round(a[0], 3), round(a[1], 4), round(a[2], 4), round(a[3], 4),
                                       round(a[4], 4)))
    report.reliability["calibrated"] = reliability(probs, labels)
    return report

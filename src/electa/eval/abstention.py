"""Calibration and abstention, measured (SPEC C5, I1; issue: evaluation that decides).

For each labelled query the engine's scored candidates are kept with each leg's raw score.

- **Calibration**: per leg, an isotonic map raw score -> P(relevant) is fitted on the labelled
  candidates of the training folds; then a stacked logistic regression over the legs'
  probabilities gives one P(relevant) per candidate. It is fitted on the decisions that matter:
  the first ``STACK_HEAD`` candidates of each question, and of its unanswerable twin (the
  hardest non-relevant ones), not on the easy tail of a 100-deep list. On StackFAQ dev (5-fold
  CV, floor for 90% kept, read as served) this abstains on about 80% of unanswerable questions
  at 91% kept (the README has the figures); when it was first measured (read by score, before the margin) it was ~85% at
  89.7%, where the reference's "take the higher of" rule (the maximum, re-mapped by isotonic)
  abstained on 62%: the maximum lets a near-duplicate thread pass on a strong lexical match alone.
- **Abstention**: an unanswerable twin of each held-out query is made by removing its relevant
  documents from the candidates (as if they had never been ingested; other documents keep their
  leg ranks and their order, and BM25's IDF would move only slightly; since RANK_RULES 10 the
  engine would also read the twin's meaning gap from a lower best cosine, which can reorder it
  a little: not re-read here). Both are read as the ask
  pipeline reads a search: the candidates in the served order (each table's order, which
  :func:`electa.eval.runner` takes from ``Engine.rank``), the first
  :data:`electa.answer.passages.ANSWER_WINDOW` of them shown. A question is *abstained on* when none of
  its twin's shown candidates passes the floor; an answerable one *keeps* when a relevant
  document is among the first 4 shown candidates that pass, the passages its answer reads.
  (Up to commit 8521c16 the candidates were sorted by the floor's own score and all were read:
  a relevant one the served order puts after four passing others, or after the window, counted
  as kept though no answer read it. Without judges the served order is the C4 order. A cut a
  judge's search meets, the reranker's, is read as a judged search shows hits: every candidate,
  passing ones first, sorted by the calibrated score, ``judged`` in :func:`shown`.)
- The floor for the calibrated score is chosen on the training folds: the highest floor that
  keeps at least ``target_keep`` of answerable questions, on cross-fitted scores
  (``choose_floor``). The fixed rule (absolute score >= 0.4) is reported beside it, on the
  same folds.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from electa.answer.passages import ANSWER_WINDOW
from electa.calibration import COMBINED, Calibrator, calibrated_score, fit_isotonic, fit_stacked, reliability
from electa.errors import ConfigError
from electa.eval.folds import count_groups, deal_folds

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


STACK_HEAD = 10
# How many fewer answerable questions (a share) a reranker's cut may keep than the legs' and still
# be kept (fit_with_signal): half a point, one or two questions of a few hundred (none of 50).
KEEP_SLACK = 0.005


def fit_leg_calibrators(tables: Mapping[str, Sequence[Candidate]], qrels: Mapping[str, Mapping[str, int]],
                        qids: Sequence[str]) -> dict[str, Calibrator]:
    """Per-leg isotonic calibrators and the stacked combination (key ``COMBINED``)."""
    per_leg: dict[str, tuple[list[float], list[int]]] = {}
    for q in qids:
        for doc, _, votes in tables[q]:
            label = 1 if qrels[q].get(doc, 0) > 0 else 0
            for leg, raw in votes.items():
                xs, ys = per_leg.setdefault(leg, ([], []))
                xs.append(raw)
                ys.append(label)
    cal = {leg: fit_isotonic(xs, ys) for leg, (xs, ys) in per_leg.items() if xs}
    rows: list[dict[str, float]] = []
    labels: list[int] = []
    for q in qids:
        rel = {d for d, g in qrels[q].items() if g > 0}
        head = [*tables[q][:STACK_HEAD], *[c for c in tables[q] if c[0] not in rel][:STACK_HEAD]]
        for doc, _, votes in head:
            rows.append({leg: cal[leg](raw) for leg, raw in votes.items() if leg in cal})
            labels.append(1 if doc in rel else 0)
    if rows:
        cal[COMBINED] = fit_stacked(rows, labels)
    return cal


def shown(rows: Sequence[Candidate], score: Callable[[Candidate], float], judged: bool = False,
          window: int = ANSWER_WINDOW) -> Sequence[Candidate]:
    """The candidates a search shows, in the order it shows them: the first ``window`` in the
    served order (the table's); or, ``judged``, as a search a judge reorders: every candidate
    (a judge builds its depth's hits, 50-100, the table's depth), passing ones first, which a
    reranker's calibrated score orders as it does them (sorted by ``score``, the
    approximation abstention used for every search up to commit 8521c16)."""
    return sorted(rows, key=lambda c: -score(c)) if judged else rows[:window]


def measure(tables: Mapping[str, Sequence[Candidate]], qrels: Mapping[str, Mapping[str, int]], qids: Sequence[str],
            score: Callable[[Candidate], float], floor: float, top: int = 4,
            judged: bool = False) -> tuple[float, float, float, float]:
    """(abstain share on unanswerable twins, keep share on answerable, precision, recall) at
    ``floor``, each question's candidates read as :func:`shown` shows them (the module's
    docstring). Precision and recall count the shown candidates that pass; recall's denominator
    is every relevant candidate in the table, so a relevant one past the window is missed."""
    abstain = keep = passed = passed_rel = total_rel = 0
    for q in qids:
        rel = {d for d, g in qrels[q].items() if g > 0}
        passing = [c for c in shown(tables[q], score, judged) if score(c) >= floor]
        keep += any(c[0] in rel for c in passing[:top])
        twin = shown([c for c in tables[q] if c[0] not in rel], score, judged)
        abstain += not any(score(c) >= floor for c in twin)
        passed += len(passing)
        passed_rel += sum(c[0] in rel for c in passing)
        total_rel += sum(c[0] in rel for c in tables[q])
    n = max(len(qids), 1)
    return abstain / n, keep / n, passed_rel / max(passed, 1), passed_rel / max(total_rel, 1)


# The floors a calibrated cut is chosen among: 0.01 to 0.99.
FLOOR_GRID = np.arange(1, 100) / 100


def keep_grid(tables: Mapping[str, Sequence[Candidate]], qrels: Mapping[str, Mapping[str, int]],
              qids: Sequence[str], score: Callable[[Candidate], float], top: int = 4,
              judged: bool = False) -> np.ndarray:
    """Per question (rows) and floor of :data:`FLOOR_GRID` (columns), whether the question keeps
    a relevant candidate among the first ``top`` that pass of those :func:`shown` shows, as
    :func:`measure` counts. A lower floor can lose a question a higher one keeps
    (more failing-before-passing candidates pass and fill the ``top`` first), so each floor is
    counted, not read off one limit per question."""
    kept = np.zeros((len(qids), len(FLOOR_GRID)), dtype=bool)
    for i, q in enumerate(qids):
        rel = {d for d, g in qrels[q].items() if g > 0}
        rows = shown(tables[q], score, judged)
        if not rows:
            continue
        scores = np.array([score(c) for c in rows], dtype=float)
        relevant = np.array([c[0] in rel for c in rows])
        passing = scores[None, :] >= FLOOR_GRID[:, None]
        position = np.cumsum(passing, axis=1)  # (each passing candidate's place among those passing, from 1)
        kept[i] = (passing & relevant[None, :] & (position <= top)).any(axis=1)
    return kept


def floor_for(kept: np.ndarray, target_keep: float) -> float:
    """The highest floor of :data:`FLOOR_GRID` at which at least ``target_keep`` of the questions
    keep and so do the two floors below it (``kept`` from :func:`keep_grid`; the highest that
    reaches it alone when no three in a row do; 0.0 when none does). The share kept is not
    monotone in the floor as served (it rises while fewer failing pages crowd the first four,
    then falls), and a floor that reaches the target only where its neighbours miss is noise of
    this sample: neither a spike above a miss nor a flicker at the bottom decides."""
    if not len(kept):
        return 0.0
    reaching = kept.mean(axis=0) >= target_keep
    steady = reaching.copy()
    steady[1:] &= reaching[:-1]
    steady[2:] &= reaching[:-2]
    chosen = np.flatnonzero(steady) if steady.any() else np.flatnonzero(reaching)
    return float(FLOOR_GRID[chosen[-1]]) if len(chosen) else 0.0


def choose_floor(tables: Mapping[str, Sequence[Candidate]], qrels: Mapping[str, Mapping[str, int]],
                 qids: Sequence[str], target_keep: float, folds: int = 5, seed: int = 7,
                 margin_se: float = 1.0, groups: Mapping[str, str] | None = None, judged: bool = False) -> float:
    """The calibrated floor for ``target_keep`` on questions it was not chosen on (read as
    :func:`shown` shows them: ``judged`` for a cut a judge's search meets).

    - Scores are *cross-fitted*: each question is scored by calibrators fitted without it (its
      fold left out), so the floor is not set on probabilities the calibrators have memorised.
    - The share kept is asked to reach the target plus ``margin_se`` standard errors of a share
      measured on this many questions (√(t(1−t)/n): +1.7 points on 306 questions, +4.2 on 50),
      since the floor is a quantile of a sample and new questions scatter around it.

    - With ``groups`` (see :func:`deal_folds`) the cross-fitting folds hold whole groups, so no
      question is scored by calibrators fitted on a question of its own thread; with fewer
      groups than ``folds``, one fold per group (at least two). The margin still counts
      questions, not groups, so it understates the spread of a share whose questions move
      together by thread (by thread on StackFAQ's ``dev:test-by-thread``, 5-fold CV, the
      floor still kept about 92% as served, above 90%).

    Chosen on in-sample scores for exactly 90%, the floor kept 89.2% of StackFAQ's held-out
    half (``--split dev:test``, tuned on ``dev:tune``)."""
    labelled = [q for q in qids if any(g > 0 for g in qrels.get(q, {}).values())]
    if labelled:
        target_keep = min(target_keep + margin_se * math.sqrt(target_keep * (1.0 - target_keep) / len(labelled)), 0.999)
    if groups is not None:
        folds = min(folds, count_groups(labelled, groups))
    # Too few questions (or threads) to cross-fit: in-sample scores, as with a tiny golden set.
    parts = (deal_folds(labelled, folds, seed, groups, warn=False) if len(labelled) >= 2 * folds and folds >= 2
             else [labelled])
    kept = [np.zeros((0, len(FLOOR_GRID)), dtype=bool)]
    for i, part in enumerate(parts):
        rest = [q for j, p in enumerate(parts) if j != i for q in p] or part
        cal = fit_leg_calibrators(tables, qrels, rest)
        kept.append(keep_grid(tables, qrels, part, lambda c, cal=cal: calibrated_score(cal, c[2]),  # type: ignore[misc]
                              judged=judged))
    return floor_for(np.concatenate(kept), target_keep)


def cross_validate(tables: Mapping[str, Sequence[Candidate]], qrels: Mapping[str, Mapping[str, int]],
                   fixed_floor: float = 0.4, folds: int = 5, target_keep: float = 0.9,
                   seed: int = 13, groups: Mapping[str, str] | None = None, judged: bool = False) -> AbstentionReport:
    """Calibrators and floor fitted on all folds but one and measured on it, in turn, each
    question read as :func:`shown` shows it (``judged``: as a judge's search). With
    ``groups`` (question -> group, e.g. :func:`electa.eval.beir.thread_groups`) a group's
    questions share a fold (dealt by :func:`deal_folds`), so none is measured beside a question
    of its group it was fitted on, and the floor inside each fold is cross-fitted by group too;
    with fewer groups than ``folds``, one fold a group (the report says how many), and fewer
    than two is refused (:class:`ConfigError`): nothing would be measured on a new group."""
    qids = sorted(q for q in tables if any(g > 0 for g in qrels.get(q, {}).values()))
    if groups is not None:
        folds = min(folds, max(count_groups(qids, groups), 1))
        if folds < 2:
            raise ConfigError(f"the {len(qids)} labelled questions are one thread: abstention cannot be measured on"
                              " a thread the calibrators never saw; label questions of more threads")
    parts = deal_folds(qids, folds, seed, groups)
    sums: dict[str, list[float]] = {"fixed": [0.0] * 5, "calibrated": [0.0] * 5}
    probs: list[float] = []
    labels: list[int] = []
    for i, test in enumerate(parts):
        train = [q for j, p in enumerate(parts) if j != i for q in p]
        cal = fit_leg_calibrators(tables, qrels, train)
        by_cal: Callable[[Candidate], float] = lambda c, cal=cal: calibrated_score(cal, c[2])  # type: ignore[misc]
        by_abs: Callable[[Candidate], float] = lambda c: c[1]
        cal_floor = choose_floor(tables, qrels, train, target_keep, groups=groups, judged=judged)
        for name, fn, floor in (("fixed", by_abs, fixed_floor), ("calibrated", by_cal, cal_floor)):
            values = measure(tables, qrels, test, fn, floor, judged=judged)
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


def _on_every_question(tables: Mapping[str, Sequence[Candidate]], qrels: Mapping[str, Mapping[str, int]],
                       score: Callable[[Candidate], float], floor: float, rule: str, judged: bool = False) -> FloorReport:
    """A rule fitted on none of these questions, measured on every labelled one."""
    qids = sorted(q for q in tables if any(g > 0 for g in qrels.get(q, {}).values()))
    values = measure(tables, qrels, qids, score, floor, judged=judged)
    return FloorReport(rule, round(floor, 3), *(round(v, 4) for v in values))


def unfitted(tables: Mapping[str, Sequence[Candidate]], qrels: Mapping[str, Mapping[str, int]],
             fixed_floor: float = 0.4, target_keep: float = 0.9) -> AbstentionReport:
    """The rows that need no fitting on these questions, for a set that cannot be cross-validated
    (one thread): the fixed floor on the absolute score, measured on every judged question.
    ``folds`` is 0 and there is no reliability curve; a tune file's row is added by the caller
    (:func:`at_given_floor`)."""
    row = _on_every_question(tables, qrels, lambda c: c[1], fixed_floor,
                             f"absolute score >= {fixed_floor} (reference rule)")
    return AbstentionReport(0, sum(any(g > 0 for g in qrels.get(q, {}).values()) for q in tables), target_keep, [row])


def at_given_floor(tables: Mapping[str, Sequence[Candidate]], qrels: Mapping[str, Mapping[str, int]],
                   calibrators: Mapping[str, Calibrator], floor: float, rule: str, judged: bool = False) -> FloorReport:
    """Calibrators and floor fitted elsewhere (``electa tune`` on other queries), measured on
    every labelled query here (read as :func:`shown` shows them): no fitting on these queries."""
    return _on_every_question(tables, qrels, lambda c: calibrated_score(calibrators, c[2]), floor, rule, judged)


def with_signal(tables: Mapping[str, Sequence[Candidate]], signal: str,
                scores: Mapping[str, Sequence[float]]) -> dict[str, list[Candidate]]:
    """``tables`` with ``scores[q][i]`` added to question ``q``'s ``i``-th candidate as the raw
    score of ``signal`` (candidates past the scores given have none, as below a reranker's depth)."""
    return {q: [(d, s, {**votes, signal: scores[q][i]} if i < len(scores.get(q, ())) else dict(votes))
                for i, (d, s, votes) in enumerate(rows)] for q, rows in tables.items()}


def fit_with_signal(tables: Mapping[str, Sequence[Candidate]], qrels: Mapping[str, Mapping[str, int]],
                    qids: Sequence[str], signal: str, target_keep: float = 0.9,
                    groups: Mapping[str, str] | None = None,
                    ) -> tuple[tuple[dict[str, Calibrator], float] | None, dict[str, object]]:
    """Calibrators and floor over the legs and ``signal`` (a reranker's score, already in
    ``tables``), fitted on ``qids``, when they abstain better than the legs alone on 5-fold
    cross-validation over ``qids`` (fewer folds by thread when there are fewer threads), else
    None; and the cross-validated figures of both.

    Better means: more unanswerable twins pass nothing, while no fewer answerable questions
    keep a relevant hit than with the legs' cut (less :data:`KEEP_SLACK`, one fold's noise), and
    the stacked calibrator weighs ``signal`` positively (a higher score never makes a hit less
    likely to pass). A signal that abstains more only by keeping fewer answers is not kept.
    With ``groups`` (:func:`electa.eval.folds.groups_for`) the folds hold whole threads. Both
    are read as a judged search shows hits (:func:`shown`, ``judged``): the reranker runs
    wherever this cut is used, and puts passing hits first among its depth's."""
    chosen = {q: tables[q] for q in qids}
    without = {q: [(d, s, {k: v for k, v in votes.items() if k != signal}) for d, s, votes in rows]
               for q, rows in chosen.items()}
    rows = {}
    folds = 5
    for name, part in (("legs", without), (f"legs + {signal}", chosen)):
        try:
            report = cross_validate(part, qrels, target_keep=target_keep, groups=groups, judged=True)
        except ConfigError as exc:  # (too few threads to hold one out: the legs' cut stays)
            return None, {"questions": len(qids), "skipped": str(exc)}
        rows[name], folds = next(r for r in report.rows if r.rule.startswith("calibrated")), report.folds
    legs, both = rows["legs"], rows[f"legs + {signal}"]
    figures: dict[str, object] = {"questions": len(qids), "folds": folds, "target_keep": target_keep, **{
        f"{name}: {field}": getattr(row, field) for name, row in rows.items()
        for field in ("abstain_unanswerable", "keep_answerable")}}
    if both.abstain_unanswerable <= legs.abstain_unanswerable or both.keep_answerable < legs.keep_answerable - KEEP_SLACK:
        return None, figures
    calibrators = fit_leg_calibrators(chosen, qrels, qids)
    stacked = calibrators.get("*")
    if stacked is not None and stacked.kind == "stacked" and dict(stacked.weights).get(signal, 0.0) <= 0.0:
        figures["skipped"] = f"the fitted calibrator does not weigh {signal} positively"
        return None, figures
    return (calibrators, choose_floor(chosen, qrels, qids, target_keep, groups=groups, judged=True)), figures

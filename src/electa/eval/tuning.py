"""``electa tune``: fusion weights, k and per-leg depth learned from labels, with cross-validation.

The legs run once per query at the deepest depth tried; every candidate setting is then a pure
re-fusion of those lists (weighted RRF at document level, truncated to the candidate's depths),
so a grid of hundreds of settings costs seconds. Each leg is cut as a search cuts it, at its
units (:class:`ByDepth`): a document with several units among a leg's first 10 leaves room for
fewer than 10 documents. Queries are split into folds: each fold's
setting is chosen on the other folds and scored on it, so the reported gain is on queries the
choice never saw. The final setting is chosen on all the tuning queries.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Generic, TypeVar

from electa.calibration import Calibrator
from electa.errors import ConfigError
from electa.eval.folds import deal_folds
from electa.eval.metrics import ndcg_at
from electa.fusion import RRF_K, fused_order, fused_values, lift_scale
from electa.scoring import AGREEMENT_K, GAP_MARGIN, GAP_WEIGHT, LIFT, MATCHED_RANK, gap_terms

LegLists = dict[str, list[tuple[str, float]]]  # leg -> ranked (doc id, raw score)

WEIGHT_GRID = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0)
K_GRID = (5.0, 10.0, 20.0, 40.0, 60.0, 100.0)
DEPTH_GRID = (10, 25, 50, 100)


def k_grid(lift: float | None) -> tuple[float, ...]:
    """:data:`K_GRID` with the k served for that order first (:data:`electa.scoring.AGREEMENT_K`
    for the C4 order, the plain fusion's :data:`electa.fusion.RRF_K` for ``lift=None``), so a tie
    between values of k keeps the one served untuned, as ties between lifts keep the served lift.

    >>> k_grid(0.4)[:2], k_grid(None)[:2]
    ((10.0, 5.0), (60.0, 5.0))
    """
    served = RRF_K if lift is None else AGREEMENT_K
    return (served, *(k for k in K_GRID if k != served))


@dataclass(frozen=True)
class FusionSetting:
    """Weighted RRF settings and the C4 lift: order = absolute score + lift × fused / max_fused
    − the meaning gap (:func:`meaning_gaps`).
    ``lift=None`` orders by the fused value alone (the plain RRF order)."""

    weights: dict[str, float]
    k: float
    depths: dict[str, int]
    lift: float | None = None

    def key(self) -> str:
        w = ",".join(f"{leg}={self.weights[leg]:g}" for leg in sorted(self.weights))
        d = ",".join(f"{leg}={self.depths[leg]}" for leg in sorted(self.depths))
        lift = "rrf order" if self.lift is None else f"lift={self.lift:g}"
        return f"weights[{w}] k={self.k:g} depths[{d}] {lift}"

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


# A candidate's absolute score. It reads the unit standing for the document, which since
# RANK_RULES 6 is the legs' first unit holding most of the question's words (a whole-document
# unit only where no leg found a section), whatever the weights and k (until then the
# best-contributing leg's, and the score was kept per leg).
QueryScores = Mapping[str, float]  # candidate -> its absolute score


def fuse(lists: LegLists, setting: FusionSetting, top: int | None = 100,
         scores: QueryScores | None = None, gaps: Mapping[str, float] | None = None) -> list[str]:
    """Re-fuse one query's leg lists under ``setting``, each list cut at the setting's depth (a
    no-op on lists already cut at their units, :class:`ByDepth`). With ``scores`` (absolute
    scores of the candidates the engine keeps: it drops a candidate found by words alone that
    shares no stem with the question) only those are ordered, and with a lift as the engine
    serves them: score + lift × fused − the meaning gap (``gaps``, :func:`meaning_gaps` of these
    lists at the setting's depths, when the caller has them)."""
    rankings = {leg: [doc for doc, _ in ranked[: setting.depths.get(leg, 100)]] for leg, ranked in lists.items()}
    if scores is None:
        return fused_order(rankings, setting.weights, setting.k, top)
    flat = scores
    if setting.lift is None:
        return [d for d in fused_order(rankings, setting.weights, setting.k, None) if d in flat][:top]
    values = fused_values(rankings, setting.weights, setting.k)
    scale = lift_scale(setting.weights, rankings, setting.k)
    lift = setting.lift or 0.0
    if gaps is None:
        gaps = meaning_gaps(lists, setting.depths)
    # order_value() inlined (it runs for every candidate of every setting of the grid), with ties
    # broken as the engine breaks them: the fused value, agreement, best rank, first appearance.
    if scale > 0:
        rows = [(-(flat[d] + lift * min(1.0, value / scale) - gaps.get(d, 0.0)), -value, -legs, best, i, d)
                for i, (d, (value, legs, best)) in enumerate(values.items()) if d in flat]
    else:
        rows = [(-(flat[d] - gaps.get(d, 0.0)), -value, -legs, best, i, d)
                for i, (d, (value, legs, best)) in enumerate(values.items()) if d in flat]
    rows.sort()
    return [row[5] for row in rows[:top]]


def meaning_gaps(lists: LegLists, depths: Mapping[str, int], weight: float = GAP_WEIGHT,
                 margin: float = GAP_MARGIN) -> dict[str, float]:
    """Each candidate's C4 meaning gap term (:func:`electa.scoring.gap_terms`), read as the engine
    reads it from the dense leg's list at its depth (at another ``weight`` or ``margin``: what a
    bench weighs against the served ones)."""
    cosines = dict(lists.get("dense", [])[: depths.get("dense", 100)])
    matched = {doc for leg in ("qa", "graph") for doc, _ in lists.get(leg, [])[: min(depths.get(leg, 100), MATCHED_RANK)]}
    docs = list({doc: None for ranked in lists.values() for doc, _ in ranked})
    return dict(zip(docs, gap_terms([cosines.get(d) for d in docs], [d in matched for d in docs], weight, margin),
                    strict=True))


Scores = Mapping[str, QueryScores]  # query -> candidate -> absolute score
DepthKey = tuple[tuple[str, int], ...]
T = TypeVar("T")


@dataclass(frozen=True)
class ByDepth(Generic[T]):
    """What a search reads with each leg's *units* cut at each depth, keyed by :func:`depth_key`;
    a setting whose depths are not there reads ``fallback`` (every leg at the tune's full depth).

    Two things are read this way. The leg lists: a leg cut at 10 units serves the documents of
    its first 10 units, fewer than 10 when a document has several units among them, so cutting
    the list of documents at 10 (as :func:`fuse` does) would fuse documents no search at that
    depth sees. And the absolute scores: a candidate's score reads the raw scores of the legs
    that found it (the dense cosine, coverage, a Q&A match), so a setting that cuts dense at 10
    scores a page dense ranked 40th without its cosine, as a search would."""

    by_depths: Mapping[DepthKey, T]
    fallback: T

    def at(self, depths: Mapping[str, int]) -> T:
        return self.by_depths.get(depth_key(depths), self.fallback)


ScoresByDepth = ByDepth[Scores]
ListsByDepth = ByDepth[Mapping[str, LegLists]]  # query -> leg lists, per depth


def depth_key(depths: Mapping[str, int]) -> DepthKey:
    return tuple(sorted(depths.items()))


Labels = Mapping[str, Mapping[str, str]]  # query -> candidate -> the key judged (a URL)


GapCache = dict[tuple[str, "DepthKey"], Mapping[str, float]]  # (query, depths) -> its meaning gaps


def mean_ndcg(per_query: Mapping[str, LegLists] | ListsByDepth, qrels: Mapping[str, Mapping[str, int]],
              setting: FusionSetting, qids: Sequence[str], scores: Scores | ScoresByDepth | None = None,
              labels: Labels | None = None, gap_cache: GapCache | None = None) -> float:
    """Mean nDCG@10 of ``setting`` over ``qids``. With ``labels`` the candidates (documents) are
    judged by their label, each label once at its first place, as an evaluation by URL reads a
    served list where a curated pair and the page it points to are two documents. A question's
    meaning gaps depend on its lists and the setting's depths alone, not on the weights, k or
    lift a grid varies: ``gap_cache`` keeps them across the settings of one tune."""
    if not qids:
        return 0.0
    lists = per_query.at(setting.depths) if isinstance(per_query, ByDepth) else per_query
    at = scores.at(setting.depths) if isinstance(scores, ByDepth) else scores
    depths = depth_key(setting.depths)
    total = 0.0
    for q in qids:
        served = at.get(q) if at else None
        gaps = None
        if served is not None and setting.lift is not None:
            gaps = gap_cache.get((q, depths)) if gap_cache is not None else None
            if gaps is None:
                gaps = meaning_gaps(lists[q], setting.depths)
                if gap_cache is not None:
                    gap_cache[(q, depths)] = gaps
        ranked = fuse(lists[q], setting, 10, served, gaps)
        named = labels.get(q) if labels is not None else None
        if named is not None:
            ranked = [named.get(d, d) for d in ranked]
            if len(set(ranked)) < len(ranked):  # (a label twice in the first ten: read on until ten)
                ranked = list(dict.fromkeys(named.get(d, d) for d in fuse(lists[q], setting, None, served, gaps)))
        total += ndcg_at(ranked, qrels[q], 10)
    return total / len(qids)


def grid(legs: Sequence[str], lifts: Sequence[float | None] = (None,),
         held: Mapping[str, tuple[float, int]] | None = None) -> list[FusionSetting]:
    """Weights relative to the first leg (held at 1.0: RRF order is scale-free), k, one depth,
    and the C4 lift (``None``: plain RRF order). A leg in ``held`` keeps its (weight, depth)."""
    held = held or {}
    out: list[FusionSetting] = []
    tuned = [leg for leg in legs if leg not in held]
    if not tuned:
        return out  # (nothing to tune: the default stands)
    others = tuned[1:]
    for ws in itertools.product(WEIGHT_GRID, repeat=len(others)):
        weights = {tuned[0]: 1.0, **dict(zip(others, ws, strict=True)), **{leg: w for leg, (w, _) in held.items()}}
        for lift in lifts:
            for k in k_grid(lift):
                for depth in DEPTH_GRID:
                    out.append(FusionSetting(weights, k, {**dict.fromkeys(tuned, depth),
                                                          **{leg: d for leg, (_, d) in held.items()}}, lift))
    return out


def best_setting(per_query: Mapping[str, LegLists] | ListsByDepth, qrels: Mapping[str, Mapping[str, int]],
                 candidates: Sequence[FusionSetting], qids: Sequence[str],
                 scores: Scores | ScoresByDepth | None = None, labels: Labels | None = None,
                 gap_cache: GapCache | None = None) -> tuple[FusionSetting, float]:
    scored = [(mean_ndcg(per_query, qrels, c, qids, scores, labels, gap_cache), -i, c) for i, c in enumerate(candidates)]
    value, _, setting = max(scored, key=lambda t: (t[0], t[1]))
    return setting, value


@dataclass(frozen=True)
class TuneResult:
    chosen: FusionSetting
    default: FusionSetting
    cv_default: float
    cv_tuned: float
    folds: int
    queries: int
    fold_choices: tuple[str, ...]
    calibrated_floor: float | None = None  # set when enough questions were labelled to calibrate
    # The best setting on all questions, when held-out folds did not confirm it (``chosen`` is then the default).
    unconfirmed: FusionSetting | None = None
    # The reranker's score in the cut (electa.judges.rerank_cut): cross-validated figures, whether kept or not.
    rerank_cut: dict[str, object] | None = None


# Held-out gains this small are the sums' rounding (folds whose choices score alike), not a gain.
CONFIRM_EPS = 1e-9

# The served lift first: a tie between lifts keeps the one everyone else is served with.
LIFT_GRID: tuple[float | None, ...] = (LIFT, *(x for x in (0.1, 0.3, 1.0) if x != LIFT), None)


def tune(per_query: Mapping[str, LegLists] | ListsByDepth, qrels: Mapping[str, Mapping[str, int]], default: FusionSetting,
         folds: int = 5, seed: int = 13, scores: Scores | ScoresByDepth | None = None,
         groups: Mapping[str, str] | None = None, labels: Labels | None = None,
         held: Sequence[str] = ()) -> TuneResult:
    """Choose a setting on all queries; report fold-held-out nDCG@10 for default and tuned.

    The setting chosen on all queries is kept only when the settings chosen per fold beat the
    default on the folds they did not see; otherwise the default stands (``unconfirmed`` names
    what was best on all of them). On a few dozen questions many settings tie or nearly tie, and
    the best of a grid of hundreds on the very questions it is scored on is its noise: the
    held-out folds say whether tuning pays, as they do for a learned ranker (D2).

    With ``per_query`` a :class:`ListsByDepth`, each setting fuses the documents its depths
    serve (each leg's units cut, then read as documents). With ``scores`` the served order is
    tuned too: the C4 lift is searched beside weights, k and depth (a lift of ``None`` is the
    plain RRF order). With ``groups`` (:func:`electa.eval.folds.groups_for`) each fold holds
    whole threads. ``labels`` judges candidates by label (:func:`mean_ndcg`). A leg in ``held``
    keeps the default's weight and depth in every setting (the Q&A leg of an agent's golden
    set: its pairs are what the questions come from, and its served depth, 8, is below the grid's)."""
    full = per_query.fallback if isinstance(per_query, ByDepth) else per_query
    qids = sorted(q for q in full if any(g > 0 for g in qrels.get(q, {}).values()))
    legs = sorted({leg for lists in full.values() for leg in lists}, key=lambda x: (x != "fulltext", x))
    # The default first: a tie (a few questions every setting answers alike) keeps what an
    # untuned agent is served, never the grid's first corner (a leg weighed 0, depth 10).
    fixed = {leg: (default.weights.get(leg, 1.0), default.depths.get(leg, 100)) for leg in held if leg in legs}
    candidates = [default, *(c for c in grid(legs, LIFT_GRID if scores is not None else (None,), fixed) if c != default)]
    parts = deal_folds(qids, folds, seed, groups)
    held_default = held_tuned = 0.0
    choices = []
    gap_cache: GapCache = {}
    for i, test in enumerate(parts):
        train = [q for j, part in enumerate(parts) if j != i for q in part]
        setting, _ = best_setting(per_query, qrels, candidates, train, scores, labels, gap_cache)
        choices.append(setting.key())
        held_tuned += mean_ndcg(per_query, qrels, setting, test, scores, labels, gap_cache) * len(test)
        held_default += mean_ndcg(per_query, qrels, default, test, scores, labels, gap_cache) * len(test)
    chosen, _ = best_setting(per_query, qrels, candidates, qids, scores, labels, gap_cache)
    cv_default, cv_tuned = held_default / len(qids), held_tuned / len(qids)
    unconfirmed = None
    if chosen != default and cv_tuned <= cv_default + CONFIRM_EPS:
        chosen, unconfirmed = default, chosen
    return TuneResult(chosen, default, cv_default, cv_tuned, folds, len(qids), tuple(choices),
                      unconfirmed=unconfirmed)


def save_setting(path: Path, result: TuneResult, provenance: Mapping[str, object],
                 extra: Mapping[str, object] | None = None) -> None:
    data = {**(extra or {}), "setting": result.chosen.to_dict(), "cv": {"default": result.cv_default, "tuned": result.cv_tuned,
                                                       "folds": result.folds, "queries": result.queries,
                                                       "fold_choices": list(result.fold_choices),
                                                       **({"unconfirmed": result.unconfirmed.to_dict()}
                                                          if result.unconfirmed is not None else {})},
            "default": result.default.to_dict(), "tuned_on": dict(provenance)}
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


def load_setting(path: Path) -> FusionSetting:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))["setting"]
        lift = raw.get("lift")
        return FusionSetting({str(k): float(v) for k, v in raw["weights"].items()}, float(raw["k"]),
                             {str(k): int(v) for k, v in raw["depths"].items()}, None if lift is None else float(lift))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{path} is not a settings file written by `electa tune` ({exc})") from exc


def fitted_on(path: Path) -> dict[str, object]:
    """What a settings file written by ``electa tune`` was tuned on (``dataset``, ``split``…);
    empty when it does not say."""
    try:
        where = json.loads(path.read_text(encoding="utf-8")).get("tuned_on")
    except (OSError, ValueError, AttributeError) as exc:
        raise ConfigError(f"{path} is not a settings file written by `electa tune` ({exc})") from exc
    return dict(where) if isinstance(where, dict) else {}


def load_calibration(path: Path) -> tuple[dict[str, Calibrator], float, dict[str, object]] | None:
    """The calibrators, calibrated floor and provenance in a file written by ``electa tune``
    (None when it was tuned on too few questions to calibrate)."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        if not raw.get("calibration"):
            return None
        calibrators = {str(leg): Calibrator.from_dict(c) for leg, c in raw["calibration"].items()}
        return calibrators, float(raw["calibrated_floor"]), dict(raw.get("tuned_on") or {})
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(f"{path} is not a settings file written by `electa tune` ({exc})") from exc

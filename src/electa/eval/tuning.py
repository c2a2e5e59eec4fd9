"""``electa tune``: fusion weights, k and per-leg depth learned from labels, with cross-validation.

The legs run once per query at the deepest depth tried; every candidate setting is then a pure
re-fusion of those lists (weighted RRF at document level, truncated to the candidate's depths),
so a grid of hundreds of settings costs seconds. Queries are split into folds: each fold's
setting is chosen on the other folds and scored on it, so the reported gain is on queries the
choice never saw. The final setting is chosen on all the tuning queries.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from electa.calibration import Calibrator
from electa.errors import ConfigError
from electa.eval.folds import deal_folds
from electa.eval.metrics import ndcg_at
from electa.fusion import RRF_K, fused_order, fused_values, lift_scale
from electa.scoring import AGREEMENT_K, LIFT, order_value

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
    """Weighted RRF settings and the C4 lift: order = absolute score + lift × fused / max_fused.
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


def fuse(lists: LegLists, setting: FusionSetting, top: int = 100,
         scores: Mapping[str, float] | None = None) -> list[str]:
    """Re-fuse one query's leg lists under ``setting``. With ``scores`` (absolute scores of the
    candidates the engine keeps) and a lift, order as the engine serves: score + lift × fused."""
    rankings = {leg: [doc for doc, _ in ranked[: setting.depths.get(leg, 100)]] for leg, ranked in lists.items()}
    if setting.lift is None or scores is None:
        return fused_order(rankings, setting.weights, setting.k, top)
    values = fused_values(rankings, setting.weights, setting.k)
    scale = lift_scale(setting.weights, rankings, setting.k)
    kept = [d for d in values if d in scores]
    kept.sort(key=lambda d: -order_value(scores[d], values[d][0], scale, setting.lift or 0.0))
    return kept[:top]


Scores = Mapping[str, Mapping[str, float]]  # query -> candidate -> absolute score


@dataclass(frozen=True)
class ScoresByDepth:
    """Absolute scores as each leg depth serves them. A candidate's absolute score reads the raw
    scores of the legs that found it (the dense cosine, coverage, a Q&A match), so a setting that
    cuts dense at 10 scores a page dense ranked 40th without its cosine, as a search would.
    ``by_depths`` is keyed by :func:`depth_key`; a setting whose depths are not there reads
    ``fallback`` (the scores at the tune's full depth)."""

    by_depths: Mapping[tuple[tuple[str, int], ...], Scores]
    fallback: Scores

    def at(self, depths: Mapping[str, int]) -> Scores:
        return self.by_depths.get(depth_key(depths), self.fallback)


def depth_key(depths: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(depths.items()))


def mean_ndcg(per_query: Mapping[str, LegLists], qrels: Mapping[str, Mapping[str, int]],
              setting: FusionSetting, qids: Sequence[str], scores: Scores | ScoresByDepth | None = None) -> float:
    if not qids:
        return 0.0
    at = scores.at(setting.depths) if isinstance(scores, ScoresByDepth) else scores
    return sum(ndcg_at(fuse(per_query[q], setting, 10, at.get(q) if at else None), qrels[q], 10)
               for q in qids) / len(qids)


def grid(legs: Sequence[str], lifts: Sequence[float | None] = (None,)) -> list[FusionSetting]:
    """Weights relative to the first leg (held at 1.0: RRF order is scale-free), k, one depth,
    and the C4 lift (``None``: plain RRF order)."""
    out = []
    others = list(legs[1:])
    for ws in itertools.product(WEIGHT_GRID, repeat=len(others)):
        weights = {legs[0]: 1.0, **dict(zip(others, ws, strict=True))}
        for lift in lifts:
            for k in k_grid(lift):
                for depth in DEPTH_GRID:
                    out.append(FusionSetting(weights, k, dict.fromkeys(legs, depth), lift))
    return out


def best_setting(per_query: Mapping[str, LegLists], qrels: Mapping[str, Mapping[str, int]],
                 candidates: Sequence[FusionSetting], qids: Sequence[str],
                 scores: Scores | ScoresByDepth | None = None) -> tuple[FusionSetting, float]:
    scored = [(mean_ndcg(per_query, qrels, c, qids, scores), -i, c) for i, c in enumerate(candidates)]
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


def tune(per_query: Mapping[str, LegLists], qrels: Mapping[str, Mapping[str, int]], default: FusionSetting,
         folds: int = 5, seed: int = 13, scores: Scores | ScoresByDepth | None = None,
         groups: Mapping[str, str] | None = None) -> TuneResult:
    """Choose a setting on all queries; report fold-held-out nDCG@10 for default and tuned.

    The setting chosen on all queries is kept only when the settings chosen per fold beat the
    default on the folds they did not see; otherwise the default stands (``unconfirmed`` names
    what was best on all of them). On a few dozen questions many settings tie or nearly tie, and
    the best of a grid of hundreds on the very questions it is scored on is its noise: the
    held-out folds say whether tuning pays, as they do for a learned ranker (D2).

    With ``scores`` the served order is tuned too: the C4 lift is searched beside weights, k
    and depth (a lift of ``None`` is the plain RRF order). With ``groups``
    (:func:`electa.eval.folds.groups_for`) each fold holds whole threads."""
    qids = sorted(q for q in per_query if any(g > 0 for g in qrels.get(q, {}).values()))
    legs = sorted({leg for lists in per_query.values() for leg in lists}, key=lambda x: (x != "fulltext", x))
    # The default first: a tie (a few questions every setting answers alike) keeps what an
    # untuned agent is served, never the grid's first corner (a leg weighed 0, depth 10).
    candidates = [default, *(c for c in grid(legs, LIFT_GRID if scores is not None else (None,)) if c != default)]
    parts = deal_folds(qids, folds, seed, groups)
    held_default = held_tuned = 0.0
    choices = []
    for i, test in enumerate(parts):
        train = [q for j, part in enumerate(parts) if j != i for q in part]
        setting, _ = best_setting(per_query, qrels, candidates, train, scores)
        choices.append(setting.key())
        held_tuned += mean_ndcg(per_query, qrels, setting, test, scores) * len(test)
        held_default += mean_ndcg(per_query, qrels, default, test, scores) * len(test)
    chosen, _ = best_setting(per_query, qrels, candidates, qids, scores)
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

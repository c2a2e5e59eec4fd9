"""The reranker's score in the cut (SPEC C5 with D1): what passes, decided with the reranker.

The legs' raw scores tell a calibrator how likely a hit is relevant, but not whether it answers
*this* question: on StackFAQ a near-duplicate thread scores as high as the right one, and about
one unanswerable question in five still passes something at 90% of answerable ones kept
(README, *Judges*). A cross-encoder reads the question beside the passage; its score is the
signal the calibrator lacks. So when an agent's tune (``electa tune``) had a reranker, it
fits a second set of calibrators with the reranker's score as one more signal (the reranker
scores each tuning question's top :data:`DEPTH` candidates, as a search would), and keeps it
only if it abstains better at the kept target on cross-validation. It is stored with the
identity of the reranker it was fitted behind (:func:`electa.judges.agent_rerank.rerank_identity`):
behind another reranker its scores mean nothing, and it is not used.

At search, once the rerank judge has run, every hit shown is decided again by those
calibrators (:func:`recut`), as near as a search can to how they were fitted: a hit among the
first :attr:`RerankCut.depth` of the order the judges were given counts the reranker's score,
one below them counts none (the reranker's probability is 0), even when a search's reranker
reads deeper (``ELECTA_RERANK_DEPTH``, 100 by default). (The fit reads the first 20 in the
order the agent's searches are served, its tuned fusion when the tune chose one:
:func:`electa.eval.runner.served_order`.) A hit among the first ``depth`` that the reranker did not reach (its
budget ran out or was too short for its next batch, or ``ELECTA_RERANK_DEPTH`` is below the
depth) keeps the legs' decision: a slow moment neither drops nor admits it. When the judge did
not run (off, failed, cut before two hits), the legs' cut stands. A hit the title rescue kept
(SPEC B6) stays kept. Only a search of the default legs in the hybrid mode is decided so: the
other modes decide what passes with rules
of their own (a grader's verdict, which search decides, agreement between searches, the
multimodal mode's image lift) or search other legs than the calibrators were fitted on, as does
a search that names its legs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, replace
from typing import Any

from electa.calibration import Calibrator, calibrated_score
from electa.errors import ConfigError
from electa.types import Hit

SIGNAL = "rerank"  # the reranker's score, as one more leg the calibrators read
DEPTH = 20  # candidates of each tuning question the reranker scores (the cut is decided at the top)


@dataclass(frozen=True)
class RerankCut:
    """Calibrators over the legs' raw scores and the reranker's (``SIGNAL``), the floor on
    their probability, and the reranker they were fitted behind."""

    reranker: str
    calibrators: Mapping[str, Calibrator]
    floor: float
    depth: int = DEPTH
    figures: Mapping[str, object] | None = None

    def to_dict(self) -> dict[str, object]:
        return {"reranker": self.reranker, "calibration": {k: c.to_dict() for k, c in self.calibrators.items()},
                "calibrated_floor": self.floor, "depth": self.depth, "figures": dict(self.figures or {})}

    @classmethod
    def from_dict(cls, data: object) -> RerankCut:
        """Raises :class:`ConfigError` naming what is wrong with a stored one."""
        if not isinstance(data, Mapping):
            raise ConfigError("the agent's rerank_cut setting is not an object; run `electa tune --agent` again")
        try:
            calibration: Any = data["calibration"]
            calibrators = {str(k): Calibrator.from_dict(v) for k, v in calibration.items()}
            floor = float(data["calibrated_floor"])
            reranker = str(data["reranker"])
            depth = int(data.get("depth", DEPTH))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:  # (ValueError: a malformed calibrator)
            raise ConfigError(f"the agent's rerank_cut setting is unreadable ({exc!r}); run `electa tune --agent`"
                              " again") from exc
        if not reranker or not calibrators or not 0.0 <= floor <= 1.0 or depth < 1:
            raise ConfigError("the agent's rerank_cut setting names no reranker, no calibrators or a floor outside"
                              " [0, 1]; run `electa tune --agent` again")
        stacked = calibrators.get("*")
        if stacked is not None and stacked.kind == "stacked" and dict(stacked.weights).get(SIGNAL, 0.0) <= 0.0:
            raise ConfigError("the agent's rerank_cut setting does not weigh the reranker's score positively (a"
                              " higher score must never make a hit less likely to pass); run `electa tune --agent`"
                              " again")
        figures = data.get("figures")
        return cls(reranker, calibrators, floor, depth, dict(figures) if isinstance(figures, Mapping) else None)


def reranked_score(hit: Hit) -> float | None:
    """The rerank judge's score of ``hit``, None when it did not score it."""
    return next((score for name, score in hit.judged if name == SIGNAL), None)


def recut(hits: Sequence[Hit], cut: RerankCut, floor: float | None = None, *, within: Set[int]) -> list[Hit] | None:
    """``hits`` with ``passes`` and ``probability`` decided by ``cut`` (module doc), passing hits
    first, each group in the order given; None when the reranker scored none of them (the legs'
    cut stands). ``within``: the unit ids of the first ``cut.depth`` hits of the order the
    judges were given (taken before they ran: ``hits`` is already in theirs); a reranker's
    score of a hit below them is not read. ``floor``, on the absolute score, must be met too when given (as for the legs'
    calibrated cut).

    >>> from electa.calibration import fit_isotonic, fit_stacked
    >>> from electa.types import ChunkKind, LegVote
    >>> cal = {"dense": fit_isotonic([0.2, 0.8], [0, 1]), "rerank": fit_isotonic([-1.0, 1.0], [0, 1])}
    >>> cal["*"] = fit_stacked([{"dense": 1, "rerank": 1}, {"dense": 1}, {"rerank": 1}, {}], [1, 0, 0, 0])
    >>> def hit(i, cosine, judged=(), passes=True):
    ...     return Hit(i, i, 1, ChunkKind.PARENT, "", "", "", str(i), 0, 0, passes, (LegVote("dense", 1, cosine, 0.0),),
    ...                judged=judged)
    >>> cut = RerankCut("onnx:x", cal, 0.5)
    >>> [(h.ext_id, h.passes) for h in recut([hit(1, 0.9, (("rerank", -2.0),)), hit(2, 0.9, (("rerank", 2.0),)),
    ...                                        hit(3, 0.9, passes=False)], cut, within={1, 2, 3})]
    [('2', True), ('1', False), ('3', False)]

    Hit 3 was within the depth but the reranker did not reach it: it keeps the legs' decision.
    Below the depth (``within`` leaves it out), its score is not read and it counts none:

    >>> [(h.ext_id, h.passes) for h in recut([hit(2, 0.9, (("rerank", 2.0),)), hit(3, 0.9)], cut, within={2, 3})]
    [('2', True), ('3', True)]
    >>> [(h.ext_id, h.passes) for h in recut([hit(2, 0.9, (("rerank", 2.0),)), hit(3, 0.9, (("rerank", 2.0),))], cut,
    ...                                      within={2})]
    [('2', True), ('3', False)]
    >>> recut([hit(1, 0.9)], cut, within={1}) is None
    True
    """
    if all(reranked_score(h) is None or h.unit_id not in within for h in hits):
        return None
    out = []
    for h in hits:
        score = reranked_score(h)
        if h.unit_id in within and score is None:
            out.append(h)  # the reranker's budget did not reach it: the legs' decision stands
            continue
        votes = {v.leg: v.raw_score for v in h.votes}
        if score is not None and h.unit_id in within:
            votes[SIGNAL] = score
        probability = calibrated_score(cut.calibrators, votes)
        passes = probability >= cut.floor and (floor is None or h.score >= floor)
        out.append(replace(h, probability=probability, passes=passes or bool(h.rescued_by)))
    return [h for h in out if h.passes] + [h for h in out if not h.passes]

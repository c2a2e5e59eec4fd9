"""Score calibration: a leg's raw score -> probability of relevance (SPEC C5). Pure functions.

Two fitters, both standard:

- **Isotonic regression** by pool-adjacent-violators (Ayer et al. 1955; Zadrozny & Elkan 2002
  for classifier calibration): the monotone step function that best fits the labels in squared
  error. No shape assumed; needs a few hundred labels.
- **Platt scaling** (Platt 1999): ``p = 1 / (1 + exp(a·s + b))`` fitted by Newton's method on
  the log loss, with Platt's target smoothing ``(n₊+1)/(n₊+2)`` and ``1/(n₋+2)``. Two numbers;
  works with few labels.

One probability per candidate from several legs' probabilities is a third fit:

- **Stacking** (Wolpert 1992): a logistic regression over the legs' calibrated probabilities
  (0 for a leg that did not return the candidate), fitted by Newton's method (IRLS) with a small
  L2 penalty on the weights. It learns how far to trust each leg: on StackFAQ dev a lexical match
  from the full-text leg is weak evidence next to the dense leg's, which the reference's "take the
  higher of the two" cannot express (its maximum let near-duplicate threads pass).

A :class:`Calibrator` is plain data (JSON-serialisable), so it is stored per agent together with
the embedding model it was fitted for.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Calibrator:
    """``kind`` is ``isotonic`` (step thresholds and values), ``platt`` (a, b), or ``stacked``
    (per-leg ``weights`` and the intercept ``b``; only as the combined calibrator, ``"*"``)."""

    kind: str
    xs: tuple[float, ...] = ()
    ys: tuple[float, ...] = ()
    a: float = 0.0
    b: float = 0.0
    fitted_on: dict[str, object] = field(default_factory=dict, compare=False, hash=False)
    weights: tuple[tuple[str, float], ...] = ()

    def __call__(self, score: float) -> float:
        if self.kind == "platt":
            z = self.a * score + self.b
            return 1.0 / (1.0 + math.exp(z)) if z > -700 else 1.0
        if not self.xs:
            return 0.0
        # Step function: the value of the last block whose start is <= score.
        i = bisect.bisect_right(self.xs, score) - 1
        return self.ys[max(i, 0)]

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "xs": list(self.xs), "ys": list(self.ys), "a": self.a, "b": self.b,
                "fitted_on": self.fitted_on, "weights": dict(self.weights)}

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> Calibrator:
        """The calibrator stored as :meth:`to_dict`; :class:`ValueError` naming what is wrong
        with a malformed one (a search must not meet it half-read).

        >>> Calibrator.from_dict({"kind": "isotonic", "xs": [0.1, 0.5], "ys": [0.2]})
        Traceback (most recent call last):
        ValueError: a calibrator needs as many values (ys: 1) as steps (xs: 2)
        """
        if not isinstance(data, Mapping):
            raise ValueError(f"a calibrator is an object, not {type(data).__name__}")
        kind = data.get("kind")
        if kind not in KINDS:
            raise ValueError(f"unknown calibrator kind {kind!r}; valid: {', '.join(KINDS)}")
        xs, ys = _numbers(data.get("xs", ()), "xs"), _numbers(data.get("ys", ()), "ys")
        if len(xs) != len(ys):
            raise ValueError(f"a calibrator needs as many values (ys: {len(ys)}) as steps (xs: {len(xs)})")
        if list(xs) != sorted(xs):
            raise ValueError("a calibrator's steps (xs) must be in increasing order")
        weights = data.get("weights") or {}
        if not isinstance(weights, Mapping):
            raise ValueError("a stacked calibrator's weights are an object of leg: weight")
        a, b = _numbers([data.get("a", 0.0), data.get("b", 0.0)], "a, b")
        fitted_on = data.get("fitted_on")
        return cls(str(kind), xs, ys, a, b, dict(fitted_on) if isinstance(fitted_on, Mapping) else {},
                   tuple(sorted(zip((str(k) for k in weights), _numbers(list(weights.values()), "weights"),
                                    strict=True))))

    def combine(self, probabilities: Mapping[str, float]) -> float:
        """A stacked calibrator's probability from the legs' probabilities (missing leg: 0)."""
        z = self.b + sum(w * probabilities.get(leg, 0.0) for leg, w in self.weights)
        return _sigmoid(z)


KINDS = ("isotonic", "platt", "stacked")


def _numbers(values: object, name: str) -> tuple[float, ...]:
    """``values`` as finite floats; :class:`ValueError` naming ``name`` otherwise."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise ValueError(f"a calibrator's {name} must be a list of numbers, not {type(values).__name__}")
    out = []
    for v in values:
        try:  # (an int too large for a float overflows)
            f = float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan
        except OverflowError:
            f = math.nan
        if not math.isfinite(f):
            raise ValueError(f"a calibrator's {name} must be finite numbers, not {str(v)[:40]}")
        out.append(f)
    return tuple(out)


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0


def fit_isotonic(scores: Sequence[float], labels: Sequence[int]) -> Calibrator:
    """Pool adjacent violators over labels sorted by score (ties pooled first).

    >>> c = fit_isotonic([0.1, 0.2, 0.3, 0.4], [0, 1, 0, 1])
    >>> [round(c(s), 2) for s in (0.1, 0.25, 0.35, 0.4)]
    [0.0, 0.5, 0.5, 1.0]
    """
    if len(scores) != len(labels) or not scores:
        raise ValueError("need as many labels as scores, at least one")
    pairs = sorted(zip(scores, labels, strict=True))
    # Blocks: [start score, label sum, count]; equal scores start in one block.
    blocks: list[list[float]] = []
    for s, y in pairs:
        if blocks and blocks[-1][0] == s:
            blocks[-1][1] += y
            blocks[-1][2] += 1
        else:
            blocks.append([s, float(y), 1.0])
        while len(blocks) > 1 and blocks[-2][1] / blocks[-2][2] >= blocks[-1][1] / blocks[-1][2]:
            last = blocks.pop()
            blocks[-1][1] += last[1]
            blocks[-1][2] += last[2]
    return Calibrator("isotonic", tuple(b[0] for b in blocks), tuple(b[1] / b[2] for b in blocks))


def fit_platt(scores: Sequence[float], labels: Sequence[int], iterations: int = 100) -> Calibrator:
    """Platt's sigmoid by Newton's method on the smoothed log loss.

    >>> c = fit_platt([0.0, 0.1, 0.9, 1.0], [0, 0, 1, 1])
    >>> c(0.0) < 0.5 < c(1.0)
    True
    """
    if len(scores) != len(labels) or not scores:
        raise ValueError("need as many labels as scores, at least one")
    pos = sum(1 for y in labels if y)
    neg = len(labels) - pos
    hi, lo = (pos + 1.0) / (pos + 2.0), 1.0 / (neg + 2.0)
    targets = [hi if y else lo for y in labels]
    a, b = 0.0, math.log((neg + 1.0) / (pos + 1.0))
    for _ in range(iterations):
        g_a = g_b = h_aa = h_ab = h_bb = 0.0
        for s, t in zip(scores, targets, strict=True):
            z = a * s + b
            p = 1.0 / (1.0 + math.exp(z)) if z > -700 else 1.0
            d = t - p  # d(loss)/dz for p = sigmoid(-z)
            w = p * (1.0 - p)
            g_a += d * s
            g_b += d
            h_aa += w * s * s
            h_ab += w * s
            h_bb += w
        h_aa += 1e-12
        h_bb += 1e-12
        det = h_aa * h_bb - h_ab * h_ab
        if abs(det) < 1e-18:
            break
        step_a = (h_bb * g_a - h_ab * g_b) / det
        step_b = (h_aa * g_b - h_ab * g_a) / det
        a, b = a - step_a, b - step_b
        if abs(step_a) + abs(step_b) < 1e-9:
            break
    return Calibrator("platt", a=a, b=b)


def fit_stacked(rows: Sequence[Mapping[str, float]], labels: Sequence[int], l2: float = 0.1,
                iterations: int = 50) -> Calibrator:
    """Logistic regression of ``labels`` on each row's per-leg probabilities (absent leg: 0),
    by Newton's method on the log loss plus ``l2``/2 · |weights|² (the intercept is not
    penalised; the penalty keeps a leg that is always absent at weight 0).

    >>> rows = [{"dense": 0.9}, {"dense": 0.8, "fulltext": 0.9}, {"fulltext": 0.9}, {"dense": 0.1}]
    >>> c = fit_stacked(rows, [1, 1, 0, 0])
    >>> c.combine({"dense": 0.9}) > 0.5 > c.combine({"fulltext": 0.9})
    True
    """
    import numpy as np

    if len(rows) != len(labels) or not rows:
        raise ValueError("need as many labels as rows, at least one")
    legs = sorted({leg for row in rows for leg in row})
    x = np.array([[1.0, *(row.get(leg, 0.0) for leg in legs)] for row in rows])
    y = np.asarray(labels, dtype=np.float64)
    penalty = np.full(x.shape[1], l2)
    penalty[0] = 1e-9
    w = np.zeros(x.shape[1])
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ w, -700, 700)))
        gradient = x.T @ (p - y) + penalty * w
        hessian = (x * (p * (1.0 - p))[:, None]).T @ x + np.diag(penalty)
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if float(np.abs(step).max()) < 1e-9:
            break
    return Calibrator("stacked", b=float(w[0]), weights=tuple((leg, float(v)) for leg, v in zip(legs, w[1:], strict=True)))


def reliability(probs: Sequence[float], labels: Sequence[int], bins: int = 10) -> list[tuple[float, float, int]]:
    """Per equal-width bin: (mean predicted, observed rate, count), bins with data only."""
    out = []
    for i in range(bins):
        lo, hi = i / bins, (i + 1) / bins
        idx = [j for j, p in enumerate(probs) if lo <= p < hi or (i == bins - 1 and p == 1.0)]
        if idx:
            out.append((sum(probs[j] for j in idx) / len(idx), sum(labels[j] for j in idx) / len(idx), len(idx)))
    return out


COMBINED = "*"


def calibrated_score(cal: Mapping[str, Calibrator], votes: Mapping[str, float]) -> float:
    """One probability for a candidate from its legs' raw scores: each leg's calibrated
    probability, then the combined calibrator (key ``"*"``): a stacked one weighs the legs;
    otherwise (calibrations stored before stacking) the highest leg probability is mapped once
    more, since a maximum of probabilities over-states relevance.

    >>> cal = {"dense": fit_isotonic([0.2, 0.8], [0, 1])}
    >>> calibrated_score(cal, {"dense": 0.8, "fulltext": 12.0})
    1.0
    """
    probabilities = {leg: cal[leg](raw) for leg, raw in votes.items() if leg in cal and leg != COMBINED}
    combined = cal.get(COMBINED)
    if combined is not None and combined.kind == "stacked":
        return combined.combine(probabilities)
    best = max(probabilities.values(), default=0.0)
    return combined(best) if combined is not None else best

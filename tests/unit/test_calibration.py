import json

import pytest

from electa.calibration import COMBINED, Calibrator, calibrated_score, fit_isotonic, fit_platt, fit_stacked, reliability


def test_isotonic_is_monotone_and_pools_violators() -> None:
    c = fit_isotonic([1, 2, 3, 4, 5, 6], [0, 0, 1, 0, 1, 1])
    values = [c(s) for s in (1, 2, 3, 4, 5, 6)]
    assert values == sorted(values)
    assert values[2] == values[3] == pytest.approx(0.5)
    assert c(-10) == 0.0 and c(100) == 1.0


def test_isotonic_by_hand_with_ties() -> None:
    c = fit_isotonic([0.5, 0.5, 0.9], [1, 0, 1])
    assert c(0.5) == pytest.approx(0.5) and c(0.9) == 1.0


def test_platt_recovers_a_known_sigmoid() -> None:
    import math

    scores = [i / 50 for i in range(-100, 101)]
    # Labels drawn deterministically from p = sigmoid(4s): fraction of positives per score.
    labels = [1 if (i * 7919 % 100) / 100 < 1 / (1 + math.exp(-4 * s)) else 0 for i, s in enumerate(scores)]
    c = fit_platt(scores, labels)
    assert c.a < 0 and c(0.0) == pytest.approx(0.5, abs=0.12) and c(2.0) > 0.85


def test_round_trip_and_reliability() -> None:
    c = fit_isotonic([0.1, 0.9], [0, 1])
    assert Calibrator.from_dict(c.to_dict())(0.9) == 1.0
    rows = reliability([0.05, 0.95, 0.95], [0, 1, 0], bins=10)
    assert rows == [(0.05, 0.0, 1), (0.95, 0.5, 2)]


def test_stacked_calibrator_round_trips_and_weighs_legs() -> None:
    rows = [{"dense": 0.9}, {"dense": 0.8, "fulltext": 0.9}, {"fulltext": 0.9}, {"dense": 0.1}] * 5
    stacked = fit_stacked(rows, [1, 1, 0, 0] * 5)
    again = Calibrator.from_dict(json.loads(json.dumps(stacked.to_dict())))
    assert again == stacked and again.combine({"dense": 0.9}) == stacked.combine({"dense": 0.9})
    cal = {"dense": fit_isotonic([0.1, 0.9], [0, 1]), "fulltext": fit_isotonic([1.0, 9.0], [0, 1]), COMBINED: stacked}
    assert calibrated_score(cal, {"dense": 0.9}) > 0.5 > calibrated_score(cal, {"fulltext": 9.0})
    with pytest.raises(ValueError, match="as many labels"):
        fit_stacked([], [])

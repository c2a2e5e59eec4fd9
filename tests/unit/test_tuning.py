import json

import pytest

from electa.calibration import fit_isotonic
from electa.errors import ConfigError
from electa.eval.beir import half_of
from electa.eval.tuning import (
    FusionSetting,
    fuse,
    in_setting_order,
    k_grid,
    load_calibration,
    load_setting,
    save_setting,
    tune,
)


def lists(i: int) -> dict[str, list[tuple[str, float]]]:
    # The dense leg always has the relevant document first; the full-text leg buries it.
    return {"dense": [(f"rel{i}", 0.9), (f"x{i}", 0.5)],
            "fulltext": [(f"x{i}", 9.0), (f"y{i}", 8.0), (f"z{i}", 7.0), (f"rel{i}", 1.0)]}


def test_fuse_respects_depth_and_weights() -> None:
    s = FusionSetting({"dense": 1.0, "fulltext": 1.0}, 60.0, {"dense": 1, "fulltext": 1})
    assert set(fuse(lists(0), s)) == {"rel0", "x0"}
    heavy = FusionSetting({"dense": 4.0, "fulltext": 1.0}, 60.0, {"dense": 10, "fulltext": 10})
    assert fuse(lists(0), heavy)[0] == "rel0"


def test_tuning_learns_to_trust_the_better_leg_and_cross_validates(tmp_path) -> None:  # type: ignore[no-untyped-def]
    per_query = {f"q{i}": lists(i) for i in range(30)}
    qrels = {f"q{i}": {f"rel{i}": 1} for i in range(30)}
    default = FusionSetting({"dense": 1.0, "fulltext": 1.0}, 60.0, {"dense": 100, "fulltext": 100})
    result = tune(per_query, qrels, default, folds=3)
    assert result.cv_tuned == pytest.approx(1.0) and result.cv_default < 1.0
    assert result.chosen.weights["dense"] > result.chosen.weights["fulltext"] or result.chosen.depths["fulltext"] < 4
    path = tmp_path / "t.json"
    save_setting(path, result, {"dataset": "toy"})
    assert load_setting(path) == result.chosen
    assert json.loads(path.read_text())["tuned_on"] == {"dataset": "toy"}
    assert load_calibration(path) is None  # too few questions were labelled to calibrate
    cal = fit_isotonic([0.1, 0.9], [0, 1])
    save_setting(path, result, {"dataset": "toy"}, {"calibration": {"dense": cal.to_dict()}, "calibrated_floor": 0.6})
    loaded = load_calibration(path)
    assert loaded is not None and loaded[0]["dense"] == cal and loaded[1] == 0.6
    path.write_text("{}")
    with pytest.raises(ConfigError, match="electa tune"):
        load_setting(path)


def test_halves_are_fixed_disjoint_and_even() -> None:
    qids = [f"q{i}" for i in range(101)]
    tune_half, test_half = half_of(qids, "tune"), half_of(qids, "test")
    assert not tune_half & test_half and tune_half | test_half == set(qids)
    assert abs(len(tune_half) - len(test_half)) <= 1
    assert half_of(reversed(qids), "test") == test_half  # file order does not matter
    with pytest.raises(ConfigError, match="tune, test"):
        half_of(qids, "train")


def test_candidates_in_a_settings_order_are_those_it_serves_with_the_votes_it_casts() -> None:
    lists = {"q": {"fulltext": [("a", 9.0), ("b", 8.0)], "dense": [("b", 0.9), ("c", 0.8), ("a", 0.7)]}}
    tables = {"q": [("a", 0.5, {"fulltext": 9.0, "dense": 0.7}), ("b", 0.5, {"fulltext": 8.0, "dense": 0.9}),
                    ("c", 0.6, {"dense": 0.8})]}
    # Dense cut at depth 1: c (dense's second) is not a candidate, a loses its dense vote, and b,
    # first in dense and second in full text, leads (plain RRF order: lift None).
    shallow = FusionSetting({"fulltext": 1.0, "dense": 1.0}, 60.0, {"fulltext": 100, "dense": 1}, None)
    assert in_setting_order(tables, lists, shallow)["q"] == [("b", 0.5, {"fulltext": 8.0, "dense": 0.9}),
                                                            ("a", 0.5, {"fulltext": 9.0})]
    # Every leg at full depth with no weight on agreement: the absolute score alone orders (c first).
    by_score = FusionSetting({"fulltext": 1.0, "dense": 1.0}, 60.0, {"fulltext": 100, "dense": 100}, 0.0)
    served = in_setting_order(tables, lists, by_score)["q"]
    assert served[0] == tables["q"][2] and sorted(served[1:]) == sorted(tables["q"][:2])  # (a and b tie at 0.5)


def test_a_tie_between_values_of_k_keeps_the_k_served_untuned() -> None:
    # Found by review: every k gave the same figure and the tuner stored k 5, though an untuned
    # agent is served k 10 in the C4 order (60 in the plain RRF order).
    from electa.fusion import RRF_K
    from electa.scoring import AGREEMENT_K, LIFT

    both_first = {f"q{i}": {"dense": [(f"rel{i}", 0.9), (f"x{i}", 0.5)], "fulltext": [(f"rel{i}", 9.0), (f"x{i}", 1.0)]}
                  for i in range(12)}
    qrels = {f"q{i}": {f"rel{i}": 1} for i in range(12)}
    default = FusionSetting({"dense": 1.0, "fulltext": 1.0}, AGREEMENT_K, {"dense": 50, "fulltext": 50}, LIFT)
    scores = {q: {d: 0.5 for lists in per.values() for d, _ in lists} for q, per in both_first.items()}
    served = tune(both_first, qrels, default, folds=3, scores=scores)
    assert served.cv_tuned == served.cv_default == pytest.approx(1.0)
    assert served.chosen == default  # (found by review: before, the dense leg weighed 0, depth 10)
    plain_default = FusionSetting({"dense": 1.0, "fulltext": 1.0}, RRF_K, {"dense": 50, "fulltext": 50})
    assert tune(both_first, qrels, plain_default, folds=3).chosen == plain_default
    # Among the grid's other settings, a tie between values of k keeps the served one.
    assert k_grid(LIFT)[0] == AGREEMENT_K and k_grid(None)[0] == RRF_K

import json

import pytest

from electa.calibration import fit_isotonic
from electa.errors import ConfigError
from electa.eval.beir import half_of
from electa.eval.tuning import FusionSetting, fuse, load_calibration, load_setting, save_setting, tune


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

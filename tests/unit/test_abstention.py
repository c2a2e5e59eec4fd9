from electa.eval.abstention import calibrated_score, cross_validate, fit_leg_calibrators, measure

QRELS = {f"q{i}": {f"r{i}": 1} for i in range(40)}


def tables(separable: bool):  # type: ignore[no-untyped-def]
    out = {}
    for i in range(40):
        rel_score = 0.9 if separable else 0.5
        out[f"q{i}"] = [(f"r{i}", 0.6, {"dense": rel_score}), (f"n{i}", 0.6, {"dense": 0.5 if separable else 0.9})]
    return out


def test_unanswerable_twin_abstains_only_when_nothing_else_passes() -> None:
    t = {"q": [("r", 0.9, {}), ("n", 0.3, {})]}
    abstain, keep, precision, recall = measure(t, {"q": {"r": 1}}, ["q"], lambda c: c[1], 0.4)
    assert (abstain, keep, precision, recall) == (1.0, 1.0, 1.0, 1.0)
    abstain, keep, _, _ = measure(t, {"q": {"r": 1}}, ["q"], lambda c: c[1], 0.2)
    assert abstain == 0.0 and keep == 1.0


def test_calibrators_learn_which_scores_mean_relevant() -> None:
    cal = fit_leg_calibrators(tables(True), QRELS, list(QRELS))
    assert calibrated_score(cal, {"dense": 0.9}) == 1.0
    assert calibrated_score(cal, {"dense": 0.5}) == 0.0


def test_cross_validated_calibrated_floor_beats_fixed_rule_when_scores_separate() -> None:
    report = cross_validate(tables(True), QRELS, fixed_floor=0.4, folds=4, target_keep=0.9)
    fixed, calibrated = report.rows
    assert fixed.abstain_unanswerable == 0.0 and calibrated.abstain_unanswerable == 1.0
    assert calibrated.keep_answerable == 1.0

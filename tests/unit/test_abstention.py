import numpy as np

from electa.eval.abstention import (
    FLOOR_GRID,
    at_given_floor,
    calibrated_score,
    choose_floor,
    cross_validate,
    fit_leg_calibrators,
    floor_for,
    keep_grid,
    measure,
)

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
    assert calibrated_score(cal, {"dense": 0.9}) > 0.9
    assert calibrated_score(cal, {"dense": 0.5}) < 0.1


def test_cross_validated_calibrated_floor_beats_fixed_rule_when_scores_separate() -> None:
    report = cross_validate(tables(True), QRELS, fixed_floor=0.4, folds=4, target_keep=0.9)
    fixed, calibrated = report.rows
    assert fixed.abstain_unanswerable == 0.0 and calibrated.abstain_unanswerable == 1.0
    assert calibrated.keep_answerable == 1.0


def test_a_floor_fitted_elsewhere_is_measured_without_refitting() -> None:
    cal = fit_leg_calibrators(tables(True), QRELS, list(QRELS))
    row = at_given_floor(tables(True), QRELS, cal, 0.5, "from elsewhere")
    assert (row.abstain_unanswerable, row.keep_answerable, row.precision) == (1.0, 1.0, 1.0)
    # The same calibrators on queries where they are wrong: nothing relevant passes.
    row = at_given_floor(tables(False), QRELS, cal, 0.5, "from elsewhere")
    assert row.keep_answerable == 0.0 and row.abstain_unanswerable == 0.0


def test_stacking_learns_to_distrust_a_leg_that_passes_siblings() -> None:
    # The full-text leg scores the relevant answer and a sibling thread alike; the dense leg
    # separates them. The maximum of the two would pass the sibling; stacking does not.
    t, qrels = {}, {}
    for i in range(60):
        t[f"q{i}"] = [(f"r{i}", 0.6, {"dense": 0.8 + (i % 5) / 100, "fulltext": 20.0 + i % 7}),
                      (f"s{i}", 0.6, {"dense": 0.5 + (i % 5) / 100, "fulltext": 20.0 + (i + 3) % 7}),
                      (f"n{i}", 0.2, {"fulltext": 2.0 + i % 3})]
        qrels[f"q{i}"] = {f"r{i}": 1}
    cal = fit_leg_calibrators(t, qrels, list(qrels))
    assert cal["*"].kind == "stacked" and dict(cal["*"].weights)["dense"] > dict(cal["*"].weights)["fulltext"]
    sibling = calibrated_score(cal, {"dense": 0.52, "fulltext": 25.0})
    relevant = calibrated_score(cal, {"dense": 0.82, "fulltext": 21.0})
    assert sibling < 0.5 < relevant
    row = cross_validate(t, qrels, folds=4).rows[1]
    assert row.abstain_unanswerable == 1.0 and row.keep_answerable == 1.0


def _kept_from(kept_row) -> float:  # type: ignore[no-untyped-def]
    """The highest grid floor a question keeps at (-1 when none)."""
    return float(FLOOR_GRID[kept_row][-1]) if kept_row.any() else -1.0


def test_keep_grid_and_floor_by_hand() -> None:
    t = {"a": [("n", 0.0, {"x": 0.9}), ("r", 0.0, {"x": 0.7})],      # relevant second: kept up to 0.7
         "b": [(f"n{i}", 0.0, {"x": 0.9}) for i in range(4)] + [("r", 0.0, {"x": 0.8})],  # fifth: never kept
         "c": [("r", 0.0, {"x": 0.3})]}
    qrels = {q: {"r": 1} for q in t}
    kept = keep_grid(t, qrels, ["a", "b", "c"], lambda c: c[2]["x"])
    assert [_kept_from(row) for row in kept] == [0.7, -1.0, 0.3]
    assert kept[0][:70].all() and not kept[0][70:].any()
    assert floor_for(kept, 0.6) == 0.3 and floor_for(kept, 0.3) == 0.7 and floor_for(kept, 0.9) == 0.0


def test_a_relevant_candidate_counts_where_the_served_order_shows_it() -> None:
    # The relevant page scores highest but the served order (the table's) puts four weaker
    # passing pages before it: at a floor they pass, the answer reads those four and not it.
    # Sorted by score, as up to commit 8521c16, it was counted as kept at every floor.
    t = {"q": [*[(f"n{i}", 0.0, {"x": 0.3}) for i in range(4)], ("r", 0.0, {"x": 0.8})]}
    qrels = {"q": {"r": 1}}
    kept = keep_grid(t, qrels, ["q"], lambda c: c[2]["x"])[0]
    assert not kept[:30].any() and kept[30:80].all() and not kept[80:].any()  # kept above 0.3, up to 0.8
    assert measure(t, qrels, ["q"], lambda c: c[2]["x"], 0.2)[1] == 0.0
    assert measure(t, qrels, ["q"], lambda c: c[2]["x"], 0.5)[1] == 1.0


def test_only_the_shown_window_is_read() -> None:
    # Twenty failing pages before the relevant one: no answer reads it, and no twin passes.
    t = {"q": [*[(f"n{i}", 0.0, {"x": 0.1}) for i in range(20)], ("r", 0.0, {"x": 0.9}), ("m", 0.0, {"x": 0.9})]}
    qrels = {"q": {"r": 1}}
    assert not keep_grid(t, qrels, ["q"], lambda c: c[2]["x"]).any()
    abstain, keep, _, recall = measure(t, qrels, ["q"], lambda c: c[2]["x"], 0.5)
    # (the twin, without r, shows n0..n19 only: m sits 21st, so nothing passes)
    assert (abstain, keep, recall) == (1.0, 0.0, 0.0)
    assert measure(t, qrels, ["q"], lambda c: c[2]["x"], 0.5, judged=True)[:2] == (0.0, 1.0)  # (a judge reads all)


def test_floor_asks_for_a_margin_over_the_target() -> None:
    # Relevant and non-relevant scores overlap, so the calibrated probability rises gradually.
    t = {f"q{i}": [(f"r{i}", 0.0, {"dense": 0.2 + 0.8 * ((i * 37) % 100) / 100}),
                   (f"n{i}", 0.0, {"dense": ((i * 53) % 100) / 100})] for i in range(100)}
    qrels = {q: {f"r{q[1:]}": 1} for q in t}
    bare = choose_floor(t, qrels, list(t), 0.8, margin_se=0.0)
    padded = choose_floor(t, qrels, list(t), 0.8, margin_se=1.0)  # asks for 84% kept
    assert 0.0 < padded < bare


def test_a_twin_shows_what_comes_into_the_window_once_its_answers_are_gone() -> None:
    # The relevant page is 1st; nineteen failing pages follow, then a passing one 21st. With the
    # relevant page removed (the twin), the passing one is 20th: shown, so the twin answers.
    t = {"q": [("r", 0.0, {"x": 0.9}), *[(f"n{i}", 0.0, {"x": 0.1}) for i in range(19)], ("m", 0.0, {"x": 0.9})]}
    abstain, keep, _, _ = measure(t, {"q": {"r": 1}}, ["q"], lambda c: c[2]["x"], 0.5)
    assert (abstain, keep) == (0.0, 1.0)


def test_a_floor_that_reaches_the_target_above_one_that_misses_it_is_not_chosen() -> None:
    kept = np.zeros((10, len(FLOOR_GRID)), dtype=bool)
    kept[:, :30] = True  # every question kept up to 0.30
    kept[:5, 30:60] = True  # half of them up to 0.60
    kept[:, 60] = True  # and all of them again at 0.61 alone: a spike
    assert floor_for(kept, 0.9) == 0.3
    assert floor_for(kept, 0.5) == 0.61  # (at half, 0.31-0.61 reach it without a gap)


def test_a_flicker_at_the_bottom_does_not_decide_the_floor() -> None:
    # 0.01 reaches the target, 0.02 misses, 0.03-0.40 reach it: the floor is 0.40, not 0.01.
    kept = np.zeros((10, len(FLOOR_GRID)), dtype=bool)
    kept[:, :40] = True
    kept[:, 1] = False
    assert floor_for(kept, 0.9) == 0.4
    # No three floors in a row reach it: the highest that does alone.
    lone = np.zeros((10, len(FLOOR_GRID)), dtype=bool)
    lone[:, [4, 9]] = True
    assert floor_for(lone, 0.9) == 0.1


def test_a_judged_read_shows_every_candidate_passing_first_by_score() -> None:
    # A judge's search (the reranker's cut) puts passing hits first among all it built: the
    # relevant page 25th in the served order is read when it scores above the others.
    t = {"q": [*[(f"n{i}", 0.0, {"x": 0.3}) for i in range(24)], ("r", 0.0, {"x": 0.8})]}
    qrels = {"q": {"r": 1}}
    assert measure(t, qrels, ["q"], lambda c: c[2]["x"], 0.2)[1] == 0.0
    assert measure(t, qrels, ["q"], lambda c: c[2]["x"], 0.2, judged=True)[1] == 1.0
    assert keep_grid(t, qrels, ["q"], lambda c: c[2]["x"], judged=True)[0][:80].all()

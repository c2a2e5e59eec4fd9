import pytest

from electa.fusion import max_fused, rrf_contribution, weighted_rrf


def test_rrf_values_by_hand() -> None:
    # Reference: rank 3 in two legs = 2/63 ≈ 0.0317, nearly double a single rank 1 (1/61).
    out = weighted_rrf({"a": [("x", 1.0), ("y", 0.9), ("z", 0.8)], "b": [("q", 5.0), ("w", 4.0), ("z", 3.0)]})
    by_key = {f.key: f for f in out}
    assert by_key["z"].fused == pytest.approx(2 / 63)
    assert by_key["x"].fused == pytest.approx(1 / 61)
    assert out[0].key == "z"


def test_weights_and_k_are_parameters() -> None:
    out = weighted_rrf({"a": [("x", 1.0)], "b": [("y", 1.0)]}, weights={"a": 0.4, "b": 0.2}, k=10)
    assert [(f.key, round(f.fused, 6)) for f in out] == [("x", round(0.4 / 11, 6)), ("y", round(0.2 / 11, 6))]


def test_provenance_keeps_rank_raw_and_contribution() -> None:
    out = weighted_rrf({"dense": [("d1", 0.71), ("d2", 0.5)], "fulltext": [("d2", 12.5)]})
    d2 = next(f for f in out if f.key == "d2")
    votes = {v.leg: v for v in d2.votes}
    assert votes["dense"].rank == 2 and votes["dense"].raw_score == 0.5
    assert votes["fulltext"].rank == 1 and votes["fulltext"].contribution == pytest.approx(1 / 61)


def test_a_leg_votes_once_per_key_and_ranks_stay_dense() -> None:
    out = weighted_rrf({"a": [("x", 3.0), ("x", 2.0), ("y", 1.0)]})
    y = next(f for f in out if f.key == "y")
    assert y.votes[0].rank == 2


def test_zero_weight_keeps_provenance_only() -> None:
    out = weighted_rrf({"a": [("x", 1.0)], "b": [("y", 1.0)]}, weights={"b": 0.0})
    y = next(f for f in out if f.key == "y")
    assert y.fused == 0.0 and y.votes[0].leg == "b"


def test_ties_broken_by_agreement_then_rank() -> None:
    out = weighted_rrf({"a": [("x", 1.0)], "b": [("y", 1.0)]})
    assert [f.key for f in out] == ["x", "y"]


def test_ranks_are_one_based_and_max_fused() -> None:
    with pytest.raises(ValueError):
        rrf_contribution(0)
    assert max_fused({"a": 1.0, "b": 0.5}, ["a", "b"]) == pytest.approx(1.5 / 61)

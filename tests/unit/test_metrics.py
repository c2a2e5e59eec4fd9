import math

import pytest

from electa.eval.metrics import ap_at, mean_metrics, mrr_at, ndcg_at, percentile, recall_at
from electa.eval.trec import read_run, write_run


def test_ndcg_graded_by_hand() -> None:
    qrels = {"a": 3, "b": 1, "c": 0}
    run = ["b", "c", "a"]
    dcg = 1 / math.log2(2) + 3 / math.log2(4)
    idcg = 3 / math.log2(2) + 1 / math.log2(3)
    assert ndcg_at(run, qrels) == pytest.approx(dcg / idcg)


def test_mrr_recall_ap() -> None:
    qrels = {"a": 1, "b": 1}
    assert mrr_at(["x", "a"], qrels) == 0.5
    assert recall_at(["x", "a"], qrels, 2) == 0.5
    assert ap_at(["a", "x", "b"], qrels) == pytest.approx((1 + 2 / 3) / 2)
    assert mrr_at(["x"] * 10 + ["a"], qrels, 10) == 0.0


def test_mean_skips_queries_without_relevant_docs() -> None:
    out = mean_metrics({"q1": ["a"], "q2": ["b"]}, {"q1": {"a": 1}, "q2": {"b": 0}})
    assert out["ndcg@10"] == 1.0


def test_percentile_linear() -> None:
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([], 95) == 0.0


def test_trec_round_trip_keeps_order_on_ties(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "r.trec"
    write_run(path, {"q": [("d2", 0.5), ("d1", 0.5), ("d3", 0.1)]}, "t")
    assert read_run(path) == {"q": ["d2", "d1", "d3"]}
    first = path.read_text().splitlines()[0].split()
    assert first[:4] == ["q", "Q0", "d2", "1"] and first[5] == "t"

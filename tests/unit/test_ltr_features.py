"""The learning-to-rank features (SPEC D2), worked by hand on two hits."""

import math

import pytest

from electa.judges.ltr_features import FEATURES, features
from electa.types import ChunkKind, Hit, LegVote


def test_each_feature_of_two_hits() -> None:
    a = Hit(1, 1, 1, ChunkKind.PARENT, "Refund policy", "Annual plans are refunded.", "", "", 0.02, 0.9, True,
            (LegVote("fulltext", 3, 6.0, 0.01), LegVote("dense", 1, 0.8, 0.01)))
    b = Hit(2, 2, 1, ChunkKind.QA, "Pricing", "Growth costs $29.", "", "", 0.03, 0.5, True,
            (LegVote("fulltext", 1, 9.0, 0.02),))
    rows = [dict(zip(FEATURES, row, strict=True)) for row in features("refund for annual plans", [a, b])]
    # served order a, b; by fused value b (0.03) before a (0.02)
    assert [r["served_rr"] for r in rows] == [1.0, 0.5]
    assert [r["fused_rr"] for r in rows] == [0.5, 1.0]
    assert [r["query_stems"] for r in rows] == [3, 3]  # refund, annual, plan ("for" is a stop word)
    assert rows[0]["coverage"] == 1.0 and rows[0]["title_coverage"] == pytest.approx(1 / 3)
    assert rows[1]["coverage"] == 0.0
    assert (rows[0]["kind_parent"], rows[0]["kind_qa"], rows[1]["kind_qa"]) == (1.0, 0.0, 1.0)
    # full text: best raw 9.0 among the hits; a is 3.0 below it, at rank 3
    assert (rows[0]["fulltext_rr"], rows[0]["fulltext_raw"], rows[0]["fulltext_gap"]) == (pytest.approx(1 / 3), 6.0, 3.0)
    assert (rows[1]["fulltext_rr"], rows[1]["fulltext_gap"]) == (1.0, 0.0)
    # the dense leg did not find b: all zero
    assert (rows[1]["dense_rr"], rows[1]["dense_raw"], rows[1]["dense_gap"]) == (0.0, 0.0, 0.0)
    # values carried as they are, each in its own column
    assert [(r["fused"], r["absolute"]) for r in rows] == [(0.02, 0.9), (0.03, 0.5)]
    assert rows[0]["log_chars"] == pytest.approx(math.log1p(len("Annual plans are refunded.")))
    # the dense leg found a (its only hit: best, gap 0); Q&A found nothing
    assert (rows[0]["dense_rr"], rows[0]["dense_raw"], rows[0]["dense_gap"]) == (1.0, 0.8, 0.0)
    assert all(r[f"qa_{part}"] == 0.0 for r in rows for part in ("rr", "raw", "gap"))
    curated = Hit(3, 3, 1, ChunkKind.CURATED, "Refunds", "Yes.", "", "", 0.01, 0.85, True, ())
    (row,) = [dict(zip(FEATURES, r, strict=True)) for r in features("refund", [curated])]
    assert row["kind_curated"] == 1.0 and sum(row[f] for f in FEATURES if f.startswith("kind_")) == 1.0
    assert features("q", []).shape == (0, len(FEATURES))


def test_the_rerank_score_when_the_reranker_ran_before() -> None:
    """The rerank judge's score, where it scored the hit (a budget cut leaves the rest at 0)."""
    hits = [Hit(i, i, 1, ChunkKind.PARENT, f"T{i}", "text", "", "", 0.01, 0.5, True, (), judged=judged)
            for i, judged in enumerate([(("rerank", 2.5),), (("rerank", 4.0), ("ltr", 9.0)), ()])]
    rows = [dict(zip(FEATURES, row, strict=True)) for row in features("q", hits)]
    assert [(r["rerank_scored"], r["rerank_raw"], r["rerank_gap"]) for r in rows] == [
        (1.0, 2.5, 1.5), (1.0, 4.0, 0.0), (0.0, 0.0, 0.0)]
    plain = [dict(zip(FEATURES, row, strict=True)) for row in features("q", [hits[2]])]
    assert plain[0]["rerank_scored"] == plain[0]["rerank_raw"] == 0.0


def test_engagement_and_recency_from_the_context_a_search_looks_up() -> None:
    from electa.judges.ltr_features import DAY, HitContext

    hits = [Hit(i, i, source, ChunkKind.PARENT, f"T{i}", "text", url, "", 0.01, 0.5, True, ())
            for i, (source, url) in enumerate([(7, "https://a/1"), (8, "https://a/2"), (9, "")])]
    context = HitContext({"https://a/1": (3, 1), "https://a/9": (5, 0)}, {7: 10 * DAY, 8: 13 * DAY})
    rows = [dict(zip(FEATURES, row, strict=True)) for row in features("q", hits, context=context)]
    assert [(r["votes_up"], r["votes_down"]) for r in rows] == [(math.log1p(3), math.log1p(1)), (0.0, 0.0), (0.0, 0.0)]
    # days behind the freshest hit's source (source 8): 3, 0; an unknown source reads as fresh
    assert [r["age_gap"] for r in rows] == [pytest.approx(math.log1p(3)), 0.0, 0.0]
    assert all(r[f] == 0.0 for r in (dict(zip(FEATURES, x, strict=True)) for x in features("q", hits))
               for f in ("votes_up", "votes_down", "age_gap"))

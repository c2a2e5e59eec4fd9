import pytest

from electa.scoring import FLOOR, LIFT, absolute_score, coverage, order_value, shares_stem
from electa.text import content_stems, stem_set


def test_reference_example_one_stem_of_four_passes_exactly() -> None:
    q = content_stems("Error E1042 when exporting to CSV")
    assert q == ["error", "e1042", "export", "csv"]
    assert coverage(q, stem_set("A CSV file")) == pytest.approx(0.40)
    assert coverage(q, stem_set("A CSV file")) >= FLOOR


def test_full_coverage_is_base_plus_span_under_the_cap() -> None:
    assert coverage(["refund"], {"refund"}) == pytest.approx(0.85)
    assert coverage(["refund", "plan"], {"plan"}) == pytest.approx(0.55)


def test_stemming_matches_plural_and_verb_forms() -> None:
    assert shares_stem(content_stems("refunds"), stem_set("We refunded it"))


def test_vector_and_qa_rules() -> None:
    assert absolute_score(0.45, cosine=0.3) == 0.45
    assert absolute_score(0.25, cosine=0.72) == 0.72
    assert absolute_score(0.25, qa_hit=True) == 0.85
    assert absolute_score(0.25, graph_hit=True) == 0.9


def test_order_value_lifts_agreement_by_at_most_the_lift() -> None:
    lone = order_value(0.5, 1 / 61, 2 / 61)
    agreed = order_value(0.5, 2 / 61, 2 / 61)
    assert agreed > lone and agreed == pytest.approx(0.5 + LIFT)
    assert order_value(0.5, 3 / 61, 2 / 61) == pytest.approx(0.5 + LIFT)  # (capped: never more than the lift)
    assert order_value(0.5, 2 / 61, 0.0) == 0.5  # (no leg found anything: no agreement to count)
    assert order_value(0.5, 2 / 61, 2 / 61, lift=0.1) == pytest.approx(0.6)


def test_qa_minimum_needs_a_second_opinion() -> None:
    from electa.scoring import qa_earns_minimum

    assert not qa_earns_minimum(1, 0)  # (the Q&A leg's own first place is no second opinion)
    assert qa_earns_minimum(1, 1)
    assert qa_earns_minimum(5, 1)
    # Dense's second or third place is no longer enough (a pair of the same subject, where no pair
    # covers the question, was lifted over the page that answers: bench/qa_minimum.py).
    assert not qa_earns_minimum(1, 2)
    assert not qa_earns_minimum(2, 3)
    assert not qa_earns_minimum(2, 7)
    # ... unless dense's first document is the page the pair points to, and the pair is in its first three.
    assert qa_earns_minimum(1, 2, page_first=True) and qa_earns_minimum(4, 3, page_first=True)
    assert not qa_earns_minimum(1, 4, page_first=True) and not qa_earns_minimum(1, 0, page_first=True)
    assert not qa_earns_minimum(0, 2, page_first=True)
    assert not qa_earns_minimum(4, 0)
    assert not qa_earns_minimum(0, 1)
    # Where the dense leg did not run there is none to ask: the Q&A leg's first place stands alone.
    assert qa_earns_minimum(1, 0, dense_ran=False) and not qa_earns_minimum(2, 0, dense_ran=False)


@pytest.mark.parametrize("text", ["Résumé of the CAFÉ", "e\u0301te\u0301 naïve", "İstanbul", "\u212aelvin", "ﬁnal ﬂow",
                                  "α-synuclein ± 5 µm", "Straße 日本語 ÅNGSTRÖM", "plain ascii E1042", ""])
def test_folding_only_the_non_ascii_runs_equals_folding_the_whole_text(text: str) -> None:
    # fold() decomposes only the non-ASCII stretches (a cold worker's scoring spent a third of
    # its time folding passages character by character); the result must not change.
    import unicodedata

    from electa.text import _STRIPPED, _SYMBOL, fold

    kept = "".join(ch for ch in unicodedata.normalize("NFKD", _SYMBOL.sub(" ", text.lower())) if not _STRIPPED.match(ch))
    assert fold(text) == unicodedata.normalize("NFC", kept.lower())

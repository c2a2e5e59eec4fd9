"""C4's meaning gap (RANK_RULES 10, ``electa.scoring.meaning_gap``): a candidate whose dense
cosine lies far below the search's best is held back in the order, never at the floor.

Found by measuring (bench/meaning_gap.py): the absolute score is the higher of coverage and the
cosine, so on StackFAQ a thread holding most of the question's words (coverage 0.73) and far from
its meaning (cosine 0.42) was served above the thread it paraphrases (cosine 0.55)."""

from __future__ import annotations

import pytest

from electa import Access, Caller, Engine, Order
from electa.ingest.page import Loaded
from electa.scoring import AGREEMENT_K, GAP_MARGIN, GAP_WEIGHT, LIFT, MATCHED_RANK, meaning_gap, order_value
from electa.served_order import PAGE_BOOST
from electa.types import LegHit, LegResult, LegStatus, QAPair
from tests.conftest import page

QUESTION = "Searching for the first message someone sent me"
DOCS = [
    page("paraphrase", "Find the first email a contact wrote to you", "Open the oldest conversation with that person.",
         "https://kb/first-email"),
    page("words", "Searching mail", "Searching for a message: type what was sent in the search box, first word first.",
         "https://kb/searching"),
    page("more-words", "Search operators", "Search for a message sent by someone with from: and the first word.",
         "https://kb/operators"),
]


def results(engine: Engine, fulltext: list[tuple[str, float]], dense: list[tuple[str, float]],
            qa: list[tuple[str, float]] | None = None) -> list[LegResult]:
    """Leg results naming documents by ext_id, each leg's hits at the scores given: the order's
    rules read only the legs' ranks and raw scores, so the cosines are set, not left to the
    test's hash embedder."""
    legs = ["fulltext", "dense", *(["qa"] if qa else [])]
    found, _ = engine.retrieve(QUESTION, Caller("acme"), legs=legs, depths=dict.fromkeys(legs, 50))
    units = engine.store.units(sorted({h.unit_id for r in found for h in r.hits}))
    unit_of = {}
    for r in found:
        for h in r.hits:
            unit_of.setdefault(units[h.unit_id].ext_id, h.unit_id)
    wanted = {ext for hits in (fulltext, dense, qa or []) for ext, _ in hits}
    assert wanted <= set(unit_of), wanted - set(unit_of)
    return [LegResult(leg, LegStatus.OK, tuple(LegHit(unit_of[ext], rank, score) for rank, (ext, score) in enumerate(hits, 1)))
            for leg, hits in (("fulltext", fulltext), ("dense", dense), ("qa", qa or [])) if hits]


@pytest.fixture
def gap_engine(engine: Engine) -> Engine:
    engine.ingest_loaded("kb", Loaded(DOCS), Access("acme"))
    return engine


def test_a_page_far_from_the_questions_meaning_is_held_back_below_the_one_dense_found_closest(gap_engine: Engine) -> None:
    # Full text finds the two pages holding the question's words first and the paraphrase (one
    # word) third; dense finds the paraphrase closest and the first of those far below it (the
    # second not at all).
    cosine, far = 0.7, 0.3
    found = results(gap_engine, [("words", 9.0), ("more-words", 8.0), ("paraphrase", 3.0)],
                    [("paraphrase", cosine), ("words", far)])
    hits = gap_engine.rank(QUESTION, found, order=Order.SCORED)
    by = {h.ext_id: h for h in hits}
    words, paraphrase, more = by["words"], by["paraphrase"], by["more-words"]
    assert words.score > paraphrase.score == pytest.approx(cosine)  # (coverage beats the cosine in the score)
    # Without the gap, agreement and coverage put the page of words first (the order before RANK_RULES 10).
    scale = 2 / (AGREEMENT_K + 1)
    assert order_value(words.score, words.fused, scale) > order_value(paraphrase.score, paraphrase.fused, scale)
    assert [h.ext_id for h in hits] == ["paraphrase", "words", "more-words"]
    assert words.sort_key == pytest.approx(order_value(words.score, words.fused, scale,
                                                       gap=GAP_WEIGHT * meaning_gap(cosine, far)))
    # A page the dense leg did not return is read at the lowest cosine it returned.
    assert more.sort_key == pytest.approx(order_value(more.score, more.fused, scale, gap=GAP_WEIGHT * meaning_gap(cosine, far)))
    assert paraphrase.sort_key == pytest.approx(order_value(paraphrase.score, paraphrase.fused, scale))
    # It orders only: the floor reads the score, so the pages of words pass as they did.
    assert words.passes and more.passes and words.score == pytest.approx(0.25 + 0.6 * 4 / 5)


def test_within_the_margin_nothing_moves(gap_engine: Engine) -> None:
    found = results(gap_engine, [("words", 9.0)], [("paraphrase", 0.6), ("words", 0.6 - GAP_MARGIN)])
    for h in gap_engine.rank(QUESTION, found, order=Order.SCORED):
        assert h.sort_key == pytest.approx(order_value(h.score, h.fused, 2 / (AGREEMENT_K + 1)))


def test_without_a_dense_leg_there_is_no_gap(gap_engine: Engine) -> None:
    found = results(gap_engine, [("words", 9.0), ("more-words", 8.0)], [])
    hits = gap_engine.rank(QUESTION, found, order=Order.SCORED)
    assert hits and all(h.sort_key == pytest.approx(h.score + LIFT * h.fused * (AGREEMENT_K + 1)) for h in hits)


def test_the_absolute_and_fused_orders_are_untouched(gap_engine: Engine) -> None:
    found = results(gap_engine, [("words", 9.0), ("more-words", 8.0)], [("paraphrase", 0.6), ("words", 0.15)])
    assert all(h.sort_key == h.score for h in gap_engine.rank(QUESTION, found, order=Order.ABSOLUTE))
    assert all(h.sort_key == h.fused for h in gap_engine.rank(QUESTION, found, order=Order.FUSED))


def test_a_mapped_cosine_past_one_is_read_as_one(gap_engine: Engine) -> None:
    """A mapped e5 score passes 1 for a near-copy of the question; the score reads it as 1, and
    so does the gap: a page within the margin of 1 is not held back by the overshoot."""
    found = results(gap_engine, [("words", 9.0)], [("paraphrase", 1.09), ("words", 1.0 - GAP_MARGIN)])
    by = {h.ext_id: h for h in gap_engine.rank(QUESTION, found, order=Order.SCORED)}
    assert by["words"].sort_key == pytest.approx(order_value(by["words"].score, by["words"].fused, 2 / (AGREEMENT_K + 1)))


def test_the_visitors_page_keeps_its_boost_and_its_own_gap(gap_engine: Engine) -> None:
    found = results(gap_engine, [("words", 9.0), ("more-words", 8.0)], [("paraphrase", 0.7), ("words", 0.3)])
    url = "https://kb/operators"
    by = {h.ext_id: h for h in gap_engine.rank(QUESTION, found, order=Order.SCORED, page_url=url)}
    page_hit = by["more-words"]  # (the dense leg did not return it: read at the lowest cosine, 0.3)
    assert page_hit.sort_key == pytest.approx(page_hit.score + LIFT + PAGE_BOOST - GAP_WEIGHT * meaning_gap(0.7, 0.3))


def test_a_pair_the_qa_leg_ranks_in_its_first_three_is_not_held_back(engine: Engine) -> None:
    engine.ingest_loaded("kb", Loaded(DOCS, qa_pairs=[QAPair("pair", QUESTION, "Sort by date, oldest first.")]), Access("acme"))
    for rank in (1, MATCHED_RANK, MATCHED_RANK + 1):
        # The Q&A leg puts the pair at ``rank`` (documents before it fill the places above).
        above = [("words", 5.0), ("more-words", 4.0), ("paraphrase", 3.0)][: rank - 1]
        found = results(engine, [("words", 9.0)], [("paraphrase", 0.7), ("pair", 0.3)], qa=[*above, ("pair", 2.0)])
        hits = engine.rank(QUESTION, found, order=Order.SCORED)
        pair = next(h for h in hits if h.ext_id == "pair")
        legs = {v.leg for h in hits for v in h.votes}
        scale = sum(1 / (AGREEMENT_K + 1) for _ in legs)
        held = GAP_WEIGHT * meaning_gap(0.7, 0.3) if rank > MATCHED_RANK else 0.0
        assert pair.sort_key == pytest.approx(order_value(pair.score, pair.fused, scale, gap=held)), rank
    assert GAP_WEIGHT * meaning_gap(0.7, 0.3) > 0

"""A question's contractions add no clitic to its words (RANK_RULES 11, ``electa.text.without_clitics``)
in every place that reads a question word by word. Found reading the stop list: an apostrophe
parts words, so "doesn't" read as "doesn", a content word, and "I'm" as "m"."""

from __future__ import annotations

from pathlib import Path

from electa.answer.extractive import _content
from electa.answer.prompt import Turn
from electa.answer.rewrite import needs_rewrite
from electa.ingest.figures import asked_words
from electa.modes.heuristics import content_words, expand_query
from electa.text.analysis import query_terms
from electa.types import Caller, Document
from tests.conftest import engine_with


def test_a_follow_up_that_only_says_it_does_not_work_leans_on_the_turn_before() -> None:
    """"Doesn't work?" has one content word: it is a follow-up to be rewritten (it read as two)."""
    assert needs_rewrite("Doesn't work?", [Turn("How do I sync Stripe?", "Open Settings > Billing.")])


def test_the_modes_and_the_figures_read_no_clitic_as_a_word() -> None:
    assert content_words("Why doesn't Stripe sync?") == ["stripe", "sync"]
    assert expand_query("Why doesn't Stripe sync?")[0] == "stripe sync"
    assert asked_words("What does the editor look like? I'm lost") == ["editor", "lost"]


def test_the_answerer_reads_no_clitic_as_a_word() -> None:
    assert _content("I'm here.") == frozenset()  # a bare reply: nothing but function words
    assert _content("It doesn't sync.") == frozenset({"sync"})


def test_a_verb_outside_the_stop_list_keeps_its_contraction_as_the_page_writes_it() -> None:
    """From the review: "mustn't" read as "must not" searched "must", while a page writing
    "mustn't" is indexed under "mustn": the two no longer met."""
    assert "en·mustn" in query_terms("Why mustn't I rebase?") and "en·must" not in query_terms("Why mustn't I rebase?")


def test_the_title_rescue_names_no_page_by_a_contraction(tmp_path: Path) -> None:
    """A failing page titled "Printer doesn't print" was rescued for "Why doesn't my scanner
    scan?" by its title's "doesn", a distinctive word of four letters or more."""
    engine = engine_with(tmp_path, [Document("p", "Printer doesn't print", "Check the cable.", "https://h/p")])
    try:
        unit = engine.search("printer cable", Caller("acme"), top=5).hits[0]
        assert engine.rescue.rescued("Why doesn't my scanner scan?", [(unit.unit_id, unit.title)], Caller("acme")) == {}
        assert engine.rescue.rescued("Why doesn't my printer scan?", [(unit.unit_id, unit.title)], Caller("acme")) == {
            unit.unit_id: "printer"}
    finally:
        engine.close()


def test_stacked_clitics_go_together_and_a_question_of_nothing_else_is_searched_as_written() -> None:
    """From the second review: "I'd've paid" kept "ve" (the first clitic went, the second had no
    word left to go with), and "Doesn't?" alone, spelled out, searched "does" and "not" where a
    page writing "doesn't" is indexed under "doesn" and "t"."""
    assert query_terms("I'd've paid, you'd've too") == ["en·paid"]
    assert query_terms("Doesn't?") == ["en·doesn", "en·t"]

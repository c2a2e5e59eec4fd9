"""Follow-up rewrite (E3), business name (E4), current-page boost (D4), title-match rescue (B6)."""

from __future__ import annotations

import pytest

from electa import Access, Caller, Engine, Order
from electa.answer.prompt import AgentProfile, Turn
from electa.answer.rewrite import business_name, needs_rewrite, standalone_query, with_business_name
from electa.ingest.page import Loaded
from electa.scoring import GAP_WEIGHT, LIFT, meaning_gap
from electa.served_order import PAGE_BOOST
from electa.types import Document, LegHit, LegResult, LegStatus, Section

PREVIOUS = [Turn("How much is the Growth plan?", "Growth is $29/mo per seat [1].")]


def test_gate_leaves_first_turns_and_self_contained_questions_alone() -> None:
    assert not needs_rewrite("and for the annual plan?", [])
    assert not needs_rewrite("How do I connect QuickBooks to my workspace?", PREVIOUS)
    assert needs_rewrite("and for the annual plan?", PREVIOUS)
    assert needs_rewrite("what about Starter?", PREVIOUS)
    assert needs_rewrite("does it include the API?", PREVIOUS)


def test_follow_up_is_rewritten_with_the_previous_turn() -> None:
    assert standalone_query("and for the annual plan?", PREVIOUS) == "How much is the Growth plan? for the annual plan"
    assert standalone_query("what about Starter?", PREVIOUS) == "How much is the Growth plan? Starter"


def test_llm_rewriter_is_tried_first_and_its_failure_falls_back() -> None:
    assert standalone_query("and annually?", PREVIOUS, lambda h, m: "Growth plan annual price") == "Growth plan annual price"

    def broken(history: object, message: str) -> str:
        raise TimeoutError("rewrite took too long")

    assert standalone_query("and annually?", PREVIOUS, broken) == "How much is the Growth plan? annually"
    assert standalone_query("and annually?", PREVIOUS, lambda h, m: "  ") == "How much is the Growth plan? annually"


def test_business_name_rules() -> None:
    assert business_name("Zepcruit Agent") == "Zepcruit"
    assert business_name("Assistant") is None and business_name("Sales Bot") is None
    assert with_business_name("what is the starting price", "Tallyo", lambda n: True) == "what is the starting price — Tallyo"
    assert with_business_name("Tallyo pricing", "Tallyo", lambda n: True) == "Tallyo pricing"
    assert with_business_name("what is the starting price", "Tallyo", lambda n: False) == "what is the starting price"


def doc(ext: str, title: str, text: str, url: str) -> Document:
    return Document(ext, title, text, url, sections=(Section((), text),))


def test_ask_rewrites_follow_ups_and_names_the_business(engine: Engine) -> None:
    engine.ingest_loaded("a", Loaded([
        doc("g", "Growth plan", "Tallyo Growth costs $29/mo per seat, or $278 per seat per year on the annual plan.",
            "https://t/growth"),
        doc("s", "Slack", "Tallyo sends invoice events to Slack channels.", "https://t/slack")]), Access("t"))
    events = list(engine.ask("and for the annual plan?", Caller("t"), history=PREVIOUS,
                             agent=AgentProfile(name="Tallyo Assistant")))
    done = next(e for e in events if e.kind == "done").data
    assert done["search_query"] == "How much is the Growth plan? for the annual plan — Tallyo"
    cites = next(e for e in events if e.kind == "citations").data["citations"]
    assert cites and cites[0]["url"] == "https://t/growth"  # type: ignore[index]


def test_current_page_is_boosted_in_the_order(engine: Engine) -> None:
    engine.ingest_loaded("a", Loaded([doc("1", "Invoices", "invoices reminders exports", "https://t/1"),
                                      doc("2", "Invoices too", "invoices reminders exports today", "https://t/2")]),
                         Access("t"))
    plain = engine.search("invoices reminders exports", Caller("t"), order=Order.ABSOLUTE)
    second = plain.hits[1].url
    boosted = engine.search("invoices reminders exports", Caller("t"), page_url=second)
    assert boosted.hits[0].url == second


def test_the_current_page_outweighs_the_legs_agreement_on_an_equal_score(engine: Engine) -> None:
    # D4: the page the visitor reads beats another as relevant (here: the same coverage) even
    # when both legs put the other first and only full text found the visitor's page. With
    # the C4 lift at 0.25, agreement alone outweighed the +0.15 until the boost counted the lift.
    engine.ingest_loaded("a", Loaded([doc("1", "Invoices", "invoices reminders exports", "https://t/1"),
                                      doc("2", "Billing", "invoices reminders exports", "https://t/2")]),
                         Access("t"))
    text = "invoices reminders exports"
    found = {h.url: h.unit_id for h in engine.search(text, Caller("t"), legs=["fulltext"]).hits}
    first, visited = found["https://t/1"], found["https://t/2"]
    results = [LegResult("fulltext", LegStatus.OK, (LegHit(first, 1, 9.0), LegHit(visited, 2, 8.0))),
               LegResult("dense", LegStatus.OK, (LegHit(first, 1, 0.0),))]
    plain = engine.rank(text, results, k=1.0)
    assert [h.url for h in plain] == ["https://t/1", "https://t/2"] and plain[0].score == plain[1].score
    assert engine.rank(text, results, k=1.0, page_url="https://t/2")[0].url == "https://t/2"


def test_the_current_page_never_beats_one_scored_more_than_the_boost_and_the_lift_above_it(engine: Engine) -> None:
    # The visitor's page (cosine 0.5, both legs' first) against one with cosine 0.95 that only
    # the dense leg found, second: 0.45 apart, more than the boost (0.15) and the lift (0.25)
    # together, so the better page stays first. Adding the lift on top of the page's own
    # agreement had put the visitor's page first (1.15 against 1.07).
    engine.ingest_loaded("a", Loaded([doc("1", "Invoices", "invoices reminders exports", "https://t/1"),
                                      doc("2", "Billing", "billing", "https://t/2")]), Access("t"))
    text = "invoices reminders exports"
    units = {h.url: h.unit_id for h in engine.search(text, Caller("t"), legs=["dense"], top=5).hits}
    better, visited = units["https://t/1"], units["https://t/2"]
    results = [LegResult("fulltext", LegStatus.OK, (LegHit(visited, 1, 9.0),)),
               LegResult("dense", LegStatus.OK, (LegHit(visited, 1, 0.5), LegHit(better, 2, 0.95)))]
    hits = engine.rank(text, results, page_url="https://t/2")
    assert [(h.url, h.score) for h in hits] == [("https://t/1", 0.95), ("https://t/2", 0.5)]
    # (and, like any page, it is held back by how far its cosine lies below the best: RANK_RULES 10)
    assert hits[1].sort_key == pytest.approx(0.5 + LIFT + PAGE_BOOST - GAP_WEIGHT * meaning_gap(0.95, 0.5))


def test_the_current_page_is_boosted_for_an_agent_tuned_to_plain_fusion(engine: Engine) -> None:
    # An agent whose tune chose plain RRF (lift None) is served the fused order, which had no D4
    # boost at all: the visitor's page, second in both legs, stayed second. It now gains 0.15 on
    # the fused value's 0-1 scale: enough to pass a page one place ahead in both legs, not one
    # that only one leg found it beside.
    engine.ingest_loaded("a", Loaded([doc("1", "Invoices", "invoices reminders exports", "https://t/1"),
                                      doc("2", "Billing", "invoices reminders exports", "https://t/2"),
                                      doc("3", "Refunds", "invoices reminders exports", "https://t/3")]),
                         Access("t"))
    engine.store.set_agent_settings("t", "default", {"fusion": {"lift": None}})
    text = "invoices reminders exports"
    found = {h.url: h.unit_id for h in engine.search(text, Caller("t"), legs=["fulltext"]).hits}
    first, visited, alone = found["https://t/1"], found["https://t/2"], found["https://t/3"]
    results = [LegResult("fulltext", LegStatus.OK, (LegHit(first, 1, 9.0), LegHit(visited, 2, 8.0), LegHit(alone, 3, 7.0))),
               LegResult("dense", LegStatus.OK, (LegHit(first, 1, 0.5), LegHit(visited, 2, 0.4)))]
    fused = engine.rank(text, results, order=Order.FUSED)
    assert [h.url for h in fused] == ["https://t/1", "https://t/2", "https://t/3"]
    assert [h.url for h in engine.rank(text, results, order=Order.FUSED, page_url="https://t/2")][:2] == [
        "https://t/2", "https://t/1"]
    assert [h.url for h in engine.rank(text, results, order=Order.FUSED, page_url="https://t/3")][-1] == "https://t/3"
    # Served: the agent's own search on the real legs puts the visitor's page first.
    plain = [h.url for h in engine.search(text, Caller("t", "default")).hits]
    boosted = engine.search(text, Caller("t", "default"), page_url=plain[1]).hits
    assert boosted[0].url == plain[1]


def test_title_match_rescues_a_brand_page_under_the_floor(engine: Engine) -> None:
    engine.ingest_loaded("a", Loaded([
        doc("b", "Buy EPSON | Projectors", "Shop our range. Free delivery. Call us.", "https://s/epson"),
        doc("c", "Cables", "HDMI cables and adapters in every length.", "https://s/cables")]), Access("s"))
    hits = engine.search("Do you carry Epson projectors?", Caller("s"), floor=0.99).hits
    epson = next(h for h in hits if h.url == "https://s/epson")
    assert epson.passes and epson.rescued_by in {"epson", "projectors"}
    assert not any(h.passes for h in hits if h.url == "https://s/cables")


class _ScriptedLLM:
    name = "scripted"

    def __init__(self, reply: str, delay: float = 0.0) -> None:
        self.reply, self.delay, self.calls = reply, delay, 0

    def stream(self, prompt: object, question: str):  # type: ignore[no-untyped-def]
        import time

        self.calls += 1
        time.sleep(self.delay)
        yield self.reply


def test_llm_rewriter_caches_per_conversation_and_times_out() -> None:
    from electa.answer.rewrite import LlmRewriter

    llm = _ScriptedLLM("Growth plan price per year\nextra line")
    rewriter = LlmRewriter(llm, timeout_s=1.0)
    first = rewriter.for_conversation("c1")
    assert standalone_query("and annually?", PREVIOUS, first) == "Growth plan price per year"
    assert standalone_query("and annually?", PREVIOUS, first) == "Growth plan price per year"
    assert llm.calls == 1
    standalone_query("and annually?", PREVIOUS, rewriter.for_conversation("c2"))
    assert llm.calls == 2
    slow = LlmRewriter(_ScriptedLLM("too late", delay=0.5), timeout_s=0.05).for_conversation("c3")
    assert standalone_query("and annually?", PREVIOUS, slow) == "How much is the Growth plan? annually"

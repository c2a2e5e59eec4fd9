"""The ask pipeline: reset on a failed answerer, bookkeeping for cached asks, the two floors,
weights that name real legs, and no exception text in the events (issue 8)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from electa import Access, Caller, ConfigError, Engine, Settings
from electa.answer.passages import ANSWER_WINDOW
from electa.answer.prompt import Prompt
from electa.ingest.page import Loaded
from electa.testing.fakes import ScriptedAnswerer
from electa.types import AnswerEvent
from tests.conftest import refund_and_pricing


@pytest.fixture
def kb(engine: Engine) -> Engine:
    engine.ingest_loaded("a", refund_and_pricing(), Access("org-a"))
    return engine


def _fails_midway() -> ScriptedAnswerer:
    """An LLM that says something wrong, then dies (issue 8: "No, we never refund [1]...")."""
    return ScriptedAnswerer(["No, we never refund; ", "it costs $99/mo [1]. "],
                            ConnectionError("upstream 10.0.0.7:8000 reset by peer (api key sk-live-123)"))


def _shown(events: list[AnswerEvent]) -> str:
    """The text a client shows that honours the contract: a reset discards what came before."""
    shown: list[str] = []
    for ev in events:
        if ev.kind == "reset":
            shown.clear()
        elif ev.kind == "token":
            shown.append(str(ev.data["token"]))
    return "".join(shown)


def test_a_failed_answerer_is_withdrawn_by_a_reset_before_the_fallback(kb: Engine) -> None:
    events = list(kb.ask("refund annual plans days", Caller("org-a"), answerer=_fails_midway()))
    kinds = [e.kind for e in events]
    assert "reset" in kinds, "the client cannot know the partial answer was withdrawn"
    first_reset = kinds.index("reset")
    assert kinds[:first_reset] == ["token", "token"] and "token" in kinds[first_reset:]
    text = _shown(events)
    assert "never refund" not in text and "30 days" in text
    done = events[-1].data
    # The checks read only the text after the reset: the withdrawn "$99/mo" is not flagged.
    assert done["unsupported"] == {"links": [], "prices": [], "plans": []}


def test_exception_text_never_reaches_the_events(kb: Engine, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="electa.ask"):
        events = list(kb.ask("refund annual plans days", Caller("org-a"), answerer=_fails_midway()))
    shown = repr([e.data for e in events])
    assert "10.0.0.7" not in shown and "sk-live" not in shown and "ConnectionError" not in shown
    done = events[-1].data
    assert done["fallback"] == "the answerer failed; answered extractively"
    incident = str(done["incident"])
    assert len(incident) == 12
    assert any(e.kind == "reset" and e.data["incident"] == incident for e in events)
    # The details are in the server log, under the same incident id.
    assert incident in caplog.text and "sk-live-123" in caplog.text


def test_bookkeeping_counts_the_text_after_the_reset(kb: Engine) -> None:
    events = list(kb.ask("refund annual plans days", Caller("org-a", "default"), answerer=_fails_midway(),
                         conversation_id="c1", record=True))
    [(question, answer)] = kb.store.recent_turns("org-a", "default", "c1")
    assert question == "refund annual plans days" and answer == _shown(events) and "never" not in answer
    [usage] = kb.store.usage("org-a")
    assert usage["questions"] == 1 and usage["answer_chars"] == len(answer)


def test_engine_ask_records_nothing_unless_asked(kb: Engine) -> None:
    list(kb.ask("zebra migration patterns", Caller("org-a", "default")))
    assert kb.store.gaps("org-a") == [] and kb.store.usage("org-a") == []
    list(kb.ask("zebra migration patterns", Caller("org-a", "default"), record=True))
    assert [g["question"] for g in kb.store.gaps("org-a")] == ["zebra migration patterns"]


def _calibrate(engine: Engine, probability: float, calibrated_floor: float) -> None:
    """An agent whose calibrators give every hit the same probability."""
    step = {"kind": "isotonic", "xs": [-1e9], "ys": [probability]}
    engine.store.set_agent_settings("org-a", "default", {
        "calibration": {leg: step for leg in ("fulltext", "dense", "qa")}, "calibrated_floor": calibrated_floor,
        "unit_vectors": "pooled"})


def test_an_absolute_floor_is_never_compared_with_a_probability(kb: Engine) -> None:
    caller = Caller("org-a", "default")
    plain = kb.search("annual plans refunded within days of purchase", caller)
    assert plain.passing and plain.passing[0].score > 0.3
    _calibrate(kb, probability=0.2, calibrated_floor=0.1)
    # Absolute floor 0.3: the hits score above it, and their probability (0.2) clears the
    # calibrated floor (0.1). The old code compared 0.3 with the probability 0.2: nothing passed.
    tuned = kb.search("annual plans refunded within days of purchase", caller, floor=0.3)
    assert tuned.passing and tuned.passing[0].probability == 0.2
    assert all(h.score >= 0.3 for h in tuned.passing)
    # The calibrated floor is its own parameter, on its own scale.
    assert not kb.search("annual plans refunded within days of purchase", caller, calibrated_floor=0.5).passing
    # And an absolute floor above every score still rejects, calibrated or not.
    assert not kb.search("annual plans refunded within days of purchase", caller, floor=0.999).passing


@pytest.mark.parametrize(("weights", "message"), [
    ({"bm25": 1.0}, "unknown leg 'bm25' in weights; valid legs: fulltext, dense, qa"),
    ({"dense": -1.0}, "weight of leg 'dense' must be a finite number >= 0"),
    ({"dense": float("nan")}, "weight of leg 'dense' must be a finite number >= 0"),
    ({"qa": float("inf")}, "weight of leg 'qa' must be a finite number >= 0"),
])
def test_search_refuses_weights_for_unknown_legs_or_below_zero(kb: Engine, weights: dict[str, float],
                                                               message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        kb.search("refund", Caller("org-a"), weights=weights)
    assert kb.search("refund", Caller("org-a"), weights={"dense": 0.0, "fulltext": 2}).hits


def test_a_cached_answer_never_outlives_a_change_to_its_agents_settings(kb: Engine) -> None:
    """Settings are part of the cache key (their digest), so a change needs no store-wide
    generation move, which would rebuild every tenant's full-text image."""
    from electa.answer.pipeline import AskPipeline, AskRequest
    from electa.api.cache import ResultCache

    pipeline = AskPipeline(kb, kb.store, cache=ResultCache(60.0), record=False)
    ask = AskRequest("Are annual plans refunded?", Caller("org-a", "default"))
    def done() -> dict[str, object]:
        events = list(pipeline.run(ask))  # drained: the cache is written after the stream
        return events[-1].data
    assert done()["cached"] is False and done()["cached"] is True
    generation = kb.store.generation
    kb.store.set_agent_settings("org-a", "default", {"retrieval": {"threshold": 0.99}})
    assert kb.store.generation == generation
    changed = done()
    assert changed["cached"] is False and changed["strict"] is True


def test_cli_ask_walks_the_same_pipeline_and_keeps_the_same_books(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from electa.cli.main import cli

    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "pricing.md").write_text("# Pricing\nThe Free plan costs $0/mo. Growth costs $29/mo per seat.\n", encoding="utf-8")
    data = str(tmp_path / "data")
    runner = CliRunner()
    common = ["--data", data, "--embedder", "hash", "--org", "acme"]
    assert runner.invoke(cli, ["ingest", str(kb), *common, "--no-progress"]).exit_code == 0

    def ask(question: str, *extra: str) -> list[dict[str, object]]:
        out = runner.invoke(cli, ["ask", question, *common, "--json", *extra])
        assert out.exit_code == 0, out.output
        return [json.loads(line) for line in out.output.splitlines()]

    ask("How much is the Growth plan?", "--conversation", "c1")
    follow = ask("and for the free plan?", "--conversation", "c1")[-1]
    assert str(follow["search_query"]).startswith("How much is the Growth plan?")
    with Engine.open(data, Settings(), "hash") as engine:
        assert [q for q, _ in engine.store.recent_turns("acme", "default", "c1")] == [
            "How much is the Growth plan?", "and for the free plan?"]
        # The agent's stored settings apply: an absolute threshold nothing reaches.
        engine.store.set_agent_settings("acme", "default", {"retrieval": {"threshold": 0.99}})
    assert ask("How much is the Growth plan?")[-1]["strict"] is True
    with Engine.open(data, Settings(), "hash") as engine:
        latest = engine.store.gaps("acme", "default")[0]  # newest first; one page only: the others were low confidence
        assert (latest["question"], latest["reason"]) == ("How much is the Growth plan?", "nothing passed the floor")
        assert engine.store.usage("acme")[0]["questions"] == 3


def _failing_first(engine: Engine, monkeypatch: pytest.MonkeyPatch, failing: int) -> list[int]:
    """``engine.search`` as a larger C4 lift can order it: ``failing`` hits the floor rejects
    ahead of the passing ones, cut to the ``top`` asked for (as the engine cuts). Returns the
    ``top`` of each search."""
    from dataclasses import replace

    from electa.types import SearchResult

    real, asked = engine.search, []

    def search(text: str, caller: Caller, **kwargs: object) -> SearchResult:
        top = int(kwargs.pop("top", 10))  # type: ignore[call-overload]
        asked.append(top)
        found = real(text, caller, top=50, **kwargs)  # type: ignore[arg-type]
        [best] = found.passing[:1]
        rejected = [replace(best, unit_id=-i, document_id=-i, title=f"Unrelated {i}", text="Nothing here.",
                            passes=False) for i in range(1, failing + 1)]
        return replace(found, hits=tuple([*rejected, *found.passing][:top]))

    monkeypatch.setattr(engine, "search", search)
    return asked


def _asked(engine: Engine, question: str) -> tuple[Prompt, list[AnswerEvent]]:
    """The prompt the ask pipeline built for ``question`` (org-a, no record) and its events."""
    from electa.answer.pipeline import AskPipeline, AskRequest

    seen: list[Prompt] = []
    events = list(AskPipeline(engine, engine.store, record=False, on_prompt=seen.append)
                  .run(AskRequest(question, Caller("org-a"))))
    [prompt] = seen
    return prompt, events


def test_the_answer_reads_passing_hits_below_failing_ones(kb: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    # The ask pipeline read the first ten hits only: ten failing hits ordered above the refund
    # page left the prompt without it (no passage, a strict answer).
    asked = _failing_first(kb, monkeypatch, failing=12)
    prompt, events = _asked(kb, "How long do annual refunds take?")
    assert [p.hit.title for p in prompt.sources][:1] == ["Refund policy"]
    assert events[-1].data["strict"] is False and "30 days" in _shown(events)
    assert len(asked) == 1 and asked[0] > 12


def test_engine_context_reads_passing_hits_below_failing_ones(kb: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    _failing_first(kb, monkeypatch, failing=12)
    assert [p.hit.title for p in kb.context("How long do annual refunds take?", Caller("org-a"))][:1] == ["Refund policy"]
    # A caller's own ``top`` is what it asked for.
    assert kb.context("How long do annual refunds take?", Caller("org-a"), top=10) == []


def test_the_answer_window_holds_every_passage_asked_for() -> None:
    from electa.answer.passages import answer_window
    from electa.modes.protocol import MERGE_DEPTH

    # (the merging modes' depth: at it, their searches are the same for an answer as for a search)
    assert ANSWER_WINDOW == MERGE_DEPTH
    assert answer_window(4) == ANSWER_WINDOW and answer_window(ANSWER_WINDOW + 5) == ANSWER_WINDOW + 5


def test_a_wider_window_keeps_the_first_ten_and_brings_the_passing_hits_after_them(
        engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    # A real search whose order puts failing hits above passing ones (a lift of 5 orders by the
    # legs' agreement; the floor still reads the score): the answer's window adds the passing
    # hits after the tenth to the prompt, and the first ten hits (what /v1/search shows by
    # default) are the same, passing or not.
    import electa.engine_search
    from tests.conftest import page

    monkeypatch.setattr(electa.engine_search, "LIFT", 5.0)
    # Pages of one question word each fail the floor (coverage 1/7) yet both legs rank them
    # high; long guides with two question words pass and rank lower.
    words = ["refund", "invoice", "export", "seat", "annual", "csv", "limit"]
    filler = [f"filler{j}" for j in range(40)]
    engine.ingest_loaded("many", Loaded(
        [page(f"s{i}", f"Note {i}", words[i % 7]) for i in range(28)]
        + [page(f"l{i}", f"Guide {i}", " ".join([words[i % 7], words[(i + 3) % 7], *filler[i: i + 30]])) for i in range(6)]),
        Access("org-a"))
    question = " ".join(words)
    ten = engine.search(question, Caller("org-a"), top=10)
    wide = engine.search(question, Caller("org-a"), top=ANSWER_WINDOW)
    passes = [h.passes for h in wide.hits]
    assert sum(passes[:10]) < 4 and any(passes[10:]), "the corpus must order failing hits above passing ones"
    assert [(h.unit_id, h.passes, h.score) for h in wide.hits[:10]] == [(h.unit_id, h.passes, h.score) for h in ten.hits]
    prompt, _ = _asked(engine, question)
    # (the default four passages: the three in the first ten and the next passing one after it)
    assert [p.hit.unit_id for p in prompt.sources] == [h.unit_id for h in wide.passing[:4]]
    assert len(prompt.sources) > sum(passes[:10])


def test_the_confidence_is_that_of_the_passages_the_answer_read(kb: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    # A fifth passing hit scored above the four passages did not inform the answer.
    from dataclasses import replace

    from electa.types import SearchResult

    real = kb.search

    def search(text: str, caller: Caller, **kwargs: object) -> SearchResult:
        found = real(text, caller, **kwargs)  # type: ignore[arg-type]
        [best] = found.passing[:1]
        read = [replace(best, unit_id=-i, document_id=-i, score=0.7 if i == 2 else 0.5, probability=None,
                        text=f"Annual refunds {i}.") for i in range(1, 4)]
        unread = replace(best, unit_id=-9, document_id=-9, score=0.99, probability=None, text="Unread.")
        return replace(found, hits=(replace(best, score=0.6, probability=None), *read, unread))

    monkeypatch.setattr(kb, "search", search)
    done = list(kb.ask("How long do annual refunds take?", Caller("org-a")))[-1].data
    # (the best of the four passages read: the third, not the first)
    assert done["confidence"] == 0.7 and done["low_confidence"] is False



def test_the_prompt_reads_a_long_page_where_the_questions_words_are(engine: Engine) -> None:
    """The ask pipeline cuts its passages as :meth:`Engine.context` does: from where the
    question's words are (the "ENOENT" line past the first 1,000 characters)."""
    from electa.types import Document, Section

    filler = "\n".join(f"* `E{i:03d}`: the system said no while it worked on request {i}." for i in range(30))
    engine.ingest_loaded("a", Loaded([Document("errors", "Common system errors", "", "https://kb/errors", sections=(
        Section((), filler + "\n* `ENOENT` (No such file or directory): a component of the path does not exist."),))]),
        Access("org-a"))
    prompt, _ = _asked(engine, "What is ENOENT?")
    assert "ENOENT" in prompt.sources[0].text

"""The packaged local LLM (SmolLM2-135M GGUF) answers for real, streamed, offline."""

from __future__ import annotations

import pytest

from electa import Access, Caller, Engine
from electa.answer.local_llm import LocalSmolAnswerer
from electa.ingest.loaders import Loaded
from electa.types import Document, Section

pytestmark = pytest.mark.integration


def test_local_model_streams_an_answer_over_the_sources(engine: Engine) -> None:
    text = "The Growth plan costs $29/mo per seat."
    engine.ingest_loaded("a", Loaded([Document("g", "Growth plan", text, "https://t/growth",
                                               sections=(Section((), text),))]), Access("t"))
    events = list(engine.ask("How much does the Growth plan cost?", Caller("t"),
                             answerer=LocalSmolAnswerer(max_new_tokens=24)))
    tokens = [str(e.data["token"]) for e in events if e.kind == "token"]
    done = next(e for e in events if e.kind == "done").data
    assert len(tokens) > 3 and "".join(tokens).strip()
    assert done["answerer"] == "local" and done["fallback"] == ""

"""The local LLM answers for real, streamed, offline: the packaged SmolLM2-135M GGUF always;
the Qwen2.5-Coder GGUFs when `electa models install` has put them in the data directory."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from electa import Access, Caller, Engine
from electa.answer.answerers import create_answerer
from electa.answer.checks import attach_citations
from electa.answer.local_llm import LocalSmolAnswerer
from electa.answer.models import CATALOGUE, model_path
from electa.answer.prompt import AgentProfile, Prompt, build_prompt
from electa.config import Settings
from electa.ingest.page import Loaded
from electa.types import ChunkKind, Document, Hit, Passage, Section

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


class _Recording:
    """Passes an answerer's pieces on and keeps them: what the model wrote, before the pipeline."""

    def __init__(self, inner: object) -> None:
        self.inner, self.name, self.raw = inner, inner.name, []  # type: ignore[attr-defined]

    def stream(self, prompt: Prompt, question: str) -> Iterator[str]:
        for piece in self.inner.stream(prompt, question):  # type: ignore[attr-defined]
            self.raw.append(piece)
            yield piece


def test_the_registered_local_answerer_streams_and_its_answer_gets_citations(engine: Engine) -> None:
    text = "The Growth plan costs $29/mo per seat billed monthly. It includes the public API."
    engine.ingest_loaded("a", Loaded([Document("g", "Growth plan", text, "https://t/growth",
                                               sections=(Section((), text),))]), Access("t"))
    local = create_answerer("local", Settings(local_model="smollm2"))  # ELECTA_LOCAL_MODEL's default
    local.max_new_tokens = 24  # type: ignore[attr-defined]
    recording = _Recording(local)
    events = list(engine.ask("How much does the Growth plan cost?", Caller("t"), answerer=recording))
    tokens = [str(e.data["token"]) for e in events if e.kind == "token"]
    said = "".join(tokens)
    cites = next(e for e in events if e.kind == "citations").data["citations"]
    assert len(tokens) > 3 and "".join(recording.raw).strip()
    # What the visitor got is what the model wrote with the [n] of the matching source attached.
    assert said == attach_citations("".join(recording.raw), [_passage(1, "Growth plan", text, "https://t/growth")])
    assert "[1]" in said and [c["url"] for c in cites] == ["https://t/growth"]  # type: ignore[index]


def _passage(i: int, title: str, text: str, url: str) -> Passage:
    return Passage(Hit(i, i, i, ChunkKind.PARENT, title, text, url, str(i), 0.0, 0.9, True, ()), text)


E1042 = ("E1042 means the export is larger than the limit of 100,000 rows for one CSV file.\n\n## Fix\n"
         "- Narrow the date range of the report before exporting, or\n- use **Reports > Scheduled exports**, which "
         "splits large exports into several files and e-mails a ZIP archive.")


@pytest.mark.parametrize("name", ["qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"])
def test_an_installed_qwen_model_answers_from_the_sources(name: str) -> None:
    settings = Settings(local_model=name)
    if not model_path(name, settings).is_file():
        pytest.skip(f"{name} is not installed in {settings.data_dir}/models: run `{CATALOGUE[name].install_command(settings)}` "
                    "(0.5-1.1 GB; CI does not download it)")
    answerer = create_answerer("local", settings)
    answerer.max_new_tokens = 60  # type: ignore[attr-defined]
    sources = [_passage(1, "Error E1042 when exporting to CSV", E1042, "https://help.tallyo.example/errors/e1042")]
    question = "Error E1042 when exporting to CSV"
    pieces = list(answerer.stream(build_prompt(AgentProfile(name="Ava", business="Tallyo"), question, sources), question))
    said = attach_citations("".join(pieces), sources)
    assert len(pieces) > 3 and "100,000" in said and "[1]" in said, said
    assert "&gt;" not in said and said.strip() != question  # answered, not echoed, and nothing HTML-escaped

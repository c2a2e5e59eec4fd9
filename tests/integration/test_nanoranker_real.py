"""The packaged nanoranker scorer with its real weights (SPEC D1): the scores are the package's
own, a passage is embedded once, a deadline leaves a prefix, and the rerank judge runs on it
through the engine on the sample knowledge base."""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

import numpy as np
import pytest

from electa import Access, Caller, Engine
from electa.config import Settings
from electa.embedders.hashing import HashEmbedder
from electa.judges.scorers import NanorankerScorer, open_scorer

pytestmark = pytest.mark.integration

nanoranker = pytest.importorskip("nanoranker")


def nanoranker_version() -> str:
    return version("nanoranker")

PASSAGES = ["Refunds: annual plans are refunded in full within 30 days of purchase.",
            "Error E1042 appears when a CSV export has more than a million rows; split the export by month.",
            "Our office is in Berlin, open from nine to five.",
            "Reembolsos: los planes anuales se reembolsan íntegramente en 30 días."]


@pytest.fixture(scope="module")
def scorer() -> NanorankerScorer:
    made = open_scorer("nanoranker")
    assert isinstance(made, NanorankerScorer) and made.name == f"nanoranker:{nanoranker_version()}"
    return made


def test_scores_are_the_packages_own_before_its_normalisation(scorer: NanorankerScorer) -> None:
    for question in ("Can I get my money back?", "E1042 exporting CSV", "¿Me devuelven el dinero?"):
        ours = scorer.score(question, PASSAGES)
        theirs = dict(nanoranker.rank(question, PASSAGES, top_n=len(PASSAGES)))
        total = sum(ours)
        np.testing.assert_allclose([s / total for s in ours], [theirs[p] for p in PASSAGES], rtol=1e-5)
    assert int(np.argmax(scorer.score("E1042 exporting CSV", PASSAGES))) == 1
    # A batch's scores do not depend on what else is in it (the package's rank() divides by the sum).
    assert scorer.score("E1042 exporting CSV", PASSAGES[:2]) == pytest.approx(
        scorer.score("E1042 exporting CSV", PASSAGES)[:2], rel=1e-6)


def test_a_passage_is_embedded_once_and_a_passed_deadline_leaves_a_prefix(scorer: NanorankerScorer) -> None:
    calls: list[str] = []
    real = scorer._embed
    scorer._embed = lambda text: (calls.append(text), real(text))[1]  # type: ignore[method-assign]
    try:
        fresh = [f"{p} ({i})" for i, p in enumerate(PASSAGES)]
        first = scorer.score("refund", fresh)
        again = scorer.score("refund", fresh)
        assert first == again and calls == ["refund", *fresh]  # the second call embedded nothing
        calls.clear()
        assert scorer.score("a new question", [f"{p} [late]" for p in PASSAGES], deadline=0.0) == []
        assert calls == []  # past the deadline: nothing embedded, an empty prefix the judge accepts
        long = "refund policy " * 2000
        assert scorer.score("refund", [long]) == scorer.score("refund", [long[: scorer.MAX_CHARS]])
        assert calls and all(len(text) <= scorer.MAX_CHARS for text in calls)
    finally:
        scorer._embed = real  # type: ignore[method-assign]


def test_a_deadline_passing_during_a_batch_leaves_the_passages_embedded_before_it(
        scorer: NanorankerScorer, monkeypatch: pytest.MonkeyPatch) -> None:
    import electa.judges.scorers as scorers

    clock = [0.0]
    real = scorer._embed

    def slow(text: str) -> object:  # each embedding takes a second of this clock
        clock[0] += 1.0
        return real(text)

    passages = [f"{p} (mid-batch)" for p in PASSAGES]
    monkeypatch.setattr(scorer, "_embed", slow)
    monkeypatch.setattr(scorers.time, "monotonic", lambda: clock[0])
    # question 0 -> 1 s, first passage 1 -> 2 s, second 2 -> 3 s; at 3 s the deadline (2.5 s) has passed
    got = scorer.score("a question asked once", passages, deadline=2.5)
    assert len(got) == 2 and got == scorer.score("a question asked once", passages)[:2]


def test_the_rerank_judge_runs_on_it_through_the_engine(tmp_path: Path, sample_kb_session: Path) -> None:
    # A budget no machine reaches: this is about the wiring, not the speed.
    settings = Settings(rerank="nanoranker", rerank_depth=20, judge_budgets_ms={"rerank": 120_000.0})
    with Engine.open(tmp_path / "d", settings, HashEmbedder()) as engine:
        engine.ingest([sample_kb_session], Access("default"))
        result = engine.search("How do I get a refund?", Caller("default"))
    stage = next(s for s in result.stages if s.judge == "rerank")
    assert stage.ran and stage.scored == min(20, stage.considered) and stage.scored > 0, stage
    assert any("refund" in (h.title + h.text).lower() for h in result.hits[:3])

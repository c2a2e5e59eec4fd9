"""What an agent is tuned on: visitors' feedback cannot steer it (issue 8 review), and a golden
question never finds its own curated pair."""

from __future__ import annotations

from pathlib import Path

import pytest

from electa import Access, Caller, Engine, Settings
from electa.embedders.hashing import HashEmbedder
from electa.eval.golden import golden_set
from electa.ingest.page import Loaded
from electa.types import ChunkKind, Document, QAPair, Section


def test_visitor_feedback_is_left_out_unless_asked_and_then_counts_once_per_visitor(engine: Engine) -> None:
    store = engine.store
    store.add_feedback("acme", "web", "refund", "https://a/refunds", 1)  # the organisation's own judgment
    for _ in range(50):  # one visitor hammering the widget's thumbs
        store.add_feedback("acme", "web", "refund", "https://a/spam", 1, origin="visitor", voter="key:3@1.2.3.4")
    store.add_feedback("acme", "web", "pricing", "https://a/spam", 1, origin="visitor", voter="key:3@1.2.3.4")
    for voter in ("visitor:acme:u1", "visitor:acme:u2"):
        store.add_feedback("acme", "web", "refund", "https://a/spam", -1, origin="visitor", voter=voter)
    trusted = golden_set(store, "acme", "web")
    assert list(trusted.queries.values()) == ["refund"]
    assert trusted.qrels[next(iter(trusted.queries))] == {"https://a/refunds": 1}
    with_visitors = golden_set(store, "acme", "web", visitors=True)
    by_text = {t: with_visitors.qrels[q] for q, t in with_visitors.queries.items()}
    # 50 thumbs up from one visitor count as one; two visitors' thumbs down outweigh it.
    assert by_text["refund"] == {"https://a/refunds": 1, "https://a/spam": 0}
    assert by_text["pricing"] == {"https://a/spam": 1}


@pytest.mark.tuner
def test_an_agents_tune_does_not_let_a_golden_question_find_its_own_curated_pair(tmp_path: Path,
                                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A golden question is a curated pair's question: searched, it finds that pair by its very
    words, and the pair carries the URL that counts relevant. Evaluation and training leave it
    out; so does the tune, whose calibrators and floor would otherwise learn that a relevant
    page always comes first with the highest score."""
    from electa.eval import abstention, runner

    monkeypatch.setenv("ELECTA_EMBEDDER", "hash")  # (the agent's store is opened as any command opens it)
    pages = [Document(f"p{i}", f"Guide {i}", f"Step {i}: open the settings panel {i}.", f"https://kb/p{i}",
                      sections=(Section((), f"Step {i}: open the settings panel {i}."),)) for i in range(60)]
    pairs = [QAPair(f"q{i}", f"how do I export report {i}", f"See guide {i}.", f"https://kb/p{i}") for i in range(60)]
    data = tmp_path / "data"
    with Engine.open(data, Settings(), HashEmbedder(dim=64)) as engine:
        engine.ingest_loaded("kb", Loaded(pages, pairs), Access("acme", "bot"))
        found = engine.search("how do I export report 3", Caller("acme", "bot"), judges=[]).hits
        assert found[0].kind is ChunkKind.QA and found[0].url == "https://kb/p3"  # (served, the pair comes first)
    asked: list[str] = []
    retrieve = Engine.retrieve

    def recording(self, text, *args, **kwargs):  # type: ignore[no-untyped-def]
        asked.append(text)
        return retrieve(self, text, *args, **kwargs)

    read: dict[str, set[str]] = {}
    by_depth = runner.served_by_depth

    def qa_found(engine, beir, results_of, *args):  # type: ignore[no-untyped-def]
        # What the tune fuses and scores (every depth) and fits the cut on is made of these results.
        for q, results in results_of.items():
            units = engine.store.units([h.unit_id for r in results for h in r.hits])
            read[beir.queries[q]] = {u.title for u in units.values() if u.kind is ChunkKind.QA}
        return by_depth(engine, beir, results_of, *args)

    fitted: list[dict] = []
    fit = abstention.fit_leg_calibrators
    monkeypatch.setattr(abstention, "fit_leg_calibrators", lambda tables, *a, **k: fitted.append(tables) or fit(tables, *a, **k))
    monkeypatch.setattr(Engine, "retrieve", recording)
    monkeypatch.setattr(runner, "served_by_depth", qa_found)
    runner.tune_dataset(None, "golden", None, data_dir=data, folds=3, agent=("acme", "bot"))
    assert len(asked) == 60 and set(read) == set(asked)
    assert all(question not in titles for question, titles in read.items())
    assert any(read.values())  # (the other questions' pairs are still found: only its own is left out)
    # The cut is fitted on every leg the agent is served, the Q&A leg's other pairs included.
    assert {leg for rows in fitted[0].values() for _, _, votes in rows for leg in votes} == {"fulltext", "dense", "qa"}

"""An organisation's own dense reading (issue 14): ``multilingual`` reads every unit and
question of that organisation with the chain's multilingual model, in an index of its own;
every other organisation reads by language, unchanged."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from electa import Access, Caller, Engine
from electa.answer.pipeline import AskRequest
from electa.config import Settings
from electa.embedders.chain import ChainEmbedder
from electa.embedders.hashing import HashEmbedder
from electa.errors import ConfigError
from electa.ingest.page import Loaded
from electa.types import Document

REFUNDS = "Refunds are issued within fourteen days of purchase when you write to us with your order number."
PARKING = "Parking is free for visitors in the garage beside the main entrance on weekdays."


class _Counting(HashEmbedder):
    def __init__(self, dim: int, fail: bool = False) -> None:
        super().__init__(dim)
        self.queries = self.texts = 0
        self.fail = fail

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if self.fail:
            raise RuntimeError("model crashed")
        self.texts += len(texts)
        return super().embed(texts)

    def embed_query(self, text: str) -> np.ndarray:
        self.queries += 1
        return super().embed_query(text)


def _page(name: str, text: str) -> Loaded:
    return Loaded([Document(name, name.title(), text, f"https://help/{name}")])


def _dense(engine: Engine, question: str, caller: Caller) -> list[tuple[str, float]]:
    results, _ = engine.retrieve(question, caller, legs=["dense"])
    units = engine.store.units([h.unit_id for h in results[0].hits])
    return [(units[h.unit_id].url, h.score) for h in results[0].hits]


def test_an_organisation_reading_multilingual_is_searched_by_that_model_alone(tmp_path: Path) -> None:
    english, other = _Counting(32), _Counting(16)
    chain = ChainEmbedder(english, other)
    with Engine.open(tmp_path / "d", Settings(), chain) as engine:
        for org in ("acme", "beta"):
            engine.ingest_loaded("kb", _page("refunds", REFUNDS), Access(org))
        assert other.texts == 0  # all English: read by the English model
        assert engine.readings.reading("acme") == "by-language"
        embedded = engine.set_dense_reading("acme", "multilingual")
        acme_units = len(engine.store.allowed(Caller("acme")))
        assert embedded == acme_units and engine.store.count_vectors(other.model_id) == acme_units
        english.queries = other.queries = 0
        found = _dense(engine, "refund order number", Caller("acme"))
        assert (english.queries, other.queries) == (0, 1) and found[0][0] == "https://help/refunds"
        # The score is the multilingual model's cosine of the page's best unit, not the chain's.
        _, vecs = engine.store.vectors_of(other.model_id, engine.store.allowed(Caller("acme")).ids)
        assert vecs.shape[1] == 16
        assert found[0][1] == pytest.approx(float(max(vecs @ other.embed_query("refund order number"))), abs=1e-5)
        assert engine.dense_model_id("acme") == other.model_id
        # Every other organisation reads as before, with the engine's model.
        english.queries = other.queries = 0
        assert _dense(engine, "refund order number", Caller("beta"))[0][0] == "https://help/refunds"
        assert (english.queries, other.queries) == (1, 0) and engine.dense_model_id("beta") == chain.model_id
        # A page written later is read by the organisation's own model too; another's is not.
        engine.ingest_loaded("parking", _page("parking", PARKING), Access("acme"))
        engine.ingest_loaded("parking", _page("parking", PARKING), Access("beta"))
        assert engine.store.count_vectors(other.model_id) == len(engine.store.allowed(Caller("acme")))
        assert _dense(engine, "free parking in the garage", Caller("acme"))[0][0] == "https://help/parking"
    with Engine.open(tmp_path / "d", Settings(), ChainEmbedder(english, other)) as engine:
        assert engine.readings.reading("acme") == "multilingual"  # stored with the organisation
        before = engine.store.count_vectors(other.model_id)
        engine.reindex()  # keeps the organisation's own vectors
        assert engine.store.count_vectors(other.model_id) == before
        english.queries = other.queries = 0
        assert _dense(engine, "refund order number", Caller("acme"))[0][0] == "https://help/refunds"
        assert (english.queries, other.queries) == (0, 1)
        # Switching back is instant: nothing to embed, the engine's model reads it again.
        assert engine.set_dense_reading("acme", "by-language") == 0
        english.queries = other.queries = 0
        # (the same pages as beta's, read the same way: the same scores)
        assert _dense(engine, "refund order number", Caller("acme")) == _dense(engine, "refund order number", Caller("beta"))
        assert (english.queries, other.queries) == (2, 0)


GERMAN = ("Die Rückerstattungen erfolgen innerhalb von vierzehn Tagen nach dem Kauf, wenn Sie uns über das"
          " Kontaktformular schreiben und die Bestellnummer angeben.")
GERMAN_Q = "Wie bekomme ich mein Geld für die Bestellung zurück?"
FRENCH_Q = "Comment puis-je obtenir le remboursement de ma commande ?"


def test_an_organisation_reading_by_question_searches_a_question_in_another_language_with_that_model(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An English help center asked in German: by default MiniLM reads the German question
    (XQuAD-R, English sentences alone: served 0.4420 for German questions, 0.1003 for Chinese
    ones, against 0.6693 and 0.6216 with every unit read by USE). ``by-question`` keeps both
    readings: a question in a language the organisation writes in as by-language (the chain,
    its crossing model), the others in the crossing model's space alone."""
    from electa.answer.pipeline import AskPipeline

    english, other, crossing = _Counting(32), _Counting(16), _Counting(24)
    chain = ChainEmbedder(english, other, crossing)
    # (organisations that wrote reading by language, as before by-question was a new one's default)
    with Engine.open(tmp_path / "d", Settings(dense_reading="by-language"), chain) as engine:
        for org in ("acme", "beta"):
            engine.ingest_loaded("kb", _page("refunds", REFUNDS), Access(org))
            engine.ingest_loaded("de", _page("erstattung", GERMAN), Access(org))
        embedded = engine.set_dense_reading("acme", "by-question")
        assert engine.readings.reading("acme") == "by-question"
        assert embedded == len(engine.store.allowed(Caller("acme"))) == engine.store.count_vectors(crossing.model_id)
        # A question in a language the organisation writes in: exactly the by-language reading
        # (the chain, and its crossing model for the units in the other language).
        for question in ("refund order number", GERMAN_Q):
            english.queries = other.queries = crossing.queries = 0
            assert _dense(engine, question, Caller("acme")) == _dense(engine, question, Caller("beta"))
            assert english.queries == other.queries == 2 and crossing.queries == 2, question
        # A French question of a help center written in English and German: the crossing model alone.
        english.queries = other.queries = crossing.queries = 0
        found = _dense(engine, FRENCH_Q, Caller("acme"))
        assert (english.queries, other.queries, crossing.queries) == (0, 0, 1)
        _, vecs = engine.store.vectors_of(crossing.model_id, engine.store.allowed(Caller("acme")).ids)
        assert found[0][1] == pytest.approx(float(max(vecs @ crossing.embed_query(FRENCH_Q))), abs=1e-5)
        english.queries = other.queries = crossing.queries = 0
        _dense(engine, FRENCH_Q, Caller("beta"))
        assert english.queries == other.queries == 1  # (by language: the chain reads it)
        # Its scores come from two models: their own lineage; the stats name the reading.
        assert engine.dense_model_id("acme") == f"{engine.dense_model_id('beta')}+by-question:{crossing.model_id}"
        assert engine.stats()["dense_by_question"] == ["acme"] and engine.stats()["dense_multilingual"] == []
        # Pages written later get both vectors.
        engine.ingest_loaded("parking", _page("parking", PARKING), Access("acme"))
        assert engine.store.count_vectors(crossing.model_id) == len(engine.store.allowed(Caller("acme")))
        # The extractive answer reads as the dense leg did.
        pipeline = AskPipeline(engine, engine.store, record=False)
        assert pipeline._extractive_for(Caller("acme"), True).embedder is crossing
        assert pipeline._extractive_for(Caller("acme"), False) is pipeline.extractive
        asked: list[bool] = []
        monkeypatch.setattr(AskPipeline, "_extractive_for",
                            lambda self, caller, elsewhere=False: asked.append(elsewhere) or self.extractive)
        for question in (FRENCH_Q, GERMAN_Q, "refund"):
            list(AskPipeline(engine, engine.store, record=False).run(AskRequest(question, Caller("acme"))))
        assert asked == [True, False, False]
        # To multilingual, and back to by-language: nothing more to embed; the chain reads
        # every question again.
        assert engine.set_dense_reading("acme", "multilingual") == 0
        assert engine.set_dense_reading("acme", "by-language") == 0
        english.queries = other.queries = crossing.queries = 0
        _dense(engine, FRENCH_Q, Caller("acme"))
        assert english.queries == other.queries == 1


def test_a_new_organisation_reads_by_question_from_its_first_write(tmp_path: Path) -> None:
    """The default reading of a new organisation (``Settings.dense_reading``): an English help
    center's German visitors are searched in the crossing model's space from its first page on,
    its units read by both. One that wrote before keeps reading by language (its units lack the
    crossing model's vectors) until switched."""
    english, other, crossing = _Counting(32), _Counting(16), _Counting(24)
    with Engine.open(tmp_path / "d", Settings(dense_reading="by-language"), ChainEmbedder(english, other, crossing)) as engine:
        engine.ingest_loaded("kb", _page("refunds", REFUNDS), Access("old"))
        assert engine.store.org_settings() == {} and engine.store.count_vectors(crossing.model_id) == 0
    with Engine.open(tmp_path / "d", Settings(), ChainEmbedder(english, other, crossing)) as engine:
        engine.ingest_loaded("kb", _page("refunds", REFUNDS), Access("acme"))
        english.queries = crossing.queries = 0
        assert _dense(engine, GERMAN_Q, Caller("acme"))[0][0] == "https://help/refunds"
        assert (english.queries, crossing.queries) == (0, 1)
        english.queries = crossing.queries = 0
        assert _dense(engine, "refund order number", Caller("acme")) == _dense(engine, "refund order number",
                                                                            Caller("old"))
        assert (english.queries, crossing.queries) == (2, 0)  # (in its own language: by language)
        engine.ingest_loaded("parking", _page("parking", PARKING), Access("old"))
        assert engine.readings.reading("acme") == "by-question" and engine.readings.reading("old") == "by-language"
        assert engine.store.org_settings() == {"acme": {"dense": "by-question"}}
        assert engine.store.count_vectors(crossing.model_id) == len(engine.store.allowed(Caller("acme")))
        engine.ingest_loaded("parking", _page("parking", PARKING), Access("acme"))
        assert engine.store.count_vectors(crossing.model_id) == len(engine.store.allowed(Caller("acme")))
        english.queries = crossing.queries = 0
        _dense(engine, GERMAN_Q, Caller("old"))
        assert (english.queries, crossing.queries) == (1, 0)
        # A help center with no English page is searched by language whatever the question's
        # language (e5 reads it; USE's space gained nothing there): its units get both vectors.
        engine.ingest_loaded("de", _page("erstattung", GERMAN), Access("gamma"))
        assert engine.readings.reading("gamma") == "by-question"
        assert engine.store.count_vectors(crossing.model_id) == len(engine.store.allowed(Caller("acme"))) + 2
        english.queries = other.queries = crossing.queries = 0
        assert _dense(engine, FRENCH_Q, Caller("gamma"))[0][0] == "https://help/erstattung"
        assert (english.queries, other.queries) == (0, 1)  # (the chain: e5's half, then the crossing scorer)
        # Review: a reading chosen before an organisation's first write is kept by it.
        assert engine.set_dense_reading("chosen", "by-language") == 0
        engine.ingest_loaded("kb", _page("refunds", REFUNDS), Access("chosen"))
        assert engine.readings.reading("chosen") == "by-language"
        assert not len(engine.store.vectors_of(crossing.model_id, engine.store.allowed(Caller("chosen")).ids)[0])
        # An organisation whose every source was deleted starts again as a new one.
        for source in engine.store.list_sources("old"):
            engine.delete_source("old", str(source["agent"]), str(source["uri"]))
        engine.ingest_loaded("kb", _page("refunds", REFUNDS), Access("old"))
        assert engine.readings.reading("old") == "by-question"
    # Without a crossing model of its own (USE missing: e5 would read every unit twice), or
    # with by-language chosen, nothing is stored.
    for settings, chain in ((Settings(), ChainEmbedder(HashEmbedder(32), HashEmbedder(16))),
                            (Settings(dense_reading="by-language"), ChainEmbedder(english, other, crossing))):
        with Engine.open(tmp_path / "e", settings, chain) as engine:
            engine.ingest_loaded("kb", _page("refunds", REFUNDS), Access("new"))
            assert engine.store.org_settings() == {}
    with pytest.raises(ValueError, match="dense_reading"):
        Settings(dense_reading="by-tone")  # type: ignore[arg-type]


def test_the_command_line_shows_a_reading_stored_or_to_come(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from electa.cli.main import cli

    with Engine.open(tmp_path / "d", Settings(dense_reading="by-language"),
                     ChainEmbedder(HashEmbedder(32), HashEmbedder(16), HashEmbedder(24))) as engine:
        engine.ingest_loaded("kb", _page("refunds", REFUNDS), Access("old"))
        engine.store.add_organisation("new")
    shown = {}
    for org in ("old", "new"):
        out = CliRunner().invoke(cli, ["orgs", "dense", org, "--data", str(tmp_path / "d")])
        assert out.exit_code == 0, out.output
        shown[org] = out.output.strip()
    assert shown == {"old": "old: by-language",
                     "new": "new: by-question from its first write, under the embedder chain with USE (else by-language)"}
    monkeypatch.setenv("ELECTA_DENSE_READING", "by-language")
    out = CliRunner().invoke(cli, ["orgs", "dense", "new", "--data", str(tmp_path / "d")])
    assert out.output.strip() == "new: by-language"


def test_an_organisations_own_index_never_shows_another_organisations_pages(tmp_path: Path) -> None:
    with Engine.open(tmp_path / "d", Settings(), ChainEmbedder(HashEmbedder(32), HashEmbedder(16))) as engine:
        engine.ingest_loaded("kb", _page("refunds", REFUNDS), Access("acme"))
        engine.ingest_loaded("kb", _page("parking", PARKING), Access("beta"))
        engine.ingest_loaded("team", _page("payroll", "Payroll runs on the last Friday of the month."),
                             Access("beta", principals=("team:hr",)))
        engine.set_dense_reading("acme", "multilingual")
        engine.set_dense_reading("beta", "multilingual")
        assert {u for u, _ in _dense(engine, REFUNDS, Caller("beta"))} == {"https://help/parking"}
        assert {u for u, _ in _dense(engine, PARKING, Caller("acme"))} == {"https://help/refunds"}
        hr = Caller("beta", principals=frozenset({"team:hr"}))
        assert "https://help/payroll" in {u for u, _ in _dense(engine, "payroll", hr)}
        assert "https://help/payroll" not in {u for u, _ in _dense(engine, "payroll", Caller("beta"))}


def test_a_switch_flips_only_once_every_unit_has_its_vector(tmp_path: Path) -> None:
    other = _Counting(16)
    with Engine.open(tmp_path / "d", Settings(), ChainEmbedder(HashEmbedder(32), other)) as engine:
        engine.ingest_loaded("kb", _page("refunds", REFUNDS), Access("acme"))
        other.fail = True
        with pytest.raises(RuntimeError, match="model crashed"):
            engine.set_dense_reading("acme", "multilingual")
        assert engine.readings.reading("acme") == "by-language"
        assert _dense(engine, "refund order number", Caller("acme"))[0][0] == "https://help/refunds"
        other.fail = False
        assert engine.set_dense_reading("acme", "multilingual") > 0  # run again: it resumes
        assert engine.readings.reading("acme") == "multilingual"


def test_a_calibration_fitted_on_other_scores_is_not_used_after_a_switch(tmp_path: Path) -> None:
    chain = ChainEmbedder(HashEmbedder(32), HashEmbedder(16))
    with Engine.open(tmp_path / "d", Settings(), chain) as engine:
        engine.ingest_loaded("kb", _page("refunds", REFUNDS), Access("acme", "bot"))
        tuned = {"model_id": chain.model_id, "fusion": {"k": 7}}
        assert engine._agent_profile(Caller("acme", "bot"), tuned)["fusion"] == {"k": 7}
        engine.set_dense_reading("acme", "multilingual")
        assert engine._agent_profile(Caller("acme", "bot"), tuned) == {}  # fitted on the chain's scores
        assert engine._agent_profile(Caller("acme", "bot"), {**tuned, "model_id": chain.other.model_id})


def test_a_reading_is_one_electa_knows_and_needs_the_chain(tmp_path: Path) -> None:
    with Engine.open(tmp_path / "a", Settings(), ChainEmbedder(HashEmbedder(32), HashEmbedder(16))) as engine:
        with pytest.raises(ConfigError, match=r"by-language .*multilingual"):
            engine.set_dense_reading("acme", "spanish")
        with pytest.raises(ConfigError, match="organisation"):
            engine.set_dense_reading("*", "multilingual")
    with Engine.open(tmp_path / "b", Settings(), HashEmbedder(32)) as engine, \
            pytest.raises(ConfigError, match="needs the embedder chain"):
        engine.set_dense_reading("acme", "multilingual")


@pytest.mark.embedded
def test_another_models_vectors_do_not_make_the_main_index_scan_its_ids(tmp_path: Path) -> None:
    """Review: an organisation's multilingual vectors, made at each of its writes, moved the
    store's backfill count, and the main index then read every vector id of the store."""
    chain = ChainEmbedder(HashEmbedder(32), HashEmbedder(16))
    with Engine.open(tmp_path / "d", Settings(), chain) as engine:
        engine.ingest_loaded("kb", _page("refunds", REFUNDS), Access("acme"))
        engine.ingest_loaded("kb", _page("refunds", REFUNDS), Access("beta"))
        engine.set_dense_reading("acme", "multilingual")
        assert engine.index is not None
        scans: list[str] = []
        index, own = engine.index, engine.readings.index()
        for name, ix in (("chain", index), ("own", own)):
            real = ix._add_backfilled  # type: ignore[attr-defined]
            ix._add_backfilled = lambda real=real, name=name: (scans.append(name), real())  # type: ignore[attr-defined]
        backfills = engine.store.backfills
        engine.ingest_loaded("parking", _page("parking", PARKING), Access("acme"))
        assert engine.store.backfills > backfills  # the organisation's new units got their second vectors
        assert _dense(engine, "refund order number", Caller("beta"))
        assert _dense(engine, "free parking", Caller("acme"))[0][0] == "https://help/parking"
        assert "chain" not in scans  # (the organisation's own index fetches its own new vectors)
        # The chain's vectors for older units still make the main index fetch them.
        scans.clear()
        unit = engine.store.allowed(Caller("beta")).ids.tolist()[0]
        engine.store.put_vectors(chain.model_id, [unit], np.ones((1, 48), dtype=np.float32) / 7)
        assert _dense(engine, "refund order number", Caller("beta")) and scans == ["chain"]


def test_tuning_on_a_labelled_set_records_the_scores_it_was_fitted_on(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Review: `electa tune DATASET --agent ORG/AGENT` tunes on the chain's scores (the set is
    searched as the evaluation's organisation) but recorded the agent's organisation's model,
    so a multilingual organisation would have used it on the other model's scores. It records
    the scores it was fitted on; the set is searched as the organisation reads (a new
    organisation reads by question, the store's evaluation organisation may be older), and an
    organisation whose scores still differ (its pages in other languages) is refused."""
    import gzip
    import json

    from electa.eval import runner

    chain = ChainEmbedder(HashEmbedder(32), HashEmbedder(16), HashEmbedder(24))
    monkeypatch.setattr(runner, "create_embedder", lambda name, *_: chain)
    data = tmp_path / "set"
    (data / "qrels").mkdir(parents=True)
    texts = [REFUNDS, PARKING, "Passwords are reset from the login page.", "Invoices are emailed monthly."]
    with gzip.open(data / "corpus.jsonl.gz", "wt") as f:
        f.writelines(json.dumps({"_id": f"d{i}", "title": "", "text": t}) + "\n" for i, t in enumerate(texts))
    with gzip.open(data / "queries.jsonl.gz", "wt") as f:
        f.writelines(json.dumps({"_id": f"q{i}", "text": t.split()[0]}) + "\n" for i, t in enumerate(texts))
    (data / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"q{i}\td{i}\t1\n" for i in range(4)))
    store = tmp_path / "store"
    with Engine.open(store, Settings(), chain) as engine:
        engine.ingest_loaded("kb", _page("refunds", REFUNDS), Access("acme", "bot"))
        engine.set_dense_reading("acme", "multilingual")
        engine.ingest_loaded("de", _page("erstattung", GERMAN), Access("gamma", "bot"))
        engine.set_dense_reading("gamma", "by-language")  # (German pages: scores crossed by USE)
    with Engine.open(store, Settings(dense_reading="by-language"), chain) as engine:
        engine.ingest_loaded("kb", _page("refunds", REFUNDS), Access("delta", "bot"))  # (one that wrote before)
    # Each agent's tuning is fitted on the scores of its organisation's reading, and used:
    # by-language, the set stored first (review: the evaluation organisation's first write
    # stored by-question after the readings were compared, and the tuning was never used);
    # multilingual; a new organisation's (stored now, as its first write would).
    expected = {"delta": chain.model_id, "acme": chain.crossing.model_id,
                "beta": f"{chain.model_id}+by-question:{chain.crossing.model_id}"}
    for org, model in expected.items():
        runner.tune_dataset(data, "test", None, data_dir=store, folds=2, depth=10, agent=(org, "bot"))
        with Engine.open(store, Settings(), chain) as engine:
            stored = engine.store.agent_settings(org, "bot") or {}
            assert engine.readings.reading(runner.EVAL_ORG) == engine.readings.reading(org)
            assert stored["model_id"] == model == stored["tuned_on"]["model_id"], org  # type: ignore[index]
            # (used: a tuning for other scores is read as none, {}; its fusion may be the default's, {})
            assert engine._agent_profile(Caller(org, "bot"), stored) == {"fusion": stored["fusion"]}, org
    with Engine.open(store, Settings(), chain) as engine:
        assert engine.readings.reading("beta") == "by-question"

    # (second review: recorded rightly, such a tuning would never be used for the organisation)
    with pytest.raises(ConfigError, match="would never be used"):
        runner.tune_dataset(data, "test", None, data_dir=store, folds=2, depth=10, agent=("gamma", "bot"))


def test_an_evaluation_reads_its_set_as_a_new_organisation_would(tmp_path: Path) -> None:
    """Review: a cached evaluation store kept the reading it was made with (or that a tune left),
    so the same `electa eval` measured by-language on one machine and by-question on another."""
    from electa.eval.answer_sets import AnswerSet, Ingestion, SetKind, ingest_set
    from electa.eval.beir import BeirSet
    from electa.eval.runner import EVAL_ORG, ingest_corpus

    chain = ChainEmbedder(HashEmbedder(32), HashEmbedder(16), HashEmbedder(24))
    beir = BeirSet("set", [Document("d0", "Refunds", REFUNDS, ""), Document("d1", "Parking", PARKING, "")],
                   {"q": "refund"}, {"q": {"d0": 1}}, "h")
    with Engine.open(tmp_path / "d", Settings(dense_reading="by-language"), chain) as engine:
        ingest_corpus(engine, beir, progress=False)
        assert engine.store.org_settings() == {} and engine.store.count_vectors(chain.crossing.model_id) == 0
    with Engine.open(tmp_path / "d", Settings(), chain) as engine:
        ingest_corpus(engine, beir, progress=False)  # (the corpus unchanged: its USE vectors made by the switch)
        assert engine.readings.reading(EVAL_ORG) == "by-question"
        assert engine.store.count_vectors(chain.crossing.model_id) == len(engine.store.allowed(Caller(EVAL_ORG)))
        ingest_corpus(engine, beir, progress=False, reading="by-language")  # (what a tune for such an agent asks)
        assert engine.readings.reading(EVAL_ORG) == "by-language"
        answers = AnswerSet("a", SetKind.XQUAD, "test", (), (Ingestion("kb", Access(EVAL_ORG), loaded=_page("p", PARKING)),),
                            "h")
        ingest_set(engine, answers)
        assert engine.readings.reading(EVAL_ORG) == "by-question"
    # Under a chain with no crossing model of its own, nothing is stored.
    with Engine.open(tmp_path / "e", Settings(), ChainEmbedder(HashEmbedder(32), HashEmbedder(16))) as engine:
        assert engine.new_reading == "by-language"
        ingest_corpus(engine, beir, progress=False)
        assert engine.store.org_settings() == {}


def test_a_failure_of_the_second_model_never_fails_the_write(tmp_path: Path) -> None:
    """Review: the multilingual vectors made after a write ran unguarded, so a model failure
    made a committed upload look failed and skipped the full-text refresh."""
    other = _Counting(16)
    with Engine.open(tmp_path / "d", Settings(), ChainEmbedder(HashEmbedder(32), other)) as engine:
        engine.ingest_loaded("kb", _page("refunds", REFUNDS), Access("acme"))
        engine.set_dense_reading("acme", "multilingual")
        other.fail = True
        engine.ingest_loaded("parking", _page("parking", PARKING), Access("acme"))  # English: the chain reads it
        assert engine.search("parking garage", Caller("acme"), legs=["fulltext"]).hits[0].url == "https://help/parking"
        assert engine.store.count_vectors(other.model_id) < len(engine.store.allowed(Caller("acme")))
        other.fail = False
        engine.ingest_loaded("kb", _page("refunds", REFUNDS), Access("beta"))  # the next write catches up
        assert engine.store.count_vectors(other.model_id) == len(engine.store.allowed(Caller("acme")))


def test_the_extractive_answer_reads_with_the_organisations_own_model(tmp_path: Path) -> None:
    from electa.answer.pipeline import AskPipeline

    chain = ChainEmbedder(HashEmbedder(32), HashEmbedder(16))
    with Engine.open(tmp_path / "d", Settings(), chain) as engine:
        engine.ingest_loaded("kb", _page("refunds", REFUNDS), Access("acme"))
        engine.set_dense_reading("acme", "multilingual")
        pipeline = AskPipeline(engine, engine.store, record=False)
        assert pipeline._extractive_for(Caller("acme")).embedder is chain.other
        assert pipeline._extractive_for(Caller("beta")) is pipeline.extractive
        answer = "".join(e.data.get("token", "") for e in engine.ask(REFUNDS, Caller("acme")) if e.kind == "token")
        assert "[1]" in answer


def test_the_multilingual_model_loads_as_the_engine_opens_when_an_organisation_reads_with_it(tmp_path: Path) -> None:
    from electa.embedders.chain import LazyEmbedder

    def chain() -> ChainEmbedder:
        return ChainEmbedder(HashEmbedder(32), LazyEmbedder(lambda: HashEmbedder(16), "electa/hash-bow-16", 16))

    with Engine.open(tmp_path / "d", Settings(), chain()) as engine:
        engine.ingest_loaded("kb", _page("refunds", REFUNDS), Access("acme"))  # English only
    fresh = chain()
    with Engine.open(tmp_path / "d", Settings(), fresh) as engine:
        assert not fresh.other.loaded  # type: ignore[attr-defined]
        engine.set_dense_reading("acme", "multilingual")
    fresh = chain()
    with Engine.open(tmp_path / "d", Settings(), fresh) as engine:
        assert fresh.other.loaded  # type: ignore[attr-defined]
        assert engine.readings._index is not None  # its index too: not inside the first search


def test_an_organisation_reading_with_one_model_reads_with_the_chains_crossing_model(tmp_path: Path) -> None:
    """The chain reads each language's pages with its best reader alone (e5 for the others);
    an organisation that reads every unit with one model reads with the chain's crossing model
    (USE: across languages the better one), not with that reader."""
    chain = ChainEmbedder(HashEmbedder(32), HashEmbedder(16), crossing=HashEmbedder(24))
    with Engine.open(tmp_path / "d", Settings(), chain) as engine:
        engine.ingest_loaded("kb", _page("refunds", REFUNDS), Access("acme"))
        engine.set_dense_reading("acme", "multilingual")
        assert engine.dense_model_id("acme") == "electa/hash-bow-24"
        assert engine.dense_model_id("beta") == chain.model_id
        ids = engine.store.allowed(Caller("acme")).ids
        assert len(engine.store.vectors_of("electa/hash-bow-24", ids)[0]) > 0
        assert len(engine.store.vectors_of("electa/hash-bow-16", ids)[0]) == 0
        assert engine.search("refund", Caller("acme"), legs=["dense"]).hits


def test_warming_for_an_organisation_reading_with_one_model_loads_the_crossing_model_alone() -> None:
    from electa.embedders.chain import LazyEmbedder

    reader = LazyEmbedder(lambda: HashEmbedder(16), "electa/hash-bow-16", 16)
    crossing = LazyEmbedder(lambda: HashEmbedder(24), "electa/hash-bow-24", 24)
    chain = ChainEmbedder(HashEmbedder(32), reader, crossing)
    chain.warm(("en",), crossing=True)  # an English help center, one organisation reading with one model
    assert crossing.loaded and not reader.loaded
    chain.warm(("en", "de"))
    assert reader.loaded

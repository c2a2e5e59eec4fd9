"""Each agent's own reranker (SPEC D1, issue 10: "the reranker works with the organisation's own
labelled queries, per organisation, never mixing tenants' data"): bound per search from the
settings it read, found only under the caller's own organisation and agent, failing soft."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from electa import Access, Caller, Engine
from electa.config import Settings
from electa.embedders.hashing import HashEmbedder
from electa.ingest.page import Loaded
from electa.judges.agent_rerank import FORMAT, AgentRerankers, agent_folder, rerank_identity
from electa.judges.ltr import ORDER, AgentModels, LtrModel, Serving
from electa.judges.ltr_features import FEATURES
from electa.testing.fakes import ScriptedScorer
from electa.types import Document, Section

MODEL = "0123456789abcdef"


def _own(model_id: str = MODEL) -> dict[str, object]:
    return {"reranker": {"format": FORMAT, "id": model_id, "trained": {}, "report": {}}}


@pytest.fixture
def engine(tmp_path: Path):  # type: ignore[no-untyped-def]
    """An engine that reranks with agents' own rerankers only; a "model" is a scripted scorer
    that prefers the page named in its folder's marker file (so which folder was loaded shows)."""
    eng = Engine.open(tmp_path / "data", Settings(rerank="agent"), HashEmbedder(dim=64))
    loaded: list[Path] = []

    def load(folder: Path) -> ScriptedScorer:
        loaded.append(folder)
        liked = (folder / "likes").read_text()
        return ScriptedScorer(lambda q, p: 1.0 if liked in p else 0.0)

    eng.agent_rerankers = AgentRerankers(eng.store.directory, eng.settings, load)
    eng.loaded = loaded  # type: ignore[attr-defined]
    docs = [Document(str(i), f"Page {i}", f"refund plan {i}", f"https://a/{i}", sections=(Section((), f"refund plan {i}"),))
            for i in range(4)]
    for org in ("acme", "rival"):
        eng.ingest_loaded("kb", Loaded(docs), Access(org, "bot"))
    yield eng
    eng.close()


def _model(engine: Engine, org: str, agent: str, likes: str, model_id: str = MODEL) -> Path:
    folder = agent_folder(engine.store.directory, org, agent) / model_id
    folder.mkdir(parents=True)
    (folder / "likes").write_text(likes)
    return folder


def test_an_agents_own_reranker_judges_its_searches_and_no_one_elses(engine: Engine) -> None:
    plain = [h.url for h in engine.search("refund plan", Caller("acme", "bot"), judges=[]).hits]
    _model(engine, "acme", "bot", "Page 3")
    engine.store.set_agent_settings("acme", "bot", _own())
    result = engine.search("refund plan", Caller("acme", "bot"))
    (stage,) = [st for st in result.stages if st.judge == "rerank"]
    assert stage.ran and result.hits[0].url == "https://a/3" and plain[0] != "https://a/3"
    # The rival names the very same model id in its settings: its folder is its own, and empty.
    engine.store.set_agent_settings("rival", "bot", _own())
    rival = engine.search("refund plan", Caller("rival", "bot"))
    (stage,) = [st for st in rival.stages if st.judge == "rerank"]
    assert not stage.ran and "gone from the store" in stage.note and [h.url for h in rival.hits] == plain
    # Settings with none: the funnel's own judge says why.
    other = engine.search("refund plan", Caller("acme", "bot"), agent_settings={})
    (stage,) = [st for st in other.stages if st.judge == "rerank"]
    assert not stage.ran and "electa train-rerank" in stage.note
    assert engine.loaded == [agent_folder(engine.store.directory, "acme", "bot") / MODEL]  # type: ignore[attr-defined]


@pytest.mark.parametrize("stored", [{"format": FORMAT, "id": "../../../etc"}, {"format": FORMAT, "id": 7},
                                    {"format": "something else", "id": MODEL}, "a string"])
def test_a_reranker_setting_that_is_not_a_model_id_never_reaches_a_path(engine: Engine, stored: object) -> None:
    result = engine.search("refund plan", Caller("acme", "bot"), agent_settings={"reranker": stored})
    (stage,) = [st for st in result.stages if st.judge == "rerank"]
    assert not stage.ran and "run `electa train-rerank` again" in stage.note
    assert engine.loaded == []  # type: ignore[attr-defined]


def test_the_settings_a_search_read_choose_the_model_and_a_loaded_one_is_kept(engine: Engine) -> None:
    _model(engine, "acme", "bot", "Page 1")
    _model(engine, "acme", "bot", "Page 2", "fedcba9876543210")
    first = engine.search("refund plan", Caller("acme", "bot"), agent_settings=_own())
    second = engine.search("refund plan", Caller("acme", "bot"), agent_settings=_own("fedcba9876543210"))
    again = engine.search("refund plan", Caller("acme", "bot"), agent_settings=_own())
    assert [r.hits[0].url for r in (first, second, again)] == ["https://a/1", "https://a/2", "https://a/1"]
    assert len(engine.loaded) == 2  # type: ignore[attr-defined]


def test_without_a_reranker_setting_the_agents_own_is_not_used(tmp_path: Path) -> None:
    with Engine.open(tmp_path / "d", Settings(), HashEmbedder(dim=64)) as eng:
        assert "rerank" not in eng.funnel.judges
        result = eng.search("refund plan", Caller("acme", "bot"), agent_settings=_own())
        assert all(st.judge != "rerank" for st in result.stages)


def test_what_reorders_an_agents_hits_before_its_ranker() -> None:
    assert rerank_identity("", _own()) == ""  # no reranker runs at all
    assert rerank_identity("agent", _own()) == f"agent:{MODEL}"
    assert rerank_identity("onnx:models/ce", _own()) == f"agent:{MODEL}"  # its own takes the engine's place
    assert rerank_identity("onnx:models/ce", {}) == "onnx:models/ce"
    assert rerank_identity("agent", None) == ""


def test_a_ranker_trained_behind_the_agents_previous_reranker_is_stale() -> None:
    from tests.unit.test_ltr import _hits, _stump

    trees = _stump(FEATURES.index("served_rr"), 0.4, 1.0, 0.0, len(FEATURES))
    ranker = LtrModel(trees, tuple(FEATURES), 50, {"order": ORDER, "rerank": f"agent:{MODEL}"}).to_dict()
    serving = Serving("hash-64", "c", None, "agent")
    from electa.judges import Funnel, LtrJudge

    def stage_for(stored: dict[str, object]):  # type: ignore[no-untyped-def]
        models = AgentModels(lambda org, agent: stored, serving)
        return Funnel([LtrJudge(models)]).run("q", Caller("acme", "bot"), _hits(3))[1][0]

    assert stage_for({**_own(), "ltr": ranker}).ran
    stale = stage_for({**_own("fedcba9876543210"), "ltr": ranker})
    assert not stale.ran and "trained on a reranked order, this engine serves another" in stale.note


def test_the_api_says_why_an_agents_reranker_is_not_used(engine: Engine) -> None:
    from fastapi.testclient import TestClient

    from electa.api.app import create_app

    engine.store.add_organisation("acme")
    headers = {"Authorization": f"Bearer {engine.store.add_api_key('acme', 'ingest')[0]}"}
    client = TestClient(create_app(engine, "admin-token"))
    engine.store.set_agent_settings("acme", "bot", _own())
    assert "gone from the store" in client.get("/v1/agents/bot", headers=headers).json()["reranker"]["problem"]
    _model(engine, "acme", "bot", "Page 1")
    shown = client.get("/v1/agents/bot", headers=headers).json()["reranker"]
    assert shown["id"] == MODEL and "problem" not in shown
    engine.store.set_agent_settings("acme", "bot", {"reranker": {"format": FORMAT, "id": "../x"}})
    assert "no valid model id" in client.get("/v1/agents/bot", headers=headers).json()["reranker"]["problem"]


def _gate_kb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, prefers: list[str]) -> Path:
    """A store whose agent acme/bot has 20 labelled questions (the right page of each topic; full
    text prefers a decoy), with training replaced by a scripted scorer: each run "trains" the
    next model of ``prefers`` (the text it scores 1), so the gate's decision is worked by hand."""
    import electa.eval.rerank_training as training
    import electa.judges.scorers as scorers
    from electa.judges import agent_rerank
    from tests.unit.test_ltr import _acme_kb

    data = _acme_kb(tmp_path, monkeypatch, 20, votes=True)[0]
    runs = iter(prefers)

    def export(model: object, out: Path, meta: object) -> None:
        out.mkdir(parents=True)
        (out / "model.onnx").write_text(next(runs))  # the model "is" what it prefers (its id follows)

    def scorer(folder: Path) -> ScriptedScorer:
        liked = (folder / "model.onnx").read_text()
        return ScriptedScorer(lambda q, p: 1.0 if liked in p else 0.0)

    monkeypatch.setattr(training, "packaged_base", lambda: tmp_path)
    monkeypatch.setattr(training, "fine_tune", lambda *a, **k: object())
    monkeypatch.setattr(training, "export", export)
    monkeypatch.setattr(scorers, "OnnxCrossEncoder", scorer)
    monkeypatch.setattr(agent_rerank, "_onnx", scorer)  # and served as the agent's own
    return data


def test_a_reranker_is_stored_only_when_it_beats_what_the_agent_gets_today(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import electa.eval.rerank_training as training
    from electa.eval.rerank_training import train_rerank

    data = _gate_kb(tmp_path, monkeypatch, ["mentioned in passing", "Guide", "written here"])
    settings = Settings(embedder="hash", rerank="agent")
    # (negatives are drawn from every candidate not judged relevant: held-out answers included,
    # as a new question's page may be another's negative in use)
    avoided: list[object] = []
    real_build = training.build_groups
    monkeypatch.setattr(training, "build_groups", lambda *a, **k: avoided.append(k.get("avoid", ())) or real_build(*a, **k))
    worse = train_rerank(data, ("acme", "bot"), depth=10, min_queries=10, settings=settings)
    assert worse.reranked < worse.served and not worse.stored  # the decoys first: worse than served
    better = train_rerank(data, ("acme", "bot"), depth=10, min_queries=10, settings=settings)
    assert better.reranked > better.served and better.stored
    # A third as good as the agent's own (now served) reranker is not stored: it must beat it.
    same = train_rerank(data, ("acme", "bot"), depth=10, min_queries=10, settings=settings)
    assert same.figures["today"] == same.reranked > same.served and not same.stored
    assert avoided == [(), (), ()]
    with Engine.open(data, settings, HashEmbedder()) as eng:
        assert (eng.store.agent_settings("acme", "bot") or {})["reranker"]["id"] == better.where[1].rsplit("/", 1)[1]  # type: ignore[index]


def test_an_agents_two_newest_rerankers_stay_and_a_crashed_runs_staging_goes_after_an_hour(tmp_path: Path) -> None:
    import os
    import time

    from electa.eval.rerank_training import _prune

    folder = tmp_path / "agent"
    ids = [f"{i:016x}" for i in range(4)]
    for age, model_id in enumerate(ids):  # ids[0] the newest, ids[3] the oldest
        (folder / model_id).mkdir(parents=True)
        os.utime(folder / model_id, (time.time() - 60 * (age + 1),) * 2)
    (folder / ".new-1").mkdir()
    os.utime(folder / ".new-1", (time.time() - 7200,) * 2)
    (folder / ".new-2").mkdir()  # a run still writing
    _prune(folder, keep={ids[0]})
    assert sorted(p.name for p in folder.iterdir()) == [".new-2", ids[0], ids[1]]


def test_a_ranker_behind_the_agents_own_reranker_learns_only_from_the_questions_it_held_out(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from electa import ConfigError
    from electa.eval.ltr import train_ltr
    from electa.eval.rerank_training import train_rerank
    from electa.judges import agent_rerank

    data = _gate_kb(tmp_path, monkeypatch, ["Guide"])
    monkeypatch.setattr(agent_rerank, "_onnx", lambda folder: ScriptedScorer())
    settings = Settings(embedder="hash", rerank="agent")
    stored = train_rerank(data, ("acme", "bot"), depth=10, min_queries=10, settings=settings)
    assert stored.stored and 0 < stored.held_out < 20 and stored.held_out + stored.trained_on == 20
    with pytest.raises(ConfigError, match=f"has {stored.held_out} labelled questions its own reranker did not train on"):
        train_ltr(None, "golden", data, ("acme", "bot"), min_queries=10, settings=settings)
    # Without a reranker running, every question is the ranker's to learn from.
    with pytest.raises(ConfigError, match="has 20 labelled questions; a ranker needs at least 50"):
        train_ltr(None, "golden", data, ("acme", "bot"), settings=Settings(embedder="hash"))


def test_an_operators_ranker_file_is_checked_per_search_against_the_agents_own_reranker(tmp_path: Path) -> None:
    """ELECTA_LTR=<file> serves every caller; trained on an unreranked order (ELECTA_RERANK=agent
    and no reranker of the agent's own), it judges an agent without one and is stale behind one."""
    import json

    from tests.unit.test_ltr import upside_down

    path = tmp_path / "ranker.json"
    with Engine.open(tmp_path / "probe", Settings(), HashEmbedder(dim=64)) as probe:
        model_id = probe.embedder.model_id if probe.embedder else None
    path.write_text(json.dumps(upside_down(model_id=model_id, rerank="").to_dict()))
    with Engine.open(tmp_path / "d", Settings(rerank="agent", ltr=str(path)), HashEmbedder(dim=64)) as eng:
        eng.agent_rerankers = AgentRerankers(eng.store.directory, eng.settings,
                                             lambda folder: ScriptedScorer(lambda q, p: 0.0))
        docs = [Document(str(i), f"Page {i}", f"refund plan {i}", f"https://a/{i}",
                         sections=(Section((), f"refund plan {i}"),)) for i in range(4)]
        eng.ingest_loaded("kb", Loaded(docs), Access("acme", "bot"))
        _model(eng, "acme", "bot", "Page 3")

        def ltr_stage(stored: dict[str, object]):  # type: ignore[no-untyped-def]
            result = eng.search("refund plan", Caller("acme", "bot"), agent_settings=stored)
            return next(st for st in result.stages if st.judge == "ltr")

        assert ltr_stage({}).ran
        stale = ltr_stage(_own())
        assert not stale.ran and "trained on an unreranked order, this engine serves another" in stale.note


def test_build_groups_keeps_the_documents_it_is_told_to_avoid_out_of_the_negatives() -> None:
    from electa.eval.rerank_training import build_groups, held_out_answers

    cands = {"q": [("a", "right"), ("b", "held-out answer"), ("c", "other")]}
    (_, [positive, *negs]), = build_groups({"q": "?"}, {"q": {"a": 1}}, cands, ["q"], 2, random.Random(1))
    assert positive == "right" and sorted(negs) == ["held-out answer", "other"]
    # Without the avoided page the pool is too small for two negatives: no group.
    avoid = held_out_answers({"h": {"b": 2, "z": 0}, "q": {"a": 1}}, ["h"])
    assert avoid == {"b"}
    assert build_groups({"q": "?"}, {"q": {"a": 1}}, cands, ["q"], 2, random.Random(1), avoid=avoid) == []
    one = build_groups({"q": "?"}, {"q": {"a": 1}}, cands, ["q"], 1, random.Random(1), avoid=avoid)
    assert one == [("?", ["right", "other"])]


def test_a_worker_without_the_agents_own_reranker_keys_its_results_apart_and_a_broken_one_is_not_cached(
        engine: Engine) -> None:
    # Found by review: on PostgreSQL an agent's own reranker lives in the data directory of the
    # host that trained it; a worker without it served un-reranked results under the key of the
    # workers that rerank, and a shared cache handed those to them.
    from electa.engine import worth_caching
    from electa.errors import ConfigError
    from electa.types import stage_json

    caller, stored = Caller("acme", "bot"), _own()
    without = engine.cache_recipe(caller, stored)
    folder = _model(engine, "acme", "bot", "Page 3")
    assert engine.cache_recipe(caller, stored) != without
    assert engine.cache_recipe(caller, stored) == engine.cache_recipe(caller, {})  # (reranked here: the usual key)
    # There but unloadable on this worker: an error, so the result is not cached at all.
    def broken(path: Path) -> ScriptedScorer:
        raise ConfigError(f"cannot load the cross-encoder in {path}")

    engine.agent_rerankers._load = broken
    result = engine.search("refund plan", caller, agent_settings=stored)
    (stage,) = [st for st in result.stages if st.judge == "rerank"]
    assert stage.failed and not worth_caching({"stages": [stage_json(st) for st in result.stages]})
    # Not loaded again at every search meanwhile (each load of a real model takes seconds).
    tried: list[Path] = []
    engine.agent_rerankers._load = lambda path: tried.append(path) or broken(path)
    again = engine.search("refund plan", caller, agent_settings=stored)
    assert next(st for st in again.stages if st.judge == "rerank").failed and tried == []
    # A model loaded before its folder went is still served here: not keyed as out.
    engine.agent_rerankers._failed.clear()
    engine.agent_rerankers._load = lambda path: ScriptedScorer(lambda q, p: 0.0)
    engine.search("refund plan", caller, agent_settings=stored)
    import shutil

    shutil.rmtree(folder)
    assert engine.cache_recipe(caller, stored) == engine.cache_recipe(caller, {})


@pytest.mark.parametrize(("config", "lr"), [
    ({"hidden_size": 128, "architectures": ["BertForMaskedLM"]}, 2e-4),  # splade-tiny: a new head
    ({"hidden_size": 128, "architectures": ["BertForSequenceClassification"]}, 4e-5),  # a tiny cross-encoder, trained on
    ({"hidden_size": 384, "architectures": ["BertModel"]}, 4e-5),  # MiniLM
    (None, 4e-5),  # no config to read: the command's rate
])
def test_the_learning_rate_follows_the_start_models_width_and_head(tmp_path: Path, config: dict[str, object] | None,
                                                                  lr: float) -> None:
    from electa.eval.rerank_training import default_lr

    if config is not None:
        (tmp_path / "config.json").write_text(json.dumps(config))
    assert default_lr(tmp_path) == lr

"""Learning to rank (SPEC D2): trees served with numpy exactly as LightGBM scores them; a ranker
per agent, read only for that agent, absent → the order stands; trained from an agent's own
labelled questions, cross-validated, stored only when it beats the served order."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import lightgbm as lgb  # a dev dependency: a missing one fails the run
import numpy as np
import pytest

from electa import Access, Caller, ConfigError, Engine
from electa.config import Settings
from electa.embedders.hashing import HashEmbedder
from electa.ingest.chunker import CHUNKER_VERSION
from electa.ingest.page import Loaded
from electa.judges import Funnel, LtrJudge
from electa.judges.ltr import ORDER, AgentModels, FileModel, LtrModel, Serving, fixed_model, fusion_digest
from electa.judges.ltr_features import FEATURES
from electa.judges.trees import TreeEnsemble
from electa.types import ChunkKind, Document, Hit, Section


def _booster(x: np.ndarray, y: np.ndarray, **params: object):  # type: ignore[no-untyped-def]
    base = {"objective": "regression", "num_leaves": 7, "min_data_in_leaf": 5, "verbose": -1, "seed": 1,
            "num_threads": 1}
    return lgb.train({**base, **params}, lgb.Dataset(x, y), num_boost_round=30)


@pytest.mark.parametrize("params", [{}, {"zero_as_missing": True}, {"use_missing": False}])
def test_numpy_trees_score_exactly_as_lightgbm_with_zeros_and_missing_values(params: dict[str, object]) -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(400, 5))
    x[rng.random(x.shape) < 0.2] = 0.0
    y = x[:, 0] * 2 + (x[:, 1] > 0.3) - np.abs(x[:, 2]) + rng.normal(scale=0.1, size=400)
    x[rng.random(x.shape) < 0.1] = np.nan  # NaN in training: LightGBM learns a default direction
    booster = _booster(x, y, **params)
    trees = TreeEnsemble.from_lightgbm(booster.dump_model())
    probe = rng.normal(size=(200, 5))
    probe[rng.random(probe.shape) < 0.2] = 0.0
    probe[rng.random(probe.shape) < 0.2] = np.nan
    np.testing.assert_allclose(trees.predict(probe), booster.predict(probe), rtol=1e-12, atol=1e-12)
    again = TreeEnsemble.from_dict(json.loads(json.dumps(trees.to_dict())))
    np.testing.assert_array_equal(again.predict(probe), trees.predict(probe))


def test_a_lambdarank_model_scores_as_lightgbm() -> None:
    rng = np.random.default_rng(5)
    x = rng.normal(size=(300, 4))
    y = (x[:, 0] + rng.normal(scale=0.3, size=300) > 0.5).astype(float)
    booster = lgb.train({"objective": "lambdarank", "min_data_in_leaf": 5, "verbose": -1, "num_threads": 1},
                        lgb.Dataset(x, y, group=[30] * 10), num_boost_round=20)
    trees = TreeEnsemble.from_lightgbm(booster.dump_model())
    np.testing.assert_allclose(trees.predict(x), booster.predict(x), rtol=1e-12, atol=1e-12)


def _stump(feature: int, threshold: float, low: float, high: float, n_features: int) -> TreeEnsemble:
    """One split: ``feature <= threshold`` scores ``low``, above it ``high``."""
    return TreeEnsemble.from_lightgbm({"feature_names": [f"f{i}" for i in range(n_features)], "tree_info": [
        {"tree_structure": {"split_feature": feature, "threshold": threshold, "decision_type": "<=",
                            "default_left": True, "missing_type": "None",
                            "left_child": {"leaf_value": low}, "right_child": {"leaf_value": high}}}]})


def test_a_stored_model_that_points_a_node_backwards_or_outside_is_refused() -> None:
    good = _stump(0, 0.5, 0.0, 1.0, 3).to_dict()
    assert TreeEnsemble.from_dict(good).predict(np.array([[0.2, 0, 0], [0.9, 0, 0]])).tolist() == [0.0, 1.0]
    import base64

    loop = {**good, "left": base64.b64encode(np.array([0, 0, 0], dtype="<i4").tobytes()).decode()}
    with pytest.raises(ConfigError, match="child outside"):
        TreeEnsemble.from_dict(loop)  # a node that is its own child would walk forever
    with pytest.raises(ConfigError, match="feature out of range"):
        TreeEnsemble.from_dict({**good, "n_features": 0})
    with pytest.raises(ConfigError, match="unreadable"):
        TreeEnsemble.from_dict({**good, "value": "not base64!"})


# A ranker that puts the served order upside down: the score is the served position's reciprocal
# rank, inverted (served_rr <= 0.4, i.e. from the third hit down, scores higher).
SERVED = FEATURES.index("served_rr")


def upside_down(**trained: object) -> LtrModel:
    return LtrModel(_stump(SERVED, 0.4, 1.0, 0.0, len(FEATURES)), tuple(FEATURES), 50, {"order": ORDER, **trained})


def _hits(n: int) -> list[Hit]:
    return [Hit(i, i, 1, ChunkKind.PARENT, f"T{i}", f"text {i}", f"https://a/{i}", str(i), 1.0 / (i + 1), 0.5, True, ())
            for i in range(n)]


def test_the_ltr_judge_reorders_by_the_callers_model_and_reports_it() -> None:
    funnel = Funnel([LtrJudge(lambda caller: upside_down())])
    out, (stage,) = funnel.run("q", Caller("acme", "bot"), _hits(4))
    assert [h.unit_id for h in out] == [2, 3, 0, 1]  # ties keep the order they came in
    assert stage.judge == "ltr" and stage.ran and stage.changed and dict(out[0].judged) == {"ltr": 1.0}


def test_a_ranker_trained_shallower_than_it_is_served_is_not_reported_as_cut_by_its_budget() -> None:
    # Trained on the first 3 hits, served 5: it scores 3 every time, for its depth, not for time.
    out, (stage,) = Funnel([LtrJudge(fixed_model(replace(upside_down(), depth=3)), depth=5)]).run(
        "q", Caller("acme", "bot"), _hits(5))
    assert [h.unit_id for h in out] == [2, 0, 1, 3, 4]
    assert (stage.scored, stage.considered) == (3, 5)
    assert stage.ran and not stage.cut_short and stage.note == ""


def _models(stored: dict[tuple[str, str], dict[str, object]]) -> AgentModels:
    return AgentModels(lambda org, agent: stored.get((org, agent)), Serving("hash-64", CHUNKER_VERSION))


def test_each_agent_is_judged_by_its_own_model_and_one_without_keeps_its_order() -> None:
    models = _models({("acme", "bot"): {"ltr": upside_down(model_id="hash-64").to_dict()}})
    funnel = Funnel([LtrJudge(models)])
    given = _hits(4)
    assert [h.unit_id for h in funnel.run("q", Caller("acme", "bot"), given)[0]] == [2, 3, 0, 1]
    for caller in (Caller("acme", "other"), Caller("rival", "bot"), Caller("acme")):
        out, (stage,) = funnel.run("q", caller, given)
        assert out == given and not stage.ran and stage.note.startswith("unavailable:")
    assert funnel.depth(None, Caller("rival", "bot")) == 0 and funnel.depth(None, Caller("acme", "bot")) == 50


def test_a_model_trained_for_other_vectors_or_units_is_not_used() -> None:
    for trained, why in (({"model_id": "minilm"}, "trained on minilm scores"), ({"chunker": "old"}, "another chunker"),
                         ({"order": "c4-1"}, "an earlier served order")):
        funnel = Funnel([LtrJudge(_models({("acme", "bot"): {"ltr": upside_down(**trained).to_dict()}}))])
        out, (stage,) = funnel.run("q", Caller("acme", "bot"), _hits(3))
        assert out == _hits(3) and not stage.ran and why in stage.note


def test_a_ranker_is_checked_against_the_model_whose_scores_the_callers_organisation_gets() -> None:
    """Issue 14: an organisation reading with the multilingual model alone gets that model's
    dense scores; a ranker trained on the engine's (an agent's or an operator's file) is not used
    for it, and one trained on its own is."""
    model_of = {"acme": "use"}.get
    chain_ranker, use_ranker = upside_down(model_id="hash-64"), upside_down(model_id="use")
    agents = AgentModels(lambda org, agent: {"ltr": (use_ranker if org == "acme" else chain_ranker).to_dict()},
                         Serving("hash-64", CHUNKER_VERSION), lambda org: model_of(org, "hash-64"))
    assert isinstance(agents(Caller("acme", "bot")), LtrModel) and isinstance(agents(Caller("rival", "bot")), LtrModel)
    stale = AgentModels(lambda org, agent: {"ltr": chain_ranker.to_dict()}, Serving("hash-64", CHUNKER_VERSION),
                        lambda org: model_of(org, "hash-64"))
    assert "trained on hash-64 scores, this search's dense leg gives use scores" in str(stale(Caller("acme", "bot")))
    file_model = FileModel(chain_ranker, Serving("hash-64", CHUNKER_VERSION), lambda org: model_of(org, "hash-64"))
    assert file_model(Caller("rival")) is chain_ranker
    assert "gives use scores" in str(file_model(Caller("acme")))


def test_a_ranker_served_with_other_legs_another_reranker_or_a_retuned_fusion_is_not_used() -> None:
    serving = Serving("hash-64", CHUNKER_VERSION, ("dense", "fulltext", "qa"), "")
    tuned = {"fusion": {"weights": {"dense": 2.0}}}
    cases = [({"legs": ["dense", "fulltext", "qa", "sparse"]}, {}, "trained with legs dense, fulltext, qa, sparse"),
             ({"rerank": "onnx:models/ce"}, {}, "trained on a reranked order"),
             ({"fusion": fusion_digest({})}, tuned, "fusion was tuned again")]
    for trained, settings, why in cases:
        stored = {**settings, "ltr": upside_down(**trained).to_dict()}
        models = AgentModels(lambda org, agent, stored=stored: stored, serving)  # type: ignore[misc]
        (stage,) = Funnel([LtrJudge(models)]).run("q", Caller("acme", "bot"), _hits(3))[1]
        assert not stage.ran and why in stage.note
    same = {**tuned, "ltr": upside_down(legs=["qa", "fulltext", "dense"], rerank="", fusion=fusion_digest(tuned)).to_dict()}
    (stage,) = Funnel([LtrJudge(AgentModels(lambda org, agent: same, serving))]).run("q", Caller("acme", "bot"), _hits(3))[1]
    assert stage.ran


def test_a_ranker_file_for_another_model_is_refused_for_every_caller(tmp_path: Path) -> None:
    from electa.judges import build_funnel

    path = tmp_path / "ranker.json"
    path.write_text(json.dumps(upside_down(model_id="minilm").to_dict()))
    funnel = build_funnel(Settings(ltr=str(path)), _models({}))
    (stage,) = funnel.run("q", Caller("acme", "bot"), _hits(3), ["ltr"])[1]
    assert not stage.ran and "trained on minilm scores" in stage.note


def test_a_corrupt_stored_model_leaves_the_order_and_says_so() -> None:
    broken = {**upside_down().to_dict(), "trees": {"feature": "AA=="}}
    out, (stage,) = Funnel([LtrJudge(_models({("acme", "bot"): {"ltr": broken}}))]).run("q", Caller("acme", "bot"),
                                                                                        _hits(3))
    assert out == _hits(3) and not stage.ran and "unreadable" in stage.note


def _faq(n: int) -> tuple[list[Document], list[tuple[str, str]]]:
    """``n`` topics, each a right page and a decoy page that repeats the question's words more
    often (full text prefers the decoy); the question is the right page's title."""
    docs, questions = [], []
    for i in range(n):
        right = f"Guide {i}: the answer about topic{i} gadget{i} is written here"
        decoy = f"topic{i} gadget{i} topic{i} gadget{i} topic{i} mentioned in passing"
        docs.append(Document(f"r{i}", f"Answer {i}", right, f"https://kb/r{i}", sections=(Section((), right),)))
        docs.append(Document(f"d{i}", f"Notes {i}", decoy, f"https://kb/d{i}", sections=(Section((), decoy),)))
        questions.append((f"topic{i} gadget{i}", f"https://kb/r{i}"))
    return docs, questions


def _hash_engine(data: Path) -> Engine:
    return Engine.open(data, Settings(embedder="hash"), HashEmbedder())


def _acme_kb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, n: int, orgs: tuple[str, ...] = ("acme",),
             votes: bool = False) -> tuple[Path, list[Document], list[tuple[str, str]]]:
    """A store in which agent ``bot`` of each of ``orgs`` holds :func:`_faq` (``n`` topics), the
    hash embedder for the training command (it opens its own engine); with ``votes``, acme/bot's
    feedback marks each question's right page."""
    monkeypatch.setenv("ELECTA_EMBEDDER", "hash")
    data = tmp_path / "data"
    docs, questions = _faq(n)
    with _hash_engine(data) as engine:
        for org in orgs:
            engine.ingest_loaded("kb", Loaded(docs), Access(org, "bot"))
        for q, url in questions if votes else ():
            engine.store.add_feedback("acme", "bot", q, url, 1)
    return data, docs, questions


def test_train_ltr_learns_from_the_agents_own_feedback_and_serves_it(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from electa.eval.ltr import train_ltr

    data, docs, questions = _acme_kb(tmp_path, monkeypatch, 60)
    with _hash_engine(data) as engine:
        engine.ingest_loaded("kb", Loaded(docs), Access("rival", "bot"))
        for q, url in questions[:40]:
            engine.store.add_feedback("acme", "bot", q, url, 1)
        # Another organisation's feedback says the decoys are right: it must not reach acme's ranker.
        for i, (q, _) in enumerate(questions):
            engine.store.add_feedback("rival", "bot", q, f"https://kb/d{i}", 1)
        before = engine.search(questions[58][0], Caller("acme", "bot"), judges=[]).hits[0].url
    with pytest.raises(ConfigError, match="has 40 labelled questions; a ranker needs at least 50"):
        train_ltr(None, "golden", data, ("acme", "bot"))
    with _hash_engine(data) as engine:
        for q, url in questions[40:55]:
            engine.store.add_feedback("acme", "bot", q, url, 1)
    report = train_ltr(None, "golden", data, ("acme", "bot"), folds=3)
    assert report.queries == 55 and report.learned > report.served and report.stored
    assert report.importances and abs(sum(report.importances.values()) - 1.0) < 0.01
    with _hash_engine(data) as engine:
        stored = engine.store.agent_settings("acme", "bot")
        assert stored and stored["ltr"]["trained"]["queries"] == 55  # type: ignore[index]
        assert "ltr" not in (engine.store.agent_settings("rival", "bot") or {})
        result = engine.search(questions[58][0], Caller("acme", "bot"))  # a question it never saw
        stage = next(st for st in result.stages if st.judge == "ltr")
        assert stage.ran
        assert before == "https://kb/d58" and result.hits[0].url == "https://kb/r58"
        # The rival's search is untouched by acme's ranker.
        rival = next(st for st in engine.search(questions[58][0], Caller("rival", "bot")).stages if st.judge == "ltr")
        assert not rival.ran and "no ranker" in rival.note


def test_a_ranker_that_does_not_beat_the_served_order_is_not_stored(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from electa.eval.ltr import train_ltr

    data, _, questions = _acme_kb(tmp_path, monkeypatch, 12)
    with _hash_engine(data) as engine:
        for q, _ in questions:  # labels the served order already gets right (its first hit): nothing to beat
            engine.store.add_feedback("acme", "bot", q, engine.search(q, Caller("acme", "bot"), judges=[]).hits[0].url, 1)
    report = train_ltr(None, "golden", data, ("acme", "bot"), folds=3, min_queries=10)
    assert report.learned <= report.served and not report.stored
    with _hash_engine(data) as engine:
        assert "ltr" not in (engine.store.agent_settings("acme", "bot") or {})


def test_a_ranker_file_is_checked_when_the_evaluation_is_asked_for_it(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from electa.cli.main import cli

    bad = tmp_path / "ranker.json"
    bad.write_text(json.dumps({"format": "something else"}))
    data = tmp_path / "beir"
    data.mkdir()
    result = CliRunner().invoke(cli, ["eval", str(data), "--split", "test", "--ltr", str(bad)])
    assert result.exit_code != 0 and "not an Electa ranker" in result.output


def test_an_evaluation_with_a_ranker_file_that_cannot_judge_says_why(tmp_path: Path) -> None:
    from electa.eval.beir import BeirSet
    from electa.eval.runner import evaluate

    path = tmp_path / "ranker.json"
    path.write_text(json.dumps(upside_down(order="c4-1").to_dict()))
    golden = BeirSet("g", [], {"q1": "refund plan"}, {"q1": {"https://a/1": 1}}, "golden")
    with (Engine.open(tmp_path / "d", Settings(ltr=str(path)), HashEmbedder()) as engine,
          pytest.raises(ConfigError, match=r"cannot judge here: .*earlier served order")):
        evaluate(engine, golden, "golden", caller=Caller("acme", "bot"), key="url")


def test_a_search_is_judged_by_the_ranker_in_the_settings_it_read(engine: Engine) -> None:
    docs = [Document(str(i), f"Page {i}", f"refund plan {i}", f"https://a/{i}", sections=(Section((), f"refund plan {i}"),))
            for i in range(5)]
    engine.ingest_loaded("kb", Loaded(docs), Access("acme", "bot"))
    caller = Caller("acme", "bot")
    plain = engine.search("refund plan", caller, top=3, judges=["ltr"])
    (stage,) = plain.stages
    # No ranker: it says so, and the search built only the hits it shows (none for a judge to read).
    assert stage.judge == "ltr" and not stage.ran and "no ranker" in stage.note and stage.considered == 3
    # Settings read by the caller (the API reads them once for its cache key): their ranker is used,
    # though the store has none.
    stored = {"ltr": upside_down(model_id=engine.embedder.model_id if engine.embedder else None).to_dict()}
    judged = engine.search("refund plan", caller, top=3, agent_settings=stored, judges=["ltr"])
    assert judged.stages[0].ran and judged.stages[0].considered == 5
    assert [h.unit_id for h in judged.hits] != [h.unit_id for h in plain.hits]


def test_the_cli_trains_an_agents_ranker_and_says_what_it_measured(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from electa.cli.main import cli

    data, _, questions = _acme_kb(tmp_path, monkeypatch, 30)
    with _hash_engine(data) as engine:
        for q, url in questions:
            engine.store.add_feedback("acme", "bot", q, url, 1)
    runner = CliRunner()
    result = runner.invoke(cli, ["train-ltr", "--agent", "acme/bot", "--data", str(data), "--min-queries", "20",
                                 "--folds", "3"])
    assert result.exit_code == 0, result.output
    assert "trained on 30 labelled questions of acme/bot" in result.output and "stored: agent acme/bot" in result.output
    refused = runner.invoke(cli, ["train-ltr", "--agent", "acme/bot", "--data", str(data)])
    assert refused.exit_code != 0 and "has 30 labelled questions; a ranker needs at least 50" in refused.output


def test_the_engines_cached_stems_give_the_features_training_computes(engine: Engine) -> None:
    from electa.judges.ltr_features import features

    docs, questions = _faq(5)
    engine.ingest_loaded("kb", Loaded(docs), Access("acme"))
    hits = engine.search(questions[0][0], Caller("acme"), top=10, judges=[]).hits
    assert len(hits) > 2
    np.testing.assert_array_equal(features(questions[0][0], hits, engine.ordering.hit_stems), features(questions[0][0], hits))


@pytest.mark.parametrize("ltr", [
    {"format": "electa-ltr/1", "depth": 50, "features": list(FEATURES)},  # no trees
    {**upside_down().to_dict(), "trained": "not an object"},
    {**upside_down().to_dict(), "depth": 1e999},  # JSON's Infinity: int() overflows
    "just a string",
])
def test_a_corrupt_ranker_in_an_agents_settings_never_fails_its_search(engine: Engine, ltr: object) -> None:
    docs, questions = _faq(3)
    engine.ingest_loaded("kb", Loaded(docs), Access("acme", "bot"))
    plain = engine.search(questions[0][0], Caller("acme", "bot"), judges=[])
    result = engine.search(questions[0][0], Caller("acme", "bot"), agent_settings={"ltr": ltr})
    stage = next(st for st in result.stages if st.judge == "ltr")
    assert not stage.ran and "unreadable" in stage.note
    assert [h.unit_id for h in result.hits] == [h.unit_id for h in plain.hits]


def test_short_tree_arrays_are_refused_before_they_are_read() -> None:
    import base64

    good = _stump(0, 0.5, 0.0, 1.0, 3).to_dict()
    short = {**good, "left": base64.b64encode(np.array([1], dtype="<i4").tobytes()).decode()}
    with pytest.raises(ConfigError, match="different lengths"):
        TreeEnsemble.from_dict(short)
    shared = {**good, "roots": base64.b64encode(np.array([0, 1], dtype="<i4").tobytes()).decode()}
    with pytest.raises(ConfigError, match="reached twice"):
        TreeEnsemble.from_dict(shared)  # a leaf that is also a root: rows x roots memory for nothing


def test_cross_validation_ranks_each_question_by_a_model_that_never_saw_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import electa.eval.ltr as ltr

    rng = np.random.default_rng(0)
    rows = {f"q{i}": (rng.normal(size=(5, len(FEATURES))), [f"d{j}" for j in range(5)], np.ones(5, dtype=bool))
            for i in range(20)}
    qrels = {q: {"d0": 1} for q in rows}
    seen: list[set[str]] = []
    real_fit = ltr.fit

    def spy(r, g, qids, names=FEATURES):  # type: ignore[no-untyped-def]
        seen.append(set(qids))
        return real_fit(r, g, qids, names)

    monkeypatch.setattr(ltr, "fit", spy)
    monkeypatch.setattr(ltr, "PARAMS", {**ltr.PARAMS, "min_data_in_leaf": 1})
    ltr.cross_validate(rows, qrels, 4)
    assert len(seen) == 4 and all(len(s) == 15 for s in seen)
    held = [set(rows) - s for s in seen]
    assert set().union(*held) == set(rows) and sum(len(h) for h in held) == 20  # each question held out once


def test_the_learned_order_is_scored_as_served_passing_hits_first() -> None:
    from electa.eval.ltr import served_order

    assert served_order([2, 0, 1, 3], np.array([True, False, True, False])) == [2, 0, 1, 3]
    assert served_order([3, 1, 2, 0], np.array([True, True, False, False])) == [1, 0, 3, 2]


def test_a_golden_question_does_not_find_its_own_curated_pair_in_training(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from electa.eval.beir import BeirSet
    from electa.eval.ltr import collect
    from electa.ingest.records import load_csv

    data, _, _ = _acme_kb(tmp_path, monkeypatch, 3)
    with _hash_engine(data) as engine:
        pairs = load_csv("faq.csv", b"question,answer,url\ntopic0 gadget0,See the guide,https://kb/r0\n")
        engine.ingest_loaded("faq.csv", pairs, Access("acme", "bot"))
        golden = BeirSet("g", [], {"g1": "topic0 gadget0"}, {"g1": {"https://kb/r0": 1}}, "golden")
        served = engine.search("topic0 gadget0", Caller("acme", "bot"), top=50, judges=[]).hits
        assert any(h.kind.value == "qa" for h in served)  # served, the pair is found
        rows = collect(engine, golden, Caller("acme", "bot"), "url", 50, own_pairs=True)
        x = rows["g1"][0]
        assert not x[:, FEATURES.index("kind_qa")].any()  # in training, it is not


def test_a_ranker_edited_under_the_same_id_is_read_afresh() -> None:
    first = upside_down().to_dict()
    edited = {**LtrModel(_stump(SERVED, 0.4, 0.0, 1.0, len(FEATURES)), tuple(FEATURES), 50, {"order": ORDER}).to_dict(),
              "id": first["id"]}
    current = {"ltr": first}
    models = AgentModels(lambda org, agent: current, Serving("hash-64", CHUNKER_VERSION))
    funnel = Funnel([LtrJudge(models)])
    assert [h.unit_id for h in funnel.run("q", Caller("acme", "bot"), _hits(4))[0]] == [2, 3, 0, 1]
    current["ltr"] = edited  # the served order kept: the edited trees, not the first ones cached under that id
    out, (stage,) = funnel.run("q", Caller("acme", "bot"), _hits(4))
    assert stage.ran and [h.unit_id for h in out] == [0, 1, 2, 3]


def test_a_ranker_from_before_the_served_order_was_versioned_is_stale() -> None:
    legacy = LtrModel(_stump(SERVED, 0.4, 1.0, 0.0, len(FEATURES)), tuple(FEATURES), 50, {"model_id": "hash-64"})
    models = AgentModels(lambda org, agent: {"ltr": legacy.to_dict()}, Serving("hash-64", CHUNKER_VERSION))
    out, (stage,) = Funnel([LtrJudge(models)]).run("q", Caller("acme", "bot"), _hits(4))
    assert not stage.ran and "earlier served order (c4-1" in stage.note and [h.unit_id for h in out] == [0, 1, 2, 3]


def test_the_api_shows_an_agents_ranker_by_its_figures_not_its_trees(engine: Engine) -> None:
    from fastapi.testclient import TestClient

    from electa.api.app import create_app

    engine.store.add_organisation("acme")
    headers = {"Authorization": f"Bearer {engine.store.add_api_key('acme', 'ingest')[0]}"}
    ranker = {**upside_down().to_dict(), "report": {"learned": 0.77, "importances": {"served_rr": 1.0}}}
    engine.store.set_agent_settings("acme", "bot", {"ltr": ranker})
    shown = TestClient(create_app(engine, "admin-token")).get("/v1/agents/bot", headers=headers).json()["ltr"]
    assert "trees" not in shown and shown["report"]["importances"] == {"served_rr": 1.0}
    assert shown["id"] == ranker["id"] and shown["features"] == list(FEATURES)
    assert "trees" in (engine.store.agent_settings("acme", "bot") or {})["ltr"]  # type: ignore[operator]
    assert "problem" not in shown
    engine.store.set_agent_settings("acme", "old", {"ltr": upside_down(order="c4-1").to_dict()})
    stale = TestClient(create_app(engine, "admin-token")).get("/v1/agents/old", headers=headers).json()["ltr"]
    assert "earlier served order" in stale["problem"] and "train-ltr" in stale["problem"]


def test_in_training_a_questions_own_votes_are_not_its_engagement(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A golden question's label is its own thumbs up: read back as engagement it would be the
    answer itself. Other questions' votes on the same page are engagement."""
    from electa.eval.golden import golden_set
    from electa.eval.ltr import collect

    data, _, questions = _acme_kb(tmp_path, monkeypatch, 3)
    up = FEATURES.index("votes_up")
    with _hash_engine(data) as engine:
        (q0, url0), (q1, _) = questions[0], questions[1]
        engine.store.add_feedback("acme", "bot", q0, url0, 1)
        engine.store.add_feedback("acme", "bot", q1, "https://kb/d1", 1)
        engine.store.add_feedback("acme", "bot", f"  {q0.upper()}?", url0, 1)  # the same question, folded
        feedback = engine.store.feedback("acme", "bot")
        rows = collect(engine, golden_set(engine.store, "acme", "bot"), Caller("acme", "bot"), "url", 50,
                       feedback=feedback)
        by_url = {qid: dict(zip(keys, x[:, up], strict=True)) for qid, (x, keys, _) in rows.items()}
        mine, theirs = (next(qid for qid, t in golden_set(engine.store, "acme", "bot").queries.items() if t == q)
                        for q in (q0, q1))
        assert by_url[mine][url0] == 0.0  # only its own (and its folded twin's) votes: left out
        assert by_url[theirs][url0] == pytest.approx(np.log1p(1))  # another question's: q0, asked twice, counts once
        assert by_url[mine]["https://kb/d1"] == pytest.approx(np.log1p(1))  # another question's vote on d1


def test_a_ranker_that_reads_engagement_sees_the_agents_votes_and_visitors_only_if_trained_on_them(
        engine: Engine) -> None:
    docs = [Document(str(i), f"Page {i}", f"refund plan {i}", f"https://a/{i}", sections=(Section((), f"refund plan {i}"),))
            for i in range(4)]
    engine.ingest_loaded("kb", Loaded(docs), Access("acme", "bot"))
    caller = Caller("acme", "bot")
    plain = [h.url for h in engine.search("refund plan", caller, top=4, judges=[]).hits]
    liked = plain[-1]
    model_id = engine.embedder.model_id if engine.embedder else None

    def ranker(**trained: object) -> dict[str, object]:  # up-voted pages first
        stump = _stump(FEATURES.index("votes_up"), 0.1, 0.0, 1.0, len(FEATURES))
        return {"ltr": LtrModel(stump, tuple(FEATURES), 50, {"order": ORDER, "model_id": model_id, **trained}).to_dict()}

    def first(stored: dict[str, object], who: Caller = caller) -> str:
        result = engine.search("refund plan", who, top=4, agent_settings=stored, judges=["ltr"])
        assert result.stages[0].ran
        return result.hits[0].url

    engine.store.add_feedback("acme", "bot", "something else", liked, 1, origin="visitor", voter="v1")
    engine.store.add_feedback("acme", "other", "something else", plain[-2], 1)  # another agent's
    engine.store.add_feedback("rival", "bot", "something else", plain[-2], 1)  # another organisation's
    assert first(ranker()) == plain[0]  # a visitor's vote: not read by a ranker trained without them
    assert first(ranker(visitors=True)) == liked
    engine.store.add_feedback("acme", "bot", "another question", liked, 1)
    assert first(ranker()) == liked

"""The reranker's score in the cut (electa.judges.rerank_cut, issue 10's abstention target):
fitted by a tune only when it abstains better, used only behind the reranker it was fitted
behind, and never when the reranker did not run."""

from __future__ import annotations

import gzip
import json
from dataclasses import replace
from pathlib import Path

import pytest

from electa import Access, Caller, Engine, Settings
from electa.calibration import Calibrator, fit_isotonic
from electa.embedders.hashing import HashEmbedder
from electa.eval.abstention import fit_with_signal, with_signal
from electa.eval.tuning import FusionSetting
from electa.ingest.page import Loaded
from electa.judges import Funnel, RerankJudge
from electa.judges.rerank_cut import RerankCut
from electa.judges.scorers import HttpRerankScorer
from electa.served_order import Order
from electa.testing.fakes import ScriptedScorer
from electa.types import Document, Section

RERANKER = "http://127.0.0.1:9/rerank"  # never called: its score() is replaced
CALLER = Caller("acme", "bot")


def by_word(query: str, passage: str) -> float:
    """A reranker that knows the right page holds the word "annual"."""
    return 1.0 if "annual" in passage else 0.0


# The reranker's probability decides: P = sigmoid(-5 + 10 x P(rerank)); the legs weigh nothing.
ONLY_RERANK = {"rerank": fit_isotonic([0.0, 1.0], [0, 1]), "*": Calibrator("stacked", b=-5.0, weights=(("rerank", 10.0),))}


def pages(n: int) -> list[Document]:
    """Per topic ``i``, the right page and a near-copy the legs cannot tell from it."""
    docs = []
    for i in range(n):
        for key, plan in ((f"d{i}", "annual"), (f"n{i}", "monthly")):
            text = f"Widget {i} refund policy for the {plan} plan."
            docs.append(Document(key, f"Widget {i} refunds", text, f"https://help/{key}", sections=(Section((), text),)))
    return docs


def widget_set(data: Path) -> tuple[Path, list[Document]]:
    """A BEIR set (split ``test``) of :func:`pages` (60 topics): topic i's question finds d{i}."""
    (data / "qrels").mkdir(parents=True)
    docs = pages(60)
    with gzip.open(data / "corpus.jsonl.gz", "wt") as f:
        f.writelines(json.dumps({"_id": d.ext_id, "title": d.title, "text": d.text}) + "\n" for d in docs)
    with gzip.open(data / "queries.jsonl.gz", "wt") as f:
        f.writelines(json.dumps({"_id": f"q{i}", "text": f"widget {i} refund policy"}) + "\n" for i in range(60))
    (data / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"q{i}\td{i}\t1\n" for i in range(60)))
    return data, docs


@pytest.fixture
def cut_engine(tmp_path: Path) -> Engine:
    engine = Engine.open(tmp_path / "data", Settings(rerank=RERANKER), HashEmbedder(dim=64))
    engine.ingest_loaded("kb", Loaded(pages(3)), Access("acme", "bot"))
    engine.funnel = Funnel([RerankJudge(ScriptedScorer(by_word))])
    engine.store.set_agent_settings("acme", "bot", {"rerank_cut": RerankCut(RERANKER, ONLY_RERANK, 0.5).to_dict()})
    yield engine
    engine.close()


def passing(engine: Engine, **kwargs: object) -> set[str]:
    return {h.ext_id for h in engine.search("widget 1 refund policy", CALLER, top=6, **kwargs).hits  # type: ignore[arg-type]
            if h.passes}


def test_the_reranker_decides_what_passes_once_it_has_run(cut_engine: Engine) -> None:
    assert {"d1", "n1"} <= passing(cut_engine, judges=[])  # the legs pass the near-copy too
    result = cut_engine.search("widget 1 refund policy", CALLER, top=6)
    assert {h.ext_id for h in result.hits if h.passes} == {"d0", "d1", "d2"}
    passes = [h.passes for h in result.hits]
    assert passes == sorted(passes, reverse=True)  # passing hits first
    assert all(h.probability is not None for h in result.hits)


def test_a_floor_the_search_asks_for_applies_to_the_rerankers_probability_too(cut_engine: Engine) -> None:
    # sigmoid(-5 + 10) = 0.9933: above the fitted 0.5, below an asked 0.995
    assert passing(cut_engine, calibrated_floor=0.99) == {"d0", "d1", "d2"}
    assert passing(cut_engine, calibrated_floor=0.995) == set()
    assert passing(cut_engine, floor=2.0) == set()  # (and a floor on the absolute score must be met too)


def test_the_legs_cut_stands_when_the_reranker_does_not_run(cut_engine: Engine) -> None:
    plain = passing(cut_engine, judges=[])
    cut_engine.funnel = Funnel([RerankJudge(ScriptedScorer(error=RuntimeError("down")))])
    assert passing(cut_engine) == plain


def test_a_cut_fitted_behind_another_reranker_is_not_used(cut_engine: Engine) -> None:
    plain = passing(cut_engine, judges=[])
    cut_engine.store.set_agent_settings("acme", "bot", {"rerank_cut": RerankCut("onnx:other", ONLY_RERANK, 0.5).to_dict()})
    assert passing(cut_engine) == plain
    assert cut_engine.search("widget 1 refund policy", CALLER).stages[0].ran  # (the judge still ran)


BAD_STEPS = {**ONLY_RERANK["rerank"].to_dict(), "ys": [0]}  # two steps, one value


@pytest.mark.parametrize("stored", [{"reranker": RERANKER}, "nonsense", {"reranker": RERANKER, "calibration": {},
                                                                         "calibrated_floor": 0.5},
                                    {**RerankCut(RERANKER, ONLY_RERANK, 0.5).to_dict(), "calibrated_floor": 7},
                                    {**RerankCut(RERANKER, ONLY_RERANK, 0.5).to_dict(),
                                     "calibration": {"rerank": BAD_STEPS, "*": ONLY_RERANK["*"].to_dict()}},
                                    {**RerankCut(RERANKER, ONLY_RERANK, 0.5).to_dict(),
                                     "calibration": {"rerank": {**BAD_STEPS, "xs": "01"}, "*": ONLY_RERANK["*"].to_dict()}},
                                    # a reranker weighed negatively would make its budget cut admit hits
                                    RerankCut(RERANKER, {**ONLY_RERANK, "*": Calibrator("stacked", b=5.0, weights=(
                                        ("rerank", -10.0),))}, 0.5).to_dict()])
def test_an_unreadable_cut_leaves_the_legs_cut(cut_engine: Engine, stored: object) -> None:
    plain = passing(cut_engine, judges=[])
    cut_engine.store.set_agent_settings("acme", "bot", {"rerank_cut": stored})
    assert passing(cut_engine) == plain


def tables_of(n: int, rerank: bool) -> tuple[dict, dict, dict]:
    """``n`` questions whose right document and a near-copy score alike on the legs; the
    reranker's score tells them apart (``rerank``) or is the same for both."""
    tables, qrels, scores = {}, {}, {}
    for i in range(n):
        q = f"q{i}"
        tables[q] = [(f"d{i}", 0.8, {"dense": 0.80 + i % 3 / 100}), (f"n{i}", 0.8, {"dense": 0.80 + (i + 1) % 3 / 100}),
                     *[(f"x{i}-{j}", 0.2, {"dense": 0.2 - j / 100}) for j in range(6)]]
        qrels[q] = {f"d{i}": 1}
        scores[q] = [1.0 if rerank else 0.5, 0.0 if rerank else 0.5, *[0.0] * 6]
    return tables, qrels, scores


def test_a_tune_keeps_the_reranker_in_the_cut_only_when_it_abstains_better() -> None:
    tables, qrels, scores = tables_of(60, rerank=True)
    fitted, figures = fit_with_signal(with_signal(tables, "rerank", scores), qrels, sorted(tables), "rerank")
    assert fitted is not None
    assert figures["legs + rerank: abstain_unanswerable"] > figures["legs: abstain_unanswerable"]  # type: ignore[operator]
    assert figures["legs + rerank: keep_answerable"] >= 0.9  # type: ignore[operator]
    tables, qrels, scores = tables_of(60, rerank=False)
    fitted, figures = fit_with_signal(with_signal(tables, "rerank", scores), qrels, sorted(tables), "rerank")
    assert fitted is None  # (the reranker tells nothing apart: it abstains no better)
    assert figures["legs + rerank: abstain_unanswerable"] <= figures["legs: abstain_unanswerable"]  # type: ignore[operator]


def test_electa_tune_fits_the_cut_behind_the_served_reranker_and_searches_use_it(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from electa.eval import runner

    monkeypatch.setattr(runner, "create_embedder", lambda name, *_: HashEmbedder(dim=64))
    monkeypatch.setenv("ELECTA_RERANK", RERANKER)
    calls: list[int] = []

    def score(self, query, passages, deadline=None):  # type: ignore[no-untyped-def]
        calls.append(len(passages))
        return [by_word(query, p) for p in passages]

    monkeypatch.setattr(HttpRerankScorer, "score", score)
    asked: list[Caller] = []
    chosen = runner._cut_reranker

    def cut_reranker(engine, caller, stored):  # type: ignore[no-untyped-def]
        asked.append(caller)
        return chosen(engine, caller, stored)

    monkeypatch.setattr(runner, "_cut_reranker", cut_reranker)
    data, docs = widget_set(tmp_path / "set")
    store = tmp_path / "store"
    result = runner.tune_dataset(data, "test", None, data_dir=store, folds=2, depth=20, agent=("acme", "bot"))
    assert result.rerank_cut and result.rerank_cut["kept"] and result.rerank_cut["reranker"] == RERANKER
    assert calls and max(calls) <= 20  # the top DEPTH candidates of each question, as a search reads them
    # (the reranker is the one the agent's searches run, not the evaluation organisation's)
    assert [(c.org, c.agent) for c in asked] == [("acme", "bot")]
    with Engine.open(store, Settings(rerank=RERANKER), HashEmbedder(dim=64)) as engine:
        stored = engine.store.agent_settings("acme", "bot") or {}
        assert RerankCut.from_dict(stored["rerank_cut"]).reranker == RERANKER
        engine.ingest_loaded("kb", Loaded(docs), Access("acme", "bot"))  # (the set was searched as the evaluation's)
        plain = engine.search("widget 7 refund policy", CALLER, judges=[], top=4)
        judged = engine.search("widget 7 refund policy", CALLER, top=4)
        assert "n7" in {h.ext_id for h in plain.hits if h.passes}  # the legs' cut lets the near-copy pass
        assert "n7" not in {h.ext_id for h in judged.hits if h.passes}
        assert judged.hits[0].ext_id == "d7" and judged.hits[0].passes


def test_a_tuned_agents_cut_is_fitted_on_the_first_hits_of_its_tuned_order(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """An agent tuned away from the default order is served its tuned order, and the reranker's
    cut decides that order's first hits: it is fitted on them, not the default order's."""
    from electa.eval import runner

    monkeypatch.setattr(runner, "create_embedder", lambda name, *_: HashEmbedder(dim=64))
    monkeypatch.setenv("ELECTA_RERANK", RERANKER)
    read: dict[str, list[str]] = {}

    def score(self, query, passages, deadline=None):  # type: ignore[no-untyped-def]
        read[query] = list(passages)
        return [by_word(query, p) for p in passages]

    monkeypatch.setattr(HttpRerankScorer, "score", score)
    tuned = runner.tune

    def shallow(per_query, qrels, default, *args, **kwargs):  # type: ignore[no-untyped-def]
        # (the tune chooses fifteen candidates a leg, plain RRF: each question's served order
        # holds more than twenty hits, not those of the default order)
        result = tuned(per_query, qrels, default, *args, **kwargs)
        return replace(result, chosen=FusionSetting(default.weights, 60, dict.fromkeys(default.depths, 15), None))

    monkeypatch.setattr(runner, "tune", shallow)
    data, docs = widget_set(tmp_path / "set")
    runner.tune_dataset(data, "test", None, data_dir=tmp_path / "store", folds=2, depth=50, agent=("acme", "bot"))
    assert len(read) == 60
    text = {d.ext_id: f"{d.title}\n{d.text}" for d in docs}
    with Engine.open(tmp_path / "store", Settings(), HashEmbedder(dim=64)) as engine:
        for i in range(60):
            query = f"widget {i} refund policy"
            results, _ = engine.retrieve(query, Caller(runner.EVAL_ORG), legs=["fulltext", "dense"],
                                         depths={"fulltext": 50, "dense": 50})  # (as the tune searched)
            cut = [replace(r, hits=r.hits[:15]) for r in results]
            served = [h.ext_id for h in engine.rank(query, cut, k=60, order=Order.FUSED)]
            default = [h.ext_id for h in engine.search(query, Caller(runner.EVAL_ORG), top=20, judges=[]).hits]
            assert len(served) > 20 and served[:20] != default
            assert read[query] == [text[doc] for doc in served[:20]]  # (the first DEPTH of the order served)


def test_a_malformed_legs_calibration_leaves_the_absolute_floor(cut_engine: Engine) -> None:
    cut_engine.store.set_agent_settings("acme", "bot", {})
    plain = passing(cut_engine, judges=[])
    cut_engine.store.set_agent_settings("acme", "bot", {"calibration": {"dense": {**BAD_STEPS, "xs": "01"}},
                                                        "calibrated_floor": 0.5, "unit_vectors": cut_engine.recipe.value})
    assert passing(cut_engine, judges=[]) == plain  # (and no error)


def test_a_reranker_score_below_the_fitted_depth_is_not_read(cut_engine: Engine) -> None:
    # Fitted on the reranker's score of each question's first hit only: below it, the reranker
    # counts none (probability 0), as in the fit, whatever the served reranker read.
    first = cut_engine.search("widget 1 refund policy", CALLER, top=6, judges=[]).hits[0].ext_id
    cut_engine.store.set_agent_settings("acme", "bot", {"rerank_cut": RerankCut(RERANKER, ONLY_RERANK, 0.5,
                                                                                 depth=1).to_dict()})
    assert passing(cut_engine) == ({first} if first.startswith("d") else set())


def test_hits_the_rerankers_budget_did_not_reach_keep_the_legs_decision(cut_engine: Engine) -> None:
    plain = cut_engine.search("widget 1 refund policy", CALLER, top=6, judges=[]).hits
    scorer = ScriptedScorer(by_word, hang_from_call=1)  # the first batch (four hits) is scored, then it hangs
    cut_engine.funnel = Funnel([RerankJudge(scorer)], {"rerank": 300.0})
    try:
        result = cut_engine.search("widget 1 refund policy", CALLER, top=6)
    finally:
        scorer.release.set()
    assert result.stages[0].note == "budget of 300 ms ran out: scored 4 of 6"
    reached = {h.ext_id for h in plain[:4]}
    assert {h.ext_id for h in result.hits if h.passes and h.ext_id in reached} == {e for e in reached if e[0] == "d"}
    assert {h.ext_id for h in result.hits if h.passes and h.ext_id not in reached} == \
        {h.ext_id for h in plain[4:] if h.passes}  # not dropped (nor admitted) for a slow moment


@pytest.mark.parametrize("mode", ["standard", "corrective", "graph", "agentic", "multimodal"])
def test_only_the_hybrid_search_is_decided_by_the_reranker(cut_engine: Engine, mode: str) -> None:
    # The other modes decide what passes by rules of their own, over other searches.
    assert passing(cut_engine, mode=mode) == passing(cut_engine, mode=mode, judges=[])
    assert cut_engine.search("widget 1 refund policy", CALLER, mode=mode).stages[0].ran


def test_a_search_of_other_legs_keeps_the_legs_cut(cut_engine: Engine) -> None:
    assert passing(cut_engine, legs=["dense"]) == passing(cut_engine, legs=["dense"], judges=[])
    assert passing(cut_engine, legs=list(cut_engine.legs)) == {"d0", "d1", "d2"}  # (the default legs, named)


def test_a_reranker_that_abstains_more_only_by_keeping_fewer_answers_is_not_kept(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from electa.eval import abstention
    from electa.eval.abstention import AbstentionReport, FloorReport

    def rows(abstain: float, keep: float) -> AbstentionReport:
        return AbstentionReport(5, 60, 0.9, [FloorReport("calibrated", 0.5, abstain, keep, 0.5, 0.5)])

    tables, qrels, scores = tables_of(60, rerank=True)
    figures_of = {False: rows(0.70, 0.91), True: rows(0.90, 0.85)}  # (legs, legs + rerank)
    read: list[object] = []  # (the reranker runs wherever its cut is used: read as a judged search)
    monkeypatch.setattr(abstention, "cross_validate", lambda part, qrels, target_keep, **k: read.append(
        k.get("judged")) or figures_of["rerank" in next(iter(part.values()))[0][2]])
    fitted, _ = fit_with_signal(with_signal(tables, "rerank", scores), qrels, sorted(tables), "rerank")
    assert read == [True, True]
    assert fitted is None
    figures_of[True] = rows(0.90, 0.91)
    fitted, _ = fit_with_signal(with_signal(tables, "rerank", scores), qrels, sorted(tables), "rerank")
    assert fitted is not None


def test_a_cut_that_weighs_the_reranker_negatively_is_not_kept(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from electa.eval import abstention
    from electa.eval.abstention import AbstentionReport, FloorReport

    tables, qrels, scores = tables_of(60, rerank=True)
    better = {False: 0.70, True: 0.90}  # (it abstains better on CV: only the weight refuses it)
    monkeypatch.setattr(abstention, "cross_validate", lambda part, qrels, target_keep, **_: AbstentionReport(5, 60, 0.9, [
        FloorReport("calibrated", 0.5, better["rerank" in next(iter(part.values()))[0][2]], 0.91, 0.5, 0.5)]))
    fit = abstention.fit_leg_calibrators
    monkeypatch.setattr(abstention, "fit_leg_calibrators", lambda *a: {
        **fit(*a), "*": Calibrator("stacked", b=0.0, weights=(("dense", 1.0), ("rerank", -0.5)))})
    fitted, figures = fit_with_signal(with_signal(tables, "rerank", scores), qrels, sorted(tables), "rerank")
    assert fitted is None and "positively" in str(figures["skipped"])


def test_a_reranker_failing_during_the_tune_skips_the_cut_only() -> None:
    from electa.eval.beir import BeirSet
    from electa.eval.runner import _fit_rerank_cut

    tables, qrels, _ = tables_of(60, rerank=True)
    beir = BeirSet("set", [], {q: f"question {q}" for q in tables}, qrels, "")
    cut, figures = _fit_rerank_cut(beir, tables, {q: ["a passage"] for q in tables}, sorted(tables), None, RERANKER,
                                   ScriptedScorer(error=OSError("connection refused")))
    assert cut is None and figures["kept"] is False and "connection refused" in str(figures["skipped"])


def test_a_tune_reads_a_rerankers_scores_only_on_the_questions_it_never_trained_on(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from electa.eval import runner
    from electa.eval.beir import BeirSet

    tables, qrels, _ = tables_of(80, rerank=True)
    beir = BeirSet("set", [], {q: f"question {q}" for q in tables}, qrels, "")
    fitted_on: list[list[str]] = []
    real = runner.fit_with_signal
    monkeypatch.setattr(runner, "fit_with_signal", lambda t, qr, qids, *a, **k: fitted_on.append(list(qids)) or real(
        t, qr, qids, *a, **k))
    scorer = ScriptedScorer(lambda q, p: 1.0)
    scorer.trained_questions = {"set": frozenset(f"q{i}" for i in range(20)), "other": frozenset({"q30"})}  # type: ignore[attr-defined]
    passages = {q: ["a passage"] for q in tables}
    _, figures = runner._fit_rerank_cut(beir, tables, passages, sorted(tables), None, "onnx:m", scorer)
    assert fitted_on == [sorted(f"q{i}" for i in range(20, 80))] and len(scorer.calls) == 60
    assert "trained_questions" not in figures and figures["left_out_trained"] == 20  # (the model said)
    # Trained on all but 40: too few left to fit the cut on.
    scorer.trained_questions = {"set": frozenset(f"q{i}" for i in range(40))}  # type: ignore[attr-defined]
    cut, figures = runner._fit_rerank_cut(beir, tables, passages, sorted(tables), None, "onnx:m", scorer)
    assert cut is None and "40 labelled questions the reranker did not train on" in str(figures["skipped"])
    assert figures["left_out_trained"] == 40
    # A model that does not say is read on every question, and the figures say it was not checked.
    for said in (None, {}):  # (an empty record says no more than none)
        scorer.trained_questions = said  # type: ignore[attr-defined]
        _, figures = runner._fit_rerank_cut(beir, tables, passages, sorted(tables), None, "onnx:m", scorer)
        assert fitted_on[-1] == sorted(tables) and "not recorded" in str(figures["trained_questions"])
        assert "left_out_trained" not in figures
    # One that names other sets only is read on every question too, and the figures say which it names.
    scorer.trained_questions = {"scifact": frozenset({"q1"})}  # type: ignore[attr-defined]
    _, figures = runner._fit_rerank_cut(beir, tables, passages, sorted(tables), None, "onnx:m", scorer)
    assert fitted_on[-1] == sorted(tables) and "in scifact, not in set" in str(figures["trained_questions"])


@pytest.mark.parametrize("bad", [10**400, float("nan"), "0.5", True])
def test_a_calibrator_with_a_number_that_is_not_a_finite_float_is_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="finite numbers"):
        Calibrator.from_dict({"kind": "isotonic", "xs": [0.1, bad], "ys": [0.0, 1.0]})


def test_electa_tune_scores_the_cut_with_the_agents_own_reranker(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from electa.eval import runner
    from electa.judges import agent_rerank

    monkeypatch.setattr(runner, "create_embedder", lambda name, *_: HashEmbedder(dim=64))
    monkeypatch.setenv("ELECTA_RERANK", RERANKER)
    shared: list[int] = []
    monkeypatch.setattr(HttpRerankScorer, "score", lambda self, q, ps, deadline=None: shared.append(1) or [0.0] * len(ps))
    own: list[int] = []

    def own_score(query: str, passage: str) -> float:
        own.append(1)
        return by_word(query, passage)

    monkeypatch.setattr(agent_rerank, "_onnx", lambda folder: ScriptedScorer(own_score))
    store = tmp_path / "store"
    model_id = "0123456789abcdef"
    with Engine.open(store, Settings(rerank=RERANKER), HashEmbedder(dim=64)) as engine:
        engine.store.set_agent_settings("acme", "bot", {"reranker": {"format": agent_rerank.FORMAT, "id": model_id}})
        (agent_rerank.agent_folder(engine.store.directory, "acme", "bot") / model_id).mkdir(parents=True)
    data, _ = widget_set(tmp_path / "set")
    result = runner.tune_dataset(data, "test", None, data_dir=store, folds=2, depth=20, agent=("acme", "bot"))
    # The shared reranker would tell nothing apart (it scores 0 everywhere) and is never asked.
    assert own and not shared
    assert result.rerank_cut and result.rerank_cut["kept"] and result.rerank_cut["reranker"] == f"agent:{model_id}"
    with Engine.open(store, Settings(rerank=RERANKER), HashEmbedder(dim=64)) as engine:
        stored = engine.store.agent_settings("acme", "bot") or {}
        assert RerankCut.from_dict(stored["rerank_cut"]).reranker == f"agent:{model_id}"
        assert stored["reranker"]["id"] == model_id  # (a tune keeps what train-rerank stored)

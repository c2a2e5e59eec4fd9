"""Halves dealt by thread: a question and every question sharing a relevant document with it
fall on the same side, so a model tuned on one half never saw the other half's answers."""

import gzip
import inspect
import json
from pathlib import Path

import pytest

from electa.errors import ConfigError
from electa.eval import abstention
from electa.eval.beir import half_of, load_beir, shared_between, thread_groups, thread_half_of
from electa.eval.folds import deal_folds, groups_for

# q1-q3 are one thread (q2 joins d1 and d2); q4 another; q5's only judgement is "not relevant".
QRELS = {"q1": {"d1": 1}, "q2": {"d1": 1, "d2": 2}, "q3": {"d2": 1}, "q4": {"d3": 1}, "q5": {"d1": 0, "d9": 0}}


def test_questions_joined_by_a_relevant_document_are_one_thread() -> None:
    assert thread_groups(QRELS) == {"q1": "q1", "q2": "q1", "q3": "q1", "q4": "q4", "q5": "q5"}


def many() -> dict[str, dict[str, int]]:
    # 60 threads of 1-4 paraphrases each, some threads joined through a shared second answer
    qrels: dict[str, dict[str, int]] = {}
    for t in range(60):
        for p in range(1 + t % 4):
            qrels[f"t{t}p{p}"] = {f"a{t}": 1, **({f"a{t + 1}": 1} if t % 7 == 0 and p == 0 else {})}
    return qrels


def test_thread_halves_share_no_relevant_document_and_cover_every_question() -> None:
    qrels = many()
    tune, test = thread_half_of(qrels, "tune-by-thread"), thread_half_of(qrels, "test-by-thread")
    assert not tune & test and tune | test == set(qrels)
    docs = [{d for q in half for d, g in qrels[q].items() if g > 0} for half in (tune, test)]
    assert not docs[0] & docs[1]
    assert 0.3 < len(test) / len(qrels) < 0.7
    assert thread_half_of(dict(reversed(qrels.items())), "test-by-thread") == test  # file order does not matter


def test_a_half_by_thread_is_named_in_the_error_and_needs_the_qrels() -> None:
    with pytest.raises(ConfigError, match="test-by-thread"):
        half_of(["q1"], "train")
    with pytest.raises(ConfigError, match="thread_half_of"):
        half_of(["q1"], "test-by-thread")


def write_set(folder: Path, qrels: dict[str, dict[str, int]]) -> Path:
    """``qrels`` as a BEIR set (split ``dev``) whose answer ``a<t>`` repeats its question's words."""
    (folder / "qrels").mkdir(parents=True)
    with gzip.open(folder / "corpus.jsonl.gz", "wt") as f:
        f.writelines(json.dumps({"_id": f"a{t}", "title": f"thread {t}", "text": f"answer t{t} about t{t}"}) + "\n"
                     for t in range(61))
    with gzip.open(folder / "queries.jsonl.gz", "wt") as f:
        f.writelines(json.dumps({"_id": q, "text": f"{q.split('p')[0]} question"}) + "\n" for q in qrels)
    (folder / "qrels" / "dev.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{g}\n" for q, r in qrels.items() for d, g in r.items()))
    return folder


def test_load_beir_reads_a_half_by_thread(tmp_path: Path) -> None:
    qrels = many()
    beir = load_beir(write_set(tmp_path, qrels), "dev:test-by-thread")
    assert set(beir.queries) == set(beir.qrels) == thread_half_of(qrels, "test-by-thread")


def test_grouped_cross_validation_keeps_a_thread_in_one_fold(monkeypatch: pytest.MonkeyPatch) -> None:
    qrels = many()
    tables = {q: [(next(iter(r)), 0.6, {"dense": 0.8}), ("n", 0.6, {"dense": 0.4})] for q, r in qrels.items()}
    groups = thread_groups(qrels)
    measured: list[frozenset[str]] = []
    inner = abstention.measure
    monkeypatch.setattr(abstention, "measure",
                        lambda t, qr, test, *a, **k: measured.append(frozenset(test)) or inner(t, qr, test, *a, **k))
    abstention.cross_validate(tables, qrels, folds=5, groups=groups)
    folds = set(measured)
    assert len(folds) == 5 and set().union(*folds) == set(qrels)
    for fold in folds:  # every thread is wholly in a measured fold or wholly out of it
        assert all((q in fold) == (groups[q] in {groups[m] for m in fold}) for q in qrels)
    measured.clear()
    abstention.cross_validate(tables, qrels, folds=5)  # (by question: some thread is split)
    assert any(any((q in fold) != (groups[q] in {groups[m] for m in fold}) for q in qrels) for fold in set(measured))


def test_folds_of_whole_threads_are_balanced_around_one_giant_thread() -> None:
    # One thread of 40 paraphrases, then 20 threads of one question each, into 5 folds.
    groups = {**{f"g{p}": "g" for p in range(40)}, **{f"s{t}": f"s{t}" for t in range(20)}}
    parts = deal_folds(sorted(groups), 5, seed=13, groups=groups)
    giant = next(p for p in parts if "g0" in p)
    assert sorted(giant) == sorted(q for q in groups if q.startswith("g"))  # whole, and alone
    rest = sorted(len(p) for p in parts if p is not giant)
    assert rest == [5, 5, 5, 5]  # the small threads spread evenly over the other folds
    assert sorted(q for p in parts for q in p) == sorted(groups)


def test_fewer_threads_than_folds_is_refused_not_measured_on_empty_folds() -> None:
    groups = {**{f"a{p}": "a" for p in range(10)}, **{f"b{p}": "b" for p in range(10)}, "c": "c"}
    with pytest.raises(ConfigError, match=r"only 3 groups.*fewer than 5 folds"):
        deal_folds(sorted(groups), 5, seed=13, groups=groups)


def test_the_floor_inside_a_grouped_fold_is_cross_fitted_by_thread_too(monkeypatch: pytest.MonkeyPatch) -> None:
    qrels = many()
    tables = {q: [(next(iter(r)), 0.6, {"dense": 0.8}), ("n", 0.6, {"dense": 0.4})] for q, r in qrels.items()}
    groups = thread_groups(qrels)
    scored: list[list[str]] = []  # each inner fold choose_floor scores with calibrators fitted without it
    inner = abstention.keep_grid
    monkeypatch.setattr(abstention, "keep_grid",
                        lambda t, qr, qids, *a, **k: scored.append(list(qids)) or inner(t, qr, qids, *a, **k))
    abstention.cross_validate(tables, qrels, folds=5, groups=groups)
    assert len(scored) == 25  # five inner folds in each of five outer ones, in turn
    for outer in range(5):
        threads = [{groups[q] for q in part} for part in scored[5 * outer: 5 * outer + 5]]
        assert all(not threads[a] & threads[b] for a in range(5) for b in range(a + 1, 5))


def whole(parts: list[set[str]], groups: dict[str, str]) -> bool:
    """Whether no thread has questions in two of ``parts``."""
    threads = [{groups[q] for q in part} for part in parts]
    return all(not threads[a] & threads[b] for a in range(len(parts)) for b in range(a + 1, len(parts)))


def test_a_split_dealt_by_thread_asks_for_folds_by_thread() -> None:
    qrels = many()
    assert groups_for("dev:tune", qrels) is None and groups_for("golden", qrels) is None
    assert groups_for("dev:tune-by-thread", qrels) == thread_groups(qrels)


def test_with_few_threads_the_floor_is_still_cross_fitted_one_thread_a_fold(monkeypatch: pytest.MonkeyPatch) -> None:
    qrels = {**{f"a{p}": {"x": 1} for p in range(8)}, **{f"b{p}": {"y": 1} for p in range(8)},
             **{f"c{p}": {"z": 1} for p in range(8)}}
    tables = {q: [(next(iter(r)), 0.6, {"dense": 0.8}), ("n", 0.6, {"dense": 0.4})] for q, r in qrels.items()}
    groups = thread_groups(qrels)
    scored: list[set[str]] = []
    inner = abstention.keep_grid
    monkeypatch.setattr(abstention, "keep_grid",
                        lambda t, qr, qids, *a, **k: scored.append(set(qids)) or inner(t, qr, qids, *a, **k))
    abstention.choose_floor(tables, qrels, sorted(qrels), 0.9, groups=groups)
    assert len(scored) == 3 and whole(scored, groups)  # three threads: three folds, not one in-sample fit


def test_the_fusion_tune_and_the_ranker_hold_whole_threads_out(monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    from electa.eval import ltr, tuning
    from electa.judges.ltr_features import FEATURES

    qrels = many()
    groups = thread_groups(qrels)
    lists = {q: {"fulltext": [(next(iter(r)), 2.0), ("n", 1.0)], "dense": [("n", 0.9), (next(iter(r)), 0.8)]}
             for q, r in qrels.items()}
    measured: list[set[str]] = []
    inner = tuning.mean_ndcg
    monkeypatch.setattr(tuning, "mean_ndcg", lambda pq, qr, setting, qids, *a, **k: (
        measured.append(set(qids)) or inner(pq, qr, setting, qids, *a, **k)))
    default = tuning.FusionSetting({"fulltext": 1.0, "dense": 1.0}, 60, {"fulltext": 2, "dense": 2}, None)
    tuning.tune(lists, qrels, default, 5, groups=groups)
    held = {frozenset(m) for m in measured if len(m) < len(qrels) * 0.5}  # each fold's held-out questions
    assert len(held) == 5 and whole([set(m) for m in held], groups)
    rng = np.random.default_rng(0)
    rows = {q: (rng.normal(size=(2, len(FEATURES))), [next(iter(r)), "n"], np.ones(2, dtype=bool)) for q, r in qrels.items()}
    trained: list[set[str]] = []
    real_fit = ltr.fit
    monkeypatch.setattr(ltr, "fit", lambda r, g, qids, names=FEATURES: trained.append(set(qids)) or real_fit(r, g, qids, names))
    monkeypatch.setattr(ltr, "PARAMS", {**ltr.PARAMS, "min_data_in_leaf": 1})
    ltr.cross_validate(rows, qrels, 5, groups=groups)
    assert len(trained) == 5 and whole([set(qrels) - t for t in trained], groups)


@pytest.mark.tuner
@pytest.mark.parametrize("split", ["dev:tune", "dev:tune-by-thread"])
def test_tune_and_eval_of_a_half_dealt_by_thread_cross_validate_by_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                          split: str) -> None:
    from electa.embedders.hashing import HashEmbedder
    from electa.eval import ltr, runner

    monkeypatch.setattr(runner, "create_embedder", lambda name, *_: HashEmbedder(dim=64))
    data = write_set(tmp_path / "set", many())
    asked: dict[str, object] = {}  # the groups each was first called with
    for module, name in ((runner, "tune"), (abstention, "choose_floor"), (runner, "cross_validate"),
                         (ltr, "cross_validate")):
        monkeypatch.setattr(module, name, spy(asked, f"{module.__name__}.{name}", getattr(module, name)))
    store = tmp_path / "store"
    runner.tune_dataset(data, split, None, data_dir=store, folds=5, depth=20)
    report = runner.run_eval(data, split.replace("tune", "test"), data_dir=store,
                             fitted={"tuned settings": {"dataset": "set", "split": split}})
    # (halves dealt by question share threads, so the measured half's answers were tuned on)
    assert bool(report.notes) == (not split.endswith("by-thread"))
    assert all(n.startswith("tuned settings: fitted on set (dev:tune)") and "relevant documents" in n for n in report.notes)
    ltr.train_ltr(data, split, tmp_path / "ltr-store", folds=5, leg_depth=10, min_queries=10)
    for name, half in (("runner.tune", "tune-by-thread"), ("abstention.choose_floor", "tune-by-thread"),
                       ("runner.cross_validate", "test-by-thread"), ("ltr.cross_validate", "tune-by-thread")):
        name = f"electa.eval.{name}"
        threads = thread_groups({q: r for q, r in many().items() if q in thread_half_of(many(), half)})
        assert asked[name] == (threads if split.endswith("by-thread") else None), name


def spy(asked: dict[str, object], name: str, real):  # type: ignore[no-untyped-def]
    """``real``, recording in ``asked`` the ``groups`` its first call was given, by keyword or position."""
    signature = inspect.signature(real)

    def call(*a, **k):  # type: ignore[no-untyped-def]
        asked.setdefault(name, signature.bind(*a, **k).arguments.get("groups"))
        return real(*a, **k)
    return call


def test_a_split_with_fewer_threads_than_folds_is_refused_before_a_search(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from electa.embedders.hashing import HashEmbedder
    from electa.eval import ltr, runner

    loaded: list[str] = []
    monkeypatch.setattr(runner, "create_embedder", lambda name, *_: loaded.append(name) or HashEmbedder(dim=64))
    three = {f"t{t}p{p}": {f"a{t}": 1} for t in range(6) for p in range(8)}  # 6 threads: 3 a half
    data = write_set(tmp_path / "set", three)
    searched: list[int] = []
    monkeypatch.setattr(runner, "collect_leg_lists", lambda *a, **k: searched.append(1))
    monkeypatch.setattr(ltr, "collect", lambda *a, **k: searched.append(1))
    with pytest.raises(ConfigError, match="3 threads, fewer than 5 folds: use --folds 3"):
        runner.tune_dataset(data, "dev:tune-by-thread", None, data_dir=tmp_path / "store", folds=5)
    with pytest.raises(ConfigError, match="3 threads, fewer than 5 folds"):
        ltr.train_ltr(data, "dev:tune-by-thread", tmp_path / "ltr-store", folds=5, min_queries=10)
    # (nor a model loaded, nor a store opened or created)
    assert not searched and not loaded
    assert not (tmp_path / "store").exists() and not (tmp_path / "ltr-store").exists()


def test_abstention_by_thread_holds_out_what_few_threads_allow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    from electa.embedders.hashing import HashEmbedder
    from electa.eval import runner

    three = {f"t{t}p{p}": {f"a{t}": 1} for t in range(6) for p in range(8)}
    tables = {q: [(next(iter(r)), 0.6, {"dense": 0.8}), ("n", 0.6, {"dense": 0.4})] for q, r in three.items()}
    groups = thread_groups(three)
    assert abstention.cross_validate(tables, three, folds=5, groups=groups).folds == 5  # six threads
    few = {q: r for q, r in three.items() if q.startswith(("t0", "t1", "t2"))}
    assert abstention.cross_validate({q: tables[q] for q in few}, few, folds=5, groups=groups).folds == 3
    one = {q: r for q, r in three.items() if q.startswith("t0")}
    with pytest.raises(ConfigError, match="one thread"):
        abstention.cross_validate({q: tables[q] for q in one}, one, folds=5, groups=groups)
    fitted, figures = abstention.fit_with_signal(abstention.with_signal({q: tables[q] for q in one}, "rerank",
                                                                        {q: [1.0, 0.0] for q in one}), one, sorted(one),
                                                 "rerank", groups=groups)
    assert fitted is None and "one thread" in str(figures["skipped"])
    # An eval of a half with one thread of 24 questions still reports its ranking; abstention's
    # cross-validation, which needs a thread to hold out, is left out and the log says why; the
    # rows fitted on nothing here (the fixed floor, a tune file's calibrators and floor) stay.
    monkeypatch.setattr(runner, "create_embedder", lambda name, *_: HashEmbedder(dim=64))
    big = {f"t{t}p{p}": {f"a{t}": 1} for t in range(3) for p in range(24)}
    data = write_set(tmp_path / "set", big)
    single = next(h for h in ("tune-by-thread", "test-by-thread")
                  if len({thread_groups(big)[q] for q in thread_half_of(big, h)}) == 1)
    assert len(thread_half_of(big, single)) == 24
    from electa.calibration import fit_isotonic

    tune_file = ({"dense": fit_isotonic([0.2, 0.9], [0, 1])}, 0.5, {"dataset": "set", "split": "dev:other"})
    with caplog.at_level("WARNING", logger="electa.eval.runner"):
        report = runner.run_eval(data, f"dev:{single}", runs_dir=tmp_path / "runs", data_dir=tmp_path / "store",
                                 calibration=tune_file)
    assert "abstention not cross-validated" in caplog.text and "one thread" in caplog.text
    assert report.metrics and report.abstention["folds"] == 0 and report.abstention["queries"] == 24
    rows = report.abstention["rows"]
    assert [r["rule"].split(" (")[0] for r in rows] == ["absolute score >= 0.4", "calibrated, calibrators and floor from"
                                                        " the tune file, fitted on set"]
    assert all(0.0 <= r["keep_answerable"] <= 1.0 for r in rows) and rows[1]["floor"] == 0.5
    assert "not cross-validated: one thread" in (tmp_path / "runs" / "report.md").read_text()
    assert not (tmp_path / "runs" / "calibration.png").exists()


def test_folds_by_question_are_dealt_as_before() -> None:
    # (pinned: every figure measured by question before threads were dealt stays as it was)
    assert deal_folds([f"q{i}" for i in range(12)], 5, 13) == [
        ["q8", "q1", "q11"], ["q7", "q6", "q4"], ["q0", "q9"], ["q10", "q3"], ["q5", "q2"]]


def test_the_questions_and_answers_two_splits_share_are_named() -> None:
    qrels = many()
    tune, test = (thread_half_of(qrels, h) for h in ("tune-by-thread", "test-by-thread"))
    assert shared_between({q: qrels[q] for q in tune}, {q: qrels[q] for q in test}) == (set(), set())
    by_question = {q: qrels[q] for q in half_of(qrels, "tune")}
    questions, pages = shared_between(by_question, {q: qrels[q] for q in test})
    assert questions == set(by_question) & test and pages
    assert shared_between({"q1": {"d1": 1, "d2": 0}}, {"q2": {"d2": 1, "d1": 1}}) == (set(), {"d1"})  # (d2: not in both)


def test_the_rerankers_cut_is_fitted_by_thread_when_the_tune_is(monkeypatch: pytest.MonkeyPatch) -> None:
    from electa.eval import runner
    from electa.eval.beir import BeirSet
    from electa.testing.fakes import ScriptedScorer

    qrels = many()
    groups = thread_groups(qrels)
    tables = {q: [(next(iter(r)), 0.6, {"dense": 0.8}), ("n", 0.6, {"dense": 0.8})] for q, r in qrels.items()}
    asked: dict[str, object] = {}
    for module, name in ((runner, "fit_with_signal"), (abstention, "cross_validate"), (abstention, "choose_floor")):
        monkeypatch.setattr(module, name, spy(asked, name, getattr(module, name)))
    beir = BeirSet("s", [], {q: q for q in qrels}, qrels, "dev:tune-by-thread")
    runner._fit_rerank_cut(beir, tables, {q: ["right", "near copy"] for q in qrels}, sorted(qrels), None, "onnx:x",
                           ScriptedScorer(lambda q, p: 1.0 if p == "right" else 0.0), groups=groups)
    assert asked == {"fit_with_signal": groups, "cross_validate": groups, "choose_floor": groups}


def test_a_fit_on_the_measured_questions_or_another_set_is_named_or_ignored(tmp_path: Path) -> None:
    from electa.eval.runner import fitted_overlap

    data = write_set(tmp_path / "set", many())
    measured = load_beir(data, "dev:test-by-thread")
    note = fitted_overlap(data, measured, "dev:test-by-thread", "ranker", {"dataset": "set", "split": "dev:test-by-thread"})
    assert f"holds {len(measured.queries)} of the questions" in note
    assert fitted_overlap(data, measured, "dev:test-by-thread", "ranker", {"dataset": "other", "split": "dev"}) == ""
    assert fitted_overlap(data, measured, "dev:test-by-thread", "ranker", {"dataset": "set", "split": "nope"}) == ""


def test_a_splits_judgments_are_read_without_the_corpus_and_a_bad_score_is_named(tmp_path: Path) -> None:
    from electa.eval.beir import load_qrels

    data = write_set(tmp_path / "set", many())
    for split in ("dev", "dev:tune", "dev:test-by-thread"):
        assert load_qrels(data, split) == load_beir(data, split).qrels
    (data / "corpus.jsonl.gz").unlink()  # (not read)
    assert load_qrels(data, "dev:tune")
    (data / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\thigh\n")
    with pytest.raises(ConfigError, match=r"dev.tsv line 2: the score 'high' is not a whole number"):
        load_qrels(data, "dev")


def test_the_abstention_bench_knows_which_questions_a_reranker_trained_on(tmp_path: Path) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("abstention_rerank",
                                                  Path(__file__).resolve().parents[2] / "bench" / "abstention_rerank.py")
    bench = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(bench)  # type: ignore[union-attr]
    stackfaq = write_set(tmp_path / "stackfaq", many())

    def model(meta: dict[str, object] | None) -> str:
        folder = tmp_path / f"m{len(list(tmp_path.iterdir()))}"
        folder.mkdir()
        if meta is not None:
            (folder / "electa.json").write_text(json.dumps(meta))
        return f"onnx:{folder}"

    assert bench.trained_questions("nanoranker", stackfaq) == set()  # (not trained here)
    assert bench.trained_questions(model({"trained_questions": {"stackfaq": ["t1p0"]}}), stackfaq) == {"t1p0"}
    tune = set(load_beir(stackfaq, "dev:tune").queries)
    assert bench.trained_questions(model({"trained_on": {"stackfaq": "dev minus held-out (half)"}}), stackfaq) == tune
    by_thread = bench.trained_questions(model({"trained_on": {"stackfaq": "dev minus held-out (thread)"}}), stackfaq)
    assert by_thread == thread_half_of(many(), "tune-by-thread")
    assert bench.trained_questions(model({"trained_on": {"scifact": "train"}}), stackfaq) == set()  # (another set)
    assert bench.trained_questions(model(None), stackfaq) is None  # (says nothing: the bench notes it)


@pytest.mark.tuner
def test_the_tunes_cut_is_fitted_on_the_candidates_its_tuned_setting_serves(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # Abstention reads a table in its order, so the floor an agent is tuned to must be chosen on
    # the order (and the candidates, and the legs' votes) its tuned fusion serves it, not the
    # default one's. Here the tune chooses each leg at depth 2, plain RRF.
    from dataclasses import replace

    from electa.embedders.hashing import HashEmbedder
    from electa.eval import runner
    from electa.eval.tuning import FusionSetting

    monkeypatch.setattr(runner, "create_embedder", lambda name, *_: HashEmbedder(dim=64))
    data = write_set(tmp_path / "set", many())
    real_tune, real_floor = runner.tune, abstention.choose_floor

    def shallow(lists, qrels, default, *a, **k):  # type: ignore[no-untyped-def]
        return replace(real_tune(lists, qrels, default, *a, **k),
                       chosen=FusionSetting(dict(default.weights), 60.0, dict.fromkeys(default.depths, 2), None))
    fitted: list[dict[str, list[abstention.Candidate]]] = []
    monkeypatch.setattr(runner, "tune", shallow)
    monkeypatch.setattr(abstention, "choose_floor", lambda tables, *a, **k: fitted.append(tables) or real_floor(tables, *a, **k))
    out = tmp_path / "tuned.json"
    result = runner.tune_dataset(data, "dev", out, data_dir=tmp_path / "store", folds=5, depth=20)
    assert result.calibrated_floor is not None and len(fitted) == 1
    legs = len(result.chosen.depths)
    # (at depth 20 a question meets many of the 61 answers; served at depth 2 a leg, at most 2 a leg)
    assert all(len(rows) <= 2 * legs for rows in fitted[0].values())
    assert all(len(votes) <= legs for rows in fitted[0].values() for _, _, votes in rows)
    # `electa eval --tuned` measures the tune file's cut on the same order: the tuned searches'.
    from electa.eval.tuning import load_calibration, load_setting

    measured: list[dict[str, list[abstention.Candidate]]] = []
    real_given = runner.at_given_floor
    monkeypatch.setattr(runner, "at_given_floor", lambda tables, *a, **k: measured.append(tables) or real_given(tables, *a, **k))
    report = runner.run_eval(data, "dev", data_dir=tmp_path / "store", tuned=load_setting(out),
                             calibration=load_calibration(out))
    assert len(measured) == 1 and report.abstention is not None and len(report.abstention["rows"]) == 3
    assert all(len(rows) <= 2 * legs for rows in measured[0].values())


def test_eval_reads_abstention_on_the_candidates_each_leg_serves_at_its_depth(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # The ranking rows search 20 a leg; an untuned search serves each leg at its configured
    # depth (here 2), and the abstention rows read those candidates, not the deeper run's.
    from electa.config import Settings
    from electa.embedders.hashing import HashEmbedder
    from electa.eval import runner

    monkeypatch.setattr(runner, "create_embedder", lambda name, *_: HashEmbedder(dim=64))
    data = write_set(tmp_path / "set", many())
    measured: list[dict[str, list[abstention.Candidate]]] = []
    real = runner.cross_validate
    monkeypatch.setattr(runner, "cross_validate", lambda tables, *a, **k: measured.append(tables) or real(tables, *a, **k))
    settings = Settings(depths={"fulltext": 2, "dense": 2, "qa": 2, "sparse": 2, "graph": 2})
    report = runner.run_eval(data, "dev", data_dir=tmp_path / "store", settings=settings, depth=20)
    assert report.metrics and len(measured) == 1
    assert all(len(rows) <= 6 for rows in measured[0].values())  # (three legs, two each at most)
    assert max(len(rows) for rows in measured[0].values()) >= 2


@pytest.mark.tuner
def test_an_agent_whose_tune_keeps_the_default_is_served_the_servers_own_fusion(tmp_path: Path,
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # Found by review: a tie keeps the tune's default, whose depths are the tune's (100 a leg,
    # the Q&A leg too), not the ones an untuned agent is served (50, Q&A 8): storing it would
    # have pinned the agent to them. A setting chosen over the default is stored as chosen.
    from dataclasses import replace

    from electa.config import Settings
    from electa.embedders.hashing import HashEmbedder
    from electa.engine import Engine
    from electa.eval import runner
    from electa.eval.tuning import FusionSetting

    monkeypatch.setattr(runner, "create_embedder", lambda name, *_: HashEmbedder(dim=64))
    data = write_set(tmp_path / "set", many())
    real_tune = runner.tune
    pick: list[str] = ["default"]

    def chosen(lists, qrels, default, *a, **k):  # type: ignore[no-untyped-def]
        result = real_tune(lists, qrels, default, *a, **k)
        if pick[0] == "default":
            return replace(result, chosen=default)
        return replace(result, chosen=FusionSetting(dict(default.weights), 5.0, dict.fromkeys(default.depths, 25), 1.0))

    monkeypatch.setattr(runner, "tune", chosen)
    store = tmp_path / "store"

    def fusion() -> object:
        with Engine.open(store, Settings(), HashEmbedder(dim=64)) as engine:
            return (engine.store.agent_settings("acme", "bot") or {}).get("fusion")

    runner.tune_dataset(data, "dev", None, data_dir=store, folds=3, depth=100, agent=("acme", "bot"))
    assert fusion() == {}
    pick[0] = "other"
    runner.tune_dataset(data, "dev", None, data_dir=store, folds=3, depth=100, agent=("acme", "bot"))
    stored = fusion()
    assert isinstance(stored, dict) and stored["k"] == 5.0 and set(stored["depths"].values()) == {25}

"""Halves dealt by thread: a question and every question sharing a relevant document with it
fall on the same side, so a model tuned on one half never saw the other half's answers."""

import gzip
import json
from pathlib import Path

import pytest

from electa.errors import ConfigError
from electa.eval import abstention
from electa.eval.beir import half_of, load_beir, thread_groups, thread_half_of

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


def test_load_beir_reads_a_half_by_thread(tmp_path: Path) -> None:
    qrels = many()
    (tmp_path / "qrels").mkdir()
    with gzip.open(tmp_path / "corpus.jsonl.gz", "wt") as f:
        f.writelines(json.dumps({"_id": f"a{t}", "title": "", "text": f"answer {t}"}) + "\n" for t in range(61))
    with gzip.open(tmp_path / "queries.jsonl.gz", "wt") as f:
        f.writelines(json.dumps({"_id": q, "text": q}) + "\n" for q in qrels)
    (tmp_path / "qrels" / "dev.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{g}\n" for q, r in qrels.items() for d, g in r.items()))
    beir = load_beir(tmp_path, "dev:test-by-thread")
    assert set(beir.queries) == set(beir.qrels) == thread_half_of(qrels, "test-by-thread")


def test_grouped_cross_validation_keeps_a_thread_in_one_fold(monkeypatch: pytest.MonkeyPatch) -> None:
    qrels = many()
    tables = {q: [(next(iter(r)), 0.6, {"dense": 0.8}), ("n", 0.6, {"dense": 0.4})] for q, r in qrels.items()}
    groups = thread_groups(qrels)
    measured: list[frozenset[str]] = []
    inner = abstention.measure
    monkeypatch.setattr(abstention, "measure",
                        lambda t, qr, test, *a: measured.append(frozenset(test)) or inner(t, qr, test, *a))
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
    parts = abstention.deal_folds(sorted(groups), 5, seed=13, groups=groups)
    giant = next(p for p in parts if "g0" in p)
    assert sorted(giant) == sorted(q for q in groups if q.startswith("g"))  # whole, and alone
    rest = sorted(len(p) for p in parts if p is not giant)
    assert rest == [5, 5, 5, 5]  # the small threads spread evenly over the other folds
    assert sorted(q for p in parts for q in p) == sorted(groups)


def test_fewer_threads_than_folds_is_refused_not_measured_on_empty_folds() -> None:
    groups = {**{f"a{p}": "a" for p in range(10)}, **{f"b{p}": "b" for p in range(10)}, "c": "c"}
    with pytest.raises(ConfigError, match=r"only 3 groups.*fewer than 5 folds"):
        abstention.deal_folds(sorted(groups), 5, seed=13, groups=groups)
    tables = {q: [(q + "-doc", 0.6, {"dense": 0.8})] for q in groups}
    with pytest.raises(ConfigError, match="threads"):
        abstention.cross_validate(tables, {q: {q + "-doc": 1} for q in groups}, folds=5, groups=groups)


def test_the_floor_inside_a_grouped_fold_is_cross_fitted_by_thread_too(monkeypatch: pytest.MonkeyPatch) -> None:
    qrels = many()
    tables = {q: [(next(iter(r)), 0.6, {"dense": 0.8}), ("n", 0.6, {"dense": 0.4})] for q, r in qrels.items()}
    groups = thread_groups(qrels)
    scored: list[list[str]] = []  # each inner fold choose_floor scores with calibrators fitted without it
    inner = abstention.keep_limits
    monkeypatch.setattr(abstention, "keep_limits",
                        lambda t, qr, qids, *a, **k: scored.append(list(qids)) or inner(t, qr, qids, *a, **k))
    abstention.cross_validate(tables, qrels, folds=5, groups=groups)
    assert len(scored) == 25  # five inner folds in each of five outer ones, in turn
    for outer in range(5):
        threads = [{groups[q] for q in part} for part in scored[5 * outer: 5 * outer + 5]]
        assert all(not threads[a] & threads[b] for a in range(5) for b in range(a + 1, 5))

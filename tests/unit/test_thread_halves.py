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

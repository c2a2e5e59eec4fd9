"""Reading a BEIR-layout directory: corpus.jsonl(.gz), queries.jsonl(.gz), qrels/<split>.tsv."""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from electa.errors import ConfigError
from electa.types import Document, Section


@dataclass(frozen=True)
class BeirSet:
    name: str
    corpus: list[Document]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    corpus_hash: str


def _read_lines(directory: Path, stem: str) -> tuple[Path, list[str]]:
    for name in (f"{stem}.jsonl.gz", f"{stem}.jsonl"):
        path = directory / name
        if path.exists():
            opener = gzip.open if name.endswith(".gz") else open
            with opener(path, "rt", encoding="utf-8") as handle:  # type: ignore[operator]
                return path, handle.read().splitlines()
    raise ConfigError(f"{directory} has no {stem}.jsonl(.gz): is it a BEIR-layout directory?")


HALVES = ("tune", "test")
# The same two halves dealt by thread (see ``thread_groups``): no relevant document is shared
# across them, so a model tuned on one half never saw the other's answers.
BY_THREAD = "-by-thread"


def _check_half(half: str) -> None:
    if half.removesuffix(BY_THREAD) not in HALVES:
        valid = ", ".join([*HALVES, *(h + BY_THREAD for h in HALVES)])
        raise ConfigError(f"unknown half {half!r}: use one of {valid} (e.g. --split dev:test)")


def deal(qids: Iterable[str]) -> list[str]:
    """``qids`` in a fixed order given by a hash of each id: independent of file order and the
    same on every machine, so every n-th of them is a fixed, even share (halves, folds)."""
    return sorted(qids, key=lambda q: (hashlib.sha256(q.encode()).hexdigest(), q))


def half_of(qids: Iterable[str], half: str) -> set[str]:
    """One of two fixed halves of ``qids``, for a set that ships a single labelled split.

    Queries are ordered by a hash of their id and dealt alternately, so the halves are equal
    (±1), independent of file order, and the same on every machine: ``dev:tune`` to tune on,
    ``dev:test`` to measure on data the tuner never saw."""
    if half not in HALVES:
        _check_half(half)
        raise ConfigError(f"half {half!r} is dealt by thread: use thread_half_of with the qrels")
    return set(deal(qids)[HALVES.index(half)::2])


def thread_groups(qrels: Mapping[str, Mapping[str, int]]) -> dict[str, str]:
    """Each query's thread: the connected part of the graph joining queries to their relevant
    documents, named by its smallest query id (in string order). StackFAQ's questions are paraphrases of a few
    threads each (125 in its dev split), so questions of one thread answer each other; a hold-out that keeps a
    thread's questions on one side measures questions whose answers were never seen."""
    parent: dict[str, str] = {}

    def root(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for qid, judged in qrels.items():
        for doc, grade in judged.items():
            if grade > 0:
                a, b = root("q" + qid), root("d" + doc)
                if a != b:
                    parent[max(a, b)] = min(a, b)
    members: dict[str, list[str]] = {}
    for qid in qrels:
        members.setdefault(root("q" + qid), []).append(qid)
    return {q: min(qs) for qs in members.values() for q in qs}


def thread_half_of(qrels: Mapping[str, Mapping[str, int]], half: str) -> set[str]:
    """One of two fixed halves of the queries of ``qrels`` dealt by whole threads
    (:func:`thread_groups`, ordered by :func:`deal`), so no thread is on both sides."""
    _check_half(half)
    group = thread_groups(qrels)
    chosen = set(deal(set(group.values()))[HALVES.index(half.removesuffix(BY_THREAD))::2])
    return {q for q, g in group.items() if g in chosen}


def shared_between(a: Mapping[str, Mapping[str, int]], b: Mapping[str, Mapping[str, int]]) -> tuple[set[str], set[str]]:
    """The questions two labelled splits (their qrels) both hold, and the documents relevant in
    both: a model fitted on ``a`` and measured on ``b`` has seen the first, and has seen the
    answers of the second (``dev:tune`` and ``dev:test`` share most of StackFAQ's threads;
    the halves dealt by thread share none)."""
    def relevant(qrels: Mapping[str, Mapping[str, int]]) -> set[str]:
        return {d for judged in qrels.values() for d, g in judged.items() if g > 0}

    return set(a) & set(b), relevant(a) & relevant(b)


def _read_qrels(directory: Path, split: str) -> dict[str, dict[str, int]]:
    qrels_path = directory / "qrels" / f"{split}.tsv"
    if not qrels_path.exists():
        found = sorted(p.stem for p in (directory / "qrels").glob("*.tsv")) if (directory / "qrels").exists() else []
        raise ConfigError(f"no qrels for split {split!r} in {directory}; splits here: {', '.join(found) or 'none'}")
    qrels: dict[str, dict[str, int]] = {}
    for i, line in enumerate(qrels_path.read_text(encoding="utf-8").splitlines()):
        parts = line.split("\t")
        if i == 0 and not parts[-1].strip().lstrip("-").isdigit():
            continue
        if len(parts) < 3:
            continue
        try:
            qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
        except ValueError:
            raise ConfigError(f"{qrels_path} line {i + 1}: the score {parts[2]!r} is not a whole number") from None
    return qrels


def _read_queries(directory: Path, qrels: Mapping[str, Mapping[str, int]], half: str) -> dict[str, str]:
    """The texts of the judged queries, only those of ``half`` when one is named."""
    _, qlines = _read_lines(directory, "queries")
    queries = {}
    for line in qlines:
        if line.strip():
            rec = json.loads(line)
            if str(rec["_id"]) in qrels:
                queries[str(rec["_id"])] = str(rec["text"])
    if half:
        keep = thread_half_of(qrels, half) if half.endswith(BY_THREAD) else half_of(queries, half)
        queries = {q: t for q, t in queries.items() if q in keep}
    return queries


def load_qrels(directory: str | Path, split: str) -> dict[str, dict[str, int]]:
    """The judgments of ``split`` (a half too, as :func:`load_beir` names them) without reading
    the corpus."""
    directory = Path(directory)
    split, _, half = split.partition(":")
    if half:
        _check_half(half)
    qrels = _read_qrels(directory, split)
    queries = _read_queries(directory, qrels, half)
    return {q: r for q, r in qrels.items() if q in queries}


def load_beir(directory: str | Path, split: str) -> BeirSet:
    """Load a BEIR set; only queries judged in ``split`` are kept.

    Qrels lines are ``query-id<TAB>corpus-id<TAB>score`` after a header; a score of 0 is a
    judged non-relevant document. ``split`` may name a half of a split, ``dev:tune`` or
    ``dev:test`` (see ``half_of``), or a half dealt by thread, ``dev:test-by-thread`` (see
    ``thread_half_of``)."""
    directory = Path(directory)
    split, _, half = split.partition(":")
    if half:
        _check_half(half)  # before the corpus is read
    qrels = _read_qrels(directory, split)
    corpus_path, lines = _read_lines(directory, "corpus")
    digest = hashlib.sha256()
    corpus: list[Document] = []
    for line in lines:
        if not line.strip():
            continue
        digest.update((line + "\n").encode())
        rec = json.loads(line)
        title, text = str(rec.get("title") or ""), str(rec.get("text") or "")
        corpus.append(Document(str(rec["_id"]), title, text, sections=(Section((), text),)))
    queries = _read_queries(directory, qrels, half)
    name = directory.name if directory.name not in {"en", "de", "es", "zh"} else f"{directory.parent.name}-{directory.name}"
    return BeirSet(name, corpus, queries, {q: r for q, r in qrels.items() if q in queries},
                   digest.hexdigest()[:16] + f"-{corpus_path.stat().st_size}")

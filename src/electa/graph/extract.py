"""Entities and relations in a unit's text, for the knowledge graph (SPEC A6, issue 11).

What a support knowledge base names and a question names back: error codes ("E1042"), plans
("the Growth plan", "the Growth and Enterprise plans"), settings paths ("Settings > Billing >
Plan"), integrations ("the Slack integration"), SKUs ("TLY-2041") and versions ("v2.3",
"version 3.8"). The default extractor, :class:`PatternExtractor`, finds them with patterns and
needs no model; another (a named-entity model, a language model) plugs in behind
:class:`EntityExtractor`.

Relations come from sentences that name two entities or more:

- a cue between them gives its kind: "X requires / needs / depends on Y" (``requires``),
  "X is part of / is included in / is available on Y" (``part_of``), "X includes / contains Y"
  (``part_of`` the other way), "X fixes / resolves Y" (``fixes``);
- without a cue they are ``related`` (named together), weighted by closeness: 1 / (1 + the
  number of entities between them);
- and a unit's headings are sections: every entity a section names is ``in_section`` of it.

Every relation keeps the sentence that states it, so a graph answer can quote its evidence.

Example::

    >>> found = PatternExtractor().extract("Integrations > Slack",
    ...     "The Slack integration is part of the Growth and Enterprise plans.")
    >>> sorted(e.key for e in found.entities)
    ['integration:slack', 'plan:enterprise', 'plan:growth', 'section:integrations', 'section:integrations > slack']
    >>> [(r.source, r.kind, r.target) for r in found.relations if r.source == "integration:slack" and r.kind == "part_of"]
    [('integration:slack', 'part_of', 'plan:growth'), ('integration:slack', 'part_of', 'plan:enterprise')]
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from electa.errors import ConfigError


@dataclass(frozen=True)
class Entity:
    """A node to be: ``key`` (kind and folded name) is its identity within an organisation;
    ``name`` as the text first wrote it."""

    key: str
    name: str
    kind: str


@dataclass(frozen=True)
class Mention:
    """Where a unit's text names an entity: character offsets and the sentence's index."""

    entity: Entity
    start: int
    end: int
    sentence: int


@dataclass(frozen=True)
class Relation:
    """An edge to be, between two entity keys, with the sentence (or heading) that states it."""

    source: str
    target: str
    kind: str
    weight: float
    evidence: str


@dataclass(frozen=True)
class Extracted:
    """What one unit holds: its entities (each once) and its relations."""

    entities: tuple[Entity, ...]
    relations: tuple[Relation, ...]


class EntityExtractor(Protocol):
    """Finds the entities a unit's text names.

    Contract: ``mentions(text)`` returns every mention with offsets into ``text`` that do not
    overlap, in order; the same name of the same kind gives the same :attr:`Entity.key` in every
    unit (it is what joins units into one graph). ``name`` says which extractor made a graph
    (its lineage: a graph made by another is rebuilt, as vectors of another model are).
    """

    name: str

    def mentions(self, text: str) -> list[Mention]: ...


def fold(name: str) -> str:
    """A name as keys compare it: case folded, spaces collapsed, bold markers and edge
    punctuation dropped.

    >>> fold("  **Settings >  Billing** ")
    'settings > billing'
    """
    return " ".join(name.replace("**", "").replace("__", "").split()).strip(" .,;:!?()[]\"'").casefold()


def entity(kind: str, name: str) -> Entity:
    clean = " ".join(name.replace("**", "").replace("__", "").split()).strip(" .,;:!?()[]\"'")
    return Entity(f"{kind}:{fold(clean)}", clean, kind)


# A sentence ends at . ! ? followed by a space (not inside "3.8" or "v1.2"), or at a line break
# (lists, headings).
SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
# Whole words of the question's kind; each group named by the entity kind it makes.
_PLAN_NAME = r"[A-Z][A-Za-z0-9+]*(?:\s[A-Z][A-Za-z0-9+]*)?"
# A sentence's words that are no part of a settings path.
_VERB = r"(?:Open|Go|Click|Select|Choose|Pick|Under|In|From|Find|Use|Visit|Navigate|Then|And|Or)"
_PART = r"[A-Z][\w'-]*(?: (?!(?:and|or|then|to|choose|click|select|pick|the|in|on|under|from|with)\b)[\w'-]+){0,2}"
PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # "**Settings > Billing > Plan**": a path in bold is taken whole.
    ("setting", re.compile(r"\*\*(?P<name>[^*\n]*?(?:>|→|›)[^*\n]*?)\*\*")),
    # "Settings > Billing > Plan", "Developers → API keys": two parts or more, each a capitalised
    # word and at most two more, none of them a word of the sentence around ("Open", "and").
    ("setting", re.compile(rf"\b(?!{_VERB}\b){_PART}(?:\s*(?:>|→|›)\s*{_PART})+")),
    # "error E1042", "E1042", "ERR-404": letters then three digits or more (a year is not one).
    ("error_code", re.compile(r"\b(?:E|ERR|ERROR)-?\d{3,5}\b")),
    # "TLY-2041", "SKU 88-123": two capitals or more, a dash, digits.
    ("sku", re.compile(r"\b(?:SKU[ -]?)?[A-Z]{2,5}-\d{2,6}(?:-[A-Z0-9]{1,6})?\b")),
    # "v2.3", "v2.3.1", "version 3.8": a version named as one.
    ("version", re.compile(r"\b(?:v\d+(?:\.\d+){1,3}|[Vv]ersion \d+(?:\.\d+){0,3})\b")),
)
# Names listed before what they name: "the Growth plan", "the Growth and Enterprise plans",
# "Free, Starter or Growth plans", "the Slack integration", "Slack and QuickBooks integrations".
LISTS = tuple((kind, re.compile(rf"\b(?P<names>{_PLAN_NAME}(?:(?:,\s*|\s+(?:and|or)\s+|,\s*(?:and|or)\s+){_PLAN_NAME})*)"
                                rf"\s+{noun}s?\b")) for kind, noun in (("plan", "plan"), ("integration", "integration")))
LIST_GAP = re.compile(r"\s*(?:,|and|or|,\s*and|,\s*or)?\s*")
LIST_SPLIT = re.compile(r",\s*(?:and|or)\s+|,\s*|\s+(?:and|or)\s+")
# A word that opens a phrase, not a name ("The Slack integration", "Your plan").
OPENER = re.compile(r"^(?:The|A|An|Our|Your|This|That|Which|Each|Every|Any|My|Their)\b\s*")
# Words that are no plan's or integration's name ("Which plan", "the current plan").
NOT_A_NAME = frozenset({"", "new", "current", "paid", "annual", "monthly", "yearly", "free trial", "same", "other"})

# Cues between two entities of one sentence, and which way the relation goes.
CUES: tuple[tuple[re.Pattern[str], str, bool], ...] = (
    (re.compile(r"\b(?:requires?|needs?|depends? on|only works with)\b", re.I), "requires", False),
    (re.compile(r"\b(?:is|are) (?:part of|included in|available (?:on|in)|only on)\b", re.I), "part_of", False),
    (re.compile(r"\b(?:includes?|contains?|comes? with)\b", re.I), "part_of", True),
    (re.compile(r"\b(?:fix(?:es)?|resolves?|solves?)\b", re.I), "fixes", False),
)


class PatternExtractor:
    """The default extractor: product-specific patterns (see :data:`PATTERNS` and
    :data:`LISTS`), no model. A span already taken by an earlier pattern is not taken again."""

    name = "patterns-1"

    def mentions(self, text: str) -> list[Mention]:
        spans: list[tuple[int, int, Entity]] = []

        def free(start: int, end: int) -> bool:
            return all(end <= s or start >= e for s, e, _ in spans)

        for kind, pattern in PATTERNS:
            for m in pattern.finditer(text):
                name = m.group("name") if "name" in pattern.groupindex else m.group(0)
                start, end = (m.start("name"), m.end("name")) if "name" in pattern.groupindex else m.span()
                if free(start, end):
                    spans.append((start, end, entity(kind, name)))
        for kind, pattern in LISTS:
            for m in pattern.finditer(text):
                at = m.start("names")
                for part in LIST_SPLIT.split(m.group("names")):
                    start = text.index(part, at)
                    at = start + len(part)
                    opener = OPENER.match(part)
                    name_start = start + (opener.end() if opener else 0)
                    if fold(text[name_start:at]) not in NOT_A_NAME and free(name_start, at):
                        spans.append((name_start, at, entity(kind, text[name_start:at])))
        ends = [s for s, _ in sentences(text)][1:]
        return [Mention(ent, s, e, bisect.bisect_right(ends, s)) for s, e, ent in sorted(spans, key=lambda x: x[0])]

    def extract(self, title: str, text: str) -> Extracted:
        return extract(self, title, text)


def sentences(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence of ``text`` (see :data:`SENTENCE_END`).

    >>> text = "Version 3.8 fixes E2001. Then v1.2!\\nNext"
    >>> [text[s:e] for s, e in sentences(text)]
    ['Version 3.8 fixes E2001.', 'Then v1.2!', 'Next']
    """
    spans, start = [], 0
    for m in SENTENCE_END.finditer(text):
        spans.append((start, m.start()))
        start = m.end()
    spans.append((start, len(text)))
    return spans


def extract(extractor: EntityExtractor, title: str, text: str) -> Extracted:
    """A unit's entities and relations: those of its text (see the module's docstring) and
    its headings (``title``, "Page > Section > Subsection"), each a ``section`` entity that
    the text's entities are ``in_section`` of, and each section ``part_of`` the one above it."""
    found = extractor.mentions(text)
    entities: dict[str, Entity] = {}
    for m in found:
        entities.setdefault(m.entity.key, m.entity)
    relations: list[Relation] = []
    by_sentence: dict[int, list[Mention]] = {}
    for m in found:
        by_sentence.setdefault(m.sentence, []).append(m)
    spans = sentences(text)
    for index, mentions in by_sentence.items():
        start, end = spans[index] if index < len(spans) else (0, len(text))
        relations.extend(_sentence_relations(text, mentions, " ".join(text[start:end].split())))
    sections = _sections(title)
    for upper, lower in itertools.pairwise(sections):
        relations.append(Relation(lower.key, upper.key, "part_of", 1.0, title))
    if sections:
        for ent in list(entities.values()):
            relations.append(Relation(ent.key, sections[-1].key, "in_section", 1.0, title))
    for sec in sections:
        entities.setdefault(sec.key, sec)
    return Extracted(tuple(entities.values()), tuple(dict.fromkeys(relations)))


def _sections(title: str) -> list[Entity]:
    """"Refunds > Annual plans" -> the sections "refunds" and "refunds > annual plans" (a
    section is named by its path: two pages' "Limits" are not one node)."""
    parts = [p.strip() for p in title.split(" > ") if p.strip()]
    return [entity("section", " > ".join(parts[: i + 1])) for i in range(len(parts))]


def _sentence_relations(text: str, mentions: Sequence[Mention], evidence: str) -> list[Relation]:
    distinct: list[Mention] = []
    for m in mentions:
        if all(m.entity.key != d.entity.key for d in distinct):
            distinct.append(m)
    if len(distinct) < 2:
        return []
    out: list[Relation] = []
    for i, a in enumerate(distinct):
        for j in range(i + 1, len(distinct)):
            b = distinct[j]
            between = text[a.end: b.start]
            kind, reverse = "related", False
            for cue, name, backwards in CUES:
                if cue.search(between):
                    kind, reverse = name, backwards
                    break
            chain = distinct[i: j + 1]
            if kind == "related" and all(m.entity.kind == a.entity.kind for m in chain) and all(
                    LIST_GAP.fullmatch(text[x.end: y.start]) for x, y in itertools.pairwise(chain)):
                continue  # ("the Growth, Scale and Enterprise plans": a list, not relations)
            if kind != "related" and j > i + 1 and not _joined(text, distinct[i + 1: j], a, b):
                kind, reverse = "related", False  # (the cue belongs to a nearer pair)
            src, dst = (b, a) if reverse else (a, b)
            weight = 1.0 if kind != "related" else 1.0 / (j - i)
            out.append(Relation(src.entity.key, dst.entity.key, kind, round(weight, 4), evidence))
    return out


def _joined(text: str, middle: Sequence[Mention], a: Mention, b: Mention) -> bool:
    """Whether the entities between ``a`` and ``b`` are a list ``b`` belongs to ("part of the
    Growth and Enterprise plans": the cue reaches both plans)."""
    return all(m.entity.kind == b.entity.kind for m in middle) and not any(
        cue.search(text[m.end: b.start]) for m in middle for cue, _, _ in CUES)


EXTRACTORS = {"patterns": PatternExtractor}


def create_extractor(name: str = "patterns") -> PatternExtractor:
    """The extractor named ``name``; an unknown name raises :class:`ConfigError` listing the
    valid ones."""
    try:
        return EXTRACTORS[name]()
    except KeyError:
        raise ConfigError(f"unknown entity extractor {name!r}; valid: {', '.join(EXTRACTORS)}") from None

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
- a cue counts within its clause, not after a negation ("does not include"), and only between
  kinds it can join (a version ``fixes`` an error code, an integration is ``part_of`` a plan);
  a list on either side of it is reached whole ("Slack and QuickBooks integrations require…");
- and a unit's headings are sections: the entities of its text are ``in_section`` of its
  deepest heading, each heading ``part_of`` the one above (the headings' own words are not
  searched for entities).

Work per unit is bounded (:data:`MAX_CHARS`, :data:`MAX_MENTIONS`, :data:`PAIR_WINDOW`), and no
pattern backtracks without bound: the text is a document's, and a document can be hostile.

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
from collections.abc import Callable, Sequence
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

    def extract(self, title: str, text: str) -> Extracted:
        """A unit's entities and relations (most extractors: :func:`extract` over their mentions)."""
        ...


def fold(name: str) -> str:
    """A name as keys compare it: case folded, spaces collapsed, bold markers and edge
    punctuation dropped.

    >>> fold("  **Settings >  Billing** ")
    'settings > billing'
    """
    return " ".join(name.replace("**", "").replace("__", "").split()).strip(" .,;:!?()[]\"'").casefold()


# Each kind's names written one way: "SKU TLY-2041" and "TLY-2041", "version 3.8" and "v3.8",
# "ERR-404" and "ERR404", arrows of any style in a settings path.
_ARROW = re.compile(r"[ \t]*(?:>|→|›)[ \t]*")


def canonical(kind: str, name: str) -> str:
    """The folded name a key is made of, the same however the text wrote it.

    >>> canonical("sku", "SKU TLY-2041"), canonical("version", "Version 3.8"), canonical("error_code", "ERR-404")
    ('tly-2041', 'v3.8', 'err404')
    >>> canonical("setting", "Settings→Billing ›  Plan")
    'settings > billing > plan'
    """
    name = fold(name)
    if kind == "sku":
        return re.sub(r"^sku[ -]?", "", name)
    if kind == "version":
        return "v" + re.sub(r"^(?:version |v)", "", name)
    if kind == "error_code":
        return name.replace("-", "")
    if kind == "setting":
        return " > ".join(p.strip() for p in _ARROW.split(name))
    return name


def entity(kind: str, name: str) -> Entity:
    clean = " ".join(name.replace("**", "").replace("__", "").split()).strip(" .,;:!?()[]\"'")
    return Entity(f"{kind}:{canonical(kind, clean)}", clean, kind)


# Work per unit is bounded, whatever a document holds: its first MAX_CHARS characters are read
# (the chunker's units are 2,000), a sentence's first MAX_MENTIONS mentions are paired, each
# with the PAIR_WINDOW mentions after it.
MAX_CHARS = 20_000
MAX_MENTIONS = 24
PAIR_WINDOW = 3
# A sentence ends at . ! ? followed by a space (not inside "3.8" or "v1.2"), or at a line break
# (lists, headings).
SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
# A word that opens a phrase or a sentence, not a name ("The Slack integration", "Compare
# Growth and Scale plans", "Only Enterprise plans", "If Settings > Exports ...").
_OPENERS = ("The|A|An|Our|Your|This|That|These|Those|Which|What|Each|Every|Any|All|Both|My|Their|Its|On|In|Only|"
            "Compare|Upgrade|Downgrade|Choose|Pick|Select|Open|Go|Click|Under|From|Find|Use|Visit|Navigate|Then|"
            "And|Or|If|When|For|With|Native|Custom|Other|New|Current|Paid|Annual|Monthly|Yearly|Trial")
OPENER = re.compile(rf"^(?:(?:{_OPENERS})\b[ \t]*)+")
_CAP = r"[A-Z][A-Za-z0-9+]*+"
_NAME = rf"(?!(?:{_OPENERS})\b){_CAP}(?:[ \t](?!(?:{_OPENERS})\b){_CAP})?"
# A settings path outside bold: capitalised words only ("Developers > API"), on one line.
_PART = rf"(?!(?:{_OPENERS})\b)[A-Z][\w'-]*+(?:[ \t][A-Z][\w'-]*+)?"
# Prefixes of standards and ciphers, not SKUs ("AES-256", "ISO-8601", "CVE-2024-1234").
NOT_SKU = frozenset({"AES", "SHA", "ISO", "UTF", "TLS", "SSL", "RFC", "CVE", "EN", "HTTP", "MD", "RSA", "ECDSA", "IEC",
                     "DIN", "ANSI", "IEEE", "PCI", "SOC", "GDPR", "WCAG", "CSV", "PDF", "UTC", "GMT", "COVID"})
PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # "Settings > Billing > Plan", "Developers → API keys": two parts or more.
    ("setting", re.compile(rf"(?<![\w'-]){_PART}(?:[ \t]*(?:>|→|›)[ \t]*{_PART})+")),
    # "error E1042", "ERR-404": E and four digits or more, or ERR/ERROR and three (a year or a
    # price is not one; nor is a model "E300").
    ("error_code", re.compile(r"\b(?:E-?[0-9]{4,5}|ERR(?:OR)?-?[0-9]{3,5})\b")),
    # "TLY-2041", "SKU TLY-2041-B": two capitals or more, a dash, digits.
    ("sku", re.compile(r"\b(?:SKU[ -]?)?(?P<prefix>[A-Z]{2,5})-[0-9]{2,6}(?:-[A-Z0-9]{1,6})?\b")),
    # "v2.3", "V2.3.1", "version 3.8": a version named as one.
    ("version", re.compile(r"\b(?:[vV][0-9]+(?:\.[0-9]+){1,3}|[Vv]ersion [0-9]+(?:\.[0-9]+){0,3})\b(?!\.[0-9])")),
)
# A path in bold is taken whole ("**Settings > Workspace > Delete workspace**"): bold spans are
# paired left to right, and one with an arrow between two non-empty parts is a path.
BOLD = re.compile(r"\*\*([^*\n]{1,200}?)\*\*")
# Names listed before what they name: "the Growth plan", "the Growth and Enterprise plans",
# "Free, Starter or Growth plans", "the Slack integration", "Slack and QuickBooks integrations".
_SEP = r"(?:,[ \t]*(?:and|or)[ \t]+|,[ \t]*|[ \t]+(?:and|or)[ \t]+)"
LISTS = tuple((kind, re.compile(rf"(?<![\w+])(?P<names>{_NAME}(?:{_SEP}{_NAME}){{0,8}})[ \t]+(?i:{noun}s?)\b"))
              for kind, noun in (("plan", "plan"), ("integration", "integration")))
LIST_GAP = re.compile(r"\s*(?:,|and|or|,\s*and|,\s*or)?\s*")
LIST_SPLIT = re.compile(_SEP)

# Cues between two entities of one sentence, which way the relation goes, and the kinds it may
# join (source kinds, target kinds, as the relation reads: "integration part_of plan").
CUES: tuple[tuple[re.Pattern[str], str, bool], ...] = (
    (re.compile(r"\b(?:requires?|needs?|depends? on|only works with)\b", re.I), "requires", False),
    (re.compile(r"\b(?:is|are) (?:part of|included in|available (?:on|in)|only on)\b", re.I), "part_of", False),
    (re.compile(r"\b(?:includes?|contains?|comes? with)\b", re.I), "part_of", True),
    (re.compile(r"\b(?:fix(?:es)?|resolves?|solves?)\b", re.I), "fixes", False),
    # The passive voice turns them round: "E1042 is fixed by v2.3", "Slack is required by SSO".
    (re.compile(r"\b(?:is|are|was|were|gets?|can be) (?:fixed|resolved|solved) (?:by|in|with)\b", re.I), "fixes", True),
    (re.compile(r"\b(?:is|are) (?:required|needed) (?:by|for)\b", re.I), "requires", True),
)
# A sentence that opens with a pronoun ("It is fixed by raising …", "This error means …") speaks
# of the previous sentence's first entity: the pronoun stands for it.
PRONOUN = re.compile(r"(?:It|This|That|These|They)"
                     r"(?:[ \t]+(?P<noun>error|code|setting|plan|integration|version|option|limit))?\b")
# The kinds a pronoun's noun may stand for ("This setting" is no version): a bare pronoun, any.
PRONOUN_KINDS = {"error": {"error_code"}, "code": {"error_code"}, "setting": {"setting"}, "option": {"setting"},
                 "limit": {"setting"}, "plan": {"plan"}, "integration": {"integration"}, "version": {"version"}}
KINDS = {"requires": ({"integration", "setting", "error_code", "version", "sku"}, {"plan", "setting", "version", "integration"}),
         "part_of": ({"integration", "setting", "sku", "version"}, {"plan", "integration"}),
         "fixes": ({"version", "setting"}, {"error_code"})}
# A negation just before a cue ("does not include"), and what ends a clause between a cue and an
# entity ("…requires nothing; the Slack integration…").
NEGATED = re.compile(r"\b(?:not|no|never|cannot)\s+(?:\w+\s+)?$|n't\s+(?:\w+\s+)?$", re.I)
CLAUSE_BREAK = re.compile(r";|:|,\s*(?:and|but|while|which|so|because|although)\b|\bbut\b", re.I)


class PatternExtractor:
    """The default extractor: product-specific patterns (see :data:`PATTERNS`, :data:`BOLD`
    and :data:`LISTS`), no model. Where two patterns would take the same characters, the first
    keeps them."""

    name = "patterns-4"

    def mentions(self, text: str) -> list[Mention]:
        text = text[:MAX_CHARS]
        taken = bytearray(len(text))
        spans: list[tuple[int, int, Entity]] = []

        def take(start: int, end: int, kind: str, name: str) -> None:
            if start < end and not any(taken[start:end]):
                taken[start:end] = b"\x01" * (end - start)
                spans.append((start, end, entity(kind, name)))

        for m in BOLD.finditer(text):
            parts = _ARROW.split(m.group(1))
            if len(parts) > 1 and all(p.strip() for p in parts):
                take(m.start(1), m.end(1), "setting", m.group(1))
        for kind, pattern in PATTERNS:
            for m in pattern.finditer(text):
                if kind == "sku" and m.group("prefix") in NOT_SKU:
                    continue
                take(m.start(), m.end(), kind, m.group(0))
        for kind, pattern in LISTS:
            for m in pattern.finditer(text):
                at = m.start("names")
                for part in LIST_SPLIT.split(m.group("names")):
                    start = text.index(part, at)
                    at = start + len(part)
                    opener = OPENER.match(part)
                    take(start + (opener.end() if opener else 0), at, kind, part[opener.end() if opener else 0:])
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
    text = text[:MAX_CHARS]
    found = extractor.mentions(text)
    entities: dict[str, Entity] = {}
    for m in found:
        entities.setdefault(m.entity.key, m.entity)
    relations: list[Relation] = []
    by_sentence: dict[int, list[Mention]] = {}
    for m in found:
        by_sentence.setdefault(m.sentence, []).append(m)
    spans = sentences(text)
    for index, (start, end) in enumerate(spans):
        mentions = by_sentence.get(index, [])
        evidence = " ".join(text[start:end].split())
        opener = PRONOUN.match(text, start)
        noun = opener.group("noun") if opener else None
        if opener and by_sentence.get(index - 1) and mentions and opener.end() <= mentions[0].start and (
                noun is None or by_sentence[index - 1][0].entity.kind in PRONOUN_KINDS[noun]):
            # (the pronoun as a mention of what the sentence before named first, when its noun fits)
            antecedent = by_sentence[index - 1][0].entity
            mentions = [Mention(antecedent, opener.start(), opener.end(), index), *mentions]
            before = spans[index - 1]
            evidence = " ".join(text[before[0]:end].split())
        if mentions:
            relations.extend(_sentence_relations(text, mentions, evidence))
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
    """The relations one sentence states between its mentions (the first :data:`MAX_MENTIONS`,
    each paired with the :data:`PAIR_WINDOW` after it): the cues are found once per sentence."""
    ms = list(mentions[:MAX_MENTIONS])
    if len(ms) < 2:
        return []
    lo, hi = ms[0].end, ms[-1].start
    cues = sorted((m.start(), m.end(), name, backwards) for cue, name, backwards in CUES
                  for m in cue.finditer(text, lo, hi) if not NEGATED.search(text[max(0, m.start() - 24): m.start()]))
    cue_starts = [c[0] for c in cues]
    breaks = [m.start() for m in CLAUSE_BREAK.finditer(text, lo, hi)]
    # Whether mention k and k + 1 are two names of one list ("Growth and Enterprise").
    listed = [x.entity.kind == y.entity.kind and bool(LIST_GAP.fullmatch(text[x.end: y.start]))
              for x, y in itertools.pairwise(ms)]

    def one_list(first: int, last: int) -> bool:
        return all(listed[first:last])

    best: dict[tuple[str, str, str], Relation] = {}
    for i, a in enumerate(ms):
        for j in range(i + 1, min(len(ms), i + 1 + PAIR_WINDOW)):
            b = ms[j]
            if a.entity.key == b.entity.key:
                continue
            kind, reverse = "related", False
            k = bisect.bisect_left(cue_starts, a.end)
            cue = cues[k] if k < len(cues) and cues[k][1] <= b.start else None
            n = bisect.bisect_left(breaks, a.end)
            clause = n < len(breaks) and breaks[n] < b.start
            if cue is not None and not clause:
                # The cue reaches a and b when what lies on each side of it is one list with them.
                left = max((n for n in range(i, j) if ms[n].end <= cue[0]), default=i)
                if one_list(i, left) and one_list(left + 1, j) and left + 1 <= j:
                    kind, reverse = cue[2], cue[3]
            src, dst = (b, a) if reverse else (a, b)
            if kind != "related" and not (src.entity.kind in KINDS[kind][0] and dst.entity.kind in KINDS[kind][1]):
                kind, src, dst = "related", a, b  # (a cue between kinds it cannot join: "E1042 ... needs ... Growth plan")
            if kind == "related" and one_list(i, j):
                continue  # ("the Growth, Scale and Enterprise plans": a list, not relations)
            weight = 1.0 if kind != "related" else round(1.0 / (j - i), 4)
            key = (src.entity.key, kind, dst.entity.key)
            if key not in best or best[key].weight < weight:
                best[key] = Relation(src.entity.key, dst.entity.key, kind, weight, evidence)
    return list(best.values())


def _spacy() -> EntityExtractor:
    from electa.graph.ner import SpacyExtractor  # (spaCy loads only when asked for)

    return SpacyExtractor()


EXTRACTORS: dict[str, Callable[[], EntityExtractor]] = {"patterns": PatternExtractor, "spacy": _spacy}


def create_extractor(name: str = "patterns") -> EntityExtractor:
    """The extractor named ``name`` (``spacy`` needs ``pip install 'electa[ner]'``); an unknown
    name raises :class:`ConfigError` listing the valid ones."""
    if name not in EXTRACTORS:
        raise ConfigError(f"unknown entity extractor {name!r}; valid: {', '.join(EXTRACTORS)}")
    return EXTRACTORS[name]()

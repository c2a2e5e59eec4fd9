"""What the modes do without an LLM (SPEC E5-E7): query expansion, decomposition into
sub-questions, and the question's entities. Pure functions over the question (and, for
expansion, the passages a first search found); each is what its LLM step falls back to.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from electa.graph.extract import PatternExtractor
from electa.text import STOPWORDS, content_tokens, tokens

# Where a question asks two things: a second question mark, a semicolon, or a conjunction that
# opens a new clause ("…, and how do I…", "… and which plan…").
_CLAUSE = re.compile(r"\?\s+|;\s*|,?\s+(?:and|also|then|plus)\s+(?=(?:how|what|which|where|when|why|who|can|does|do|is|"
                     r"are|should|will)\b)", re.I)
# A name written with capitals inside a sentence ("Growth plan", "QuickBooks Online"), or quoted.
_CAPITALISED = re.compile(r"(?<=[a-z,;:] )[A-Z][\w+-]*(?: [A-Z][\w+-]*)*|\"([^\"]{2,60})\"|'([^']{2,60})'")
MAX_SUBQUESTIONS = 3
MAX_ENTITIES = 5
MAX_CHARS = 2000  # a question's characters read (the API's own limit)


def content_words(text: str) -> list[str]:
    """The question's words that carry meaning (stop words dropped), in order.

    >>> content_words("How do I export my invoices to CSV?")
    ['export', 'invoices', 'csv']
    """
    return content_tokens(text)


def expand_query(question: str, passages: Sequence[str] = (), most: int = 2) -> list[str]:
    """E5 without an LLM: at most ``most`` variants of ``question``: its content words alone
    (a question buried in small talk), then those words with the three words the passages a
    first search found share most that the question lacks (pseudo-relevance feedback, as RM3
    does with term counts).

    >>> expand_query("so how would I get my money back?", ["Refunds: we refund annual plans.",
    ...                                                 "Refunds take 5 days; refunds go to the card."])
    ['get money back', 'get money back refunds refund annual']
    """
    words = content_words(question[:MAX_CHARS])
    out: list[str] = []
    if words and " ".join(words) != " ".join(tokens(question[:MAX_CHARS])):
        out.append(" ".join(words))
    counts: Counter[str] = Counter()
    for passage in passages:
        counts.update(w for w in content_tokens(passage) if len(w) > 2 and w not in words)
    extra = [w for w, _ in counts.most_common(3)]
    if extra:
        out.append(" ".join([*words, *extra]))
    return [q for q in dict.fromkeys(out) if q][:most]


def decompose(question: str, entities: Sequence[str] = ()) -> list[str]:
    """E6 without an LLM: the question's clauses, when it asks two things or more ("How do I
    export to CSV, and which plan has the API?"), each with two content words or more; else, when
    it names two entities or more, one sub-question per entity with the question's other words
    ("Compare E1042 and E2001" -> "E1042 compare", "E2001 compare"); else the question alone.

    >>> decompose("How do I export to CSV, and which plan includes the API?")
    ['How do I export to CSV', 'which plan includes the API?']
    >>> decompose("Does error E1042 or E2001 need the Growth plan?", ["E1042", "E2001"])
    ['E1042 error need growth plan', 'E2001 error need growth plan']
    """
    question = " ".join(question[:MAX_CHARS].split())  # (runs of spaces cost the clause pattern quadratic time)
    parts = [p.strip(" ,") for p in _CLAUSE.split(question) if p and p.strip(" ,?")]
    parts = [p for p in parts if len(content_words(p)) >= 2]
    if len(parts) >= 2:
        return parts[:MAX_SUBQUESTIONS]
    if len(entities) >= 2:
        named = {w for e in entities for w in tokens(e)}
        rest = [w for w in content_words(question) if w not in named]
        return [" ".join([e, *rest]) for e in entities][:MAX_SUBQUESTIONS]
    return [question]


def entity_names(question: str, linked: Sequence[str] = ()) -> list[str]:
    """E7 without an LLM: the question's entities: the graph's nodes it links to (``linked``),
    what the product patterns find (error codes, plans, settings, SKUs, versions), and names it
    writes with capitals or in quotes; each once, at most :data:`MAX_ENTITIES`.

    >>> entity_names('Why does "bulk export" fail with E1042 on the Growth plan?')
    ['E1042', 'Growth', 'bulk export']
    """
    question = " ".join(question[:MAX_CHARS].split())
    found = [*linked, *(m.entity.name for m in PatternExtractor().mentions(question))]
    for m in _CAPITALISED.finditer(question):
        found.append(m.group(1) or m.group(2) or m.group(0))
    seen: dict[str, str] = {}
    for name in found:
        name = name.strip()
        if name and name.casefold() not in seen and name.casefold() not in STOPWORDS:
            seen[name.casefold()] = name
    return list(seen.values())[:MAX_ENTITIES]

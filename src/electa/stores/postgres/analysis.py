"""The embedded store's full-text analysis, as PostgreSQL's ``tsvector``.

PostgreSQL's text search configurations analyse differently from Electa (their own stop lists
and token rules, one language per configuration), and BM25 scores would move with them. So this
backend does not let PostgreSQL analyse: each unit's terms are those the embedded store hands
FTS5 (:mod:`electa.text.analysis`, in the document's language), stored as a ready ``tsvector``
(PostgreSQL keeps given lexemes as they are), title terms weighted ``A``, body terms ``B`` and
the access tokens FTS5 keeps in its ``acl`` column ``D``. The column-weighted term frequencies
and row lengths of :mod:`electa.stores.bm25_memory` then read the same on both backends
(``tests/contract`` and ``bench/pg_parity.py`` check it).

Two limits of ``tsvector`` (PostgreSQL docs, "Text Search Limitations"): a lexeme holds at most
256 positions, so a term's frequency in one unit is counted up to 256 (title occurrences
first), and a lexeme is at most 2 KB, so a longer token (a pasted blob) is left out of the
terms but still counted in the row's length.
"""

from __future__ import annotations

from collections import Counter

from electa.text.analysis import index_terms

MAX_POSITIONS = 256
MAX_LEXEME_BYTES = 2046


def _quote(term: str) -> str:
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


def tsvector_literal(title: str, body: str, acl: list[str], lang: str) -> tuple[str, int]:
    """``(tsvector text, row length)`` of a unit written in ``lang``: title terms weighted A,
    body B, ``acl`` D.

    >>> tsvector_literal("Refund policy", "Refunds within 14 days", ["o1"], "en")
    ("'en·14':1B 'en·dai':1B 'en·polici':1A 'en·refund':1A,2B 'en·within':1B 'o1':1", 7)
    """
    columns = (Counter(index_terms(title, lang)), Counter(index_terms(body, lang)), Counter(acl))
    length = sum(sum(c.values()) for c in columns)
    parts = []
    for term in sorted(set().union(*columns)):
        if len(term.encode()) > MAX_LEXEME_BYTES:
            continue
        positions: list[str] = []
        for counts, weight in zip(columns, ("A", "B", ""), strict=True):
            for _ in range(min(counts.get(term, 0), MAX_POSITIONS - len(positions))):
                positions.append(f"{len(positions) + 1}{weight}")
        parts.append(f"{_quote(term)}:{','.join(positions)}")
    return " ".join(parts), length


def tsquery_any(terms: list[str]) -> str:
    """A ``tsquery`` matching any of ``terms`` (given lexemes, never parsed as operators).

    >>> tsquery_any(["refund", "o'brien"])
    "'refund' | 'o''brien'"
    """
    return " | ".join(_quote(t) for t in terms if 0 < len(t.encode()) <= MAX_LEXEME_BYTES)

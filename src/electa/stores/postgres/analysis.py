"""The embedded store's full-text analysis, done in Python for PostgreSQL's ``tsvector``.

The embedded store indexes with SQLite FTS5's ``porter unicode61 remove_diacritics 2``
tokenizer; PostgreSQL's text search configurations analyse differently (their own stop lists,
Snowball English, other token rules), and BM25 scores would move with them. So this backend
does not let PostgreSQL analyse: Electa computes each unit's terms as FTS5 does and stores them
as a ready ``tsvector`` (PostgreSQL keeps given lexemes as they are), title terms weighted
``A``, body terms ``B`` and the access tokens FTS5 keeps in its ``acl`` column ``D``. The
column-weighted term frequencies and row lengths of :mod:`electa.stores.bm25_memory` then read
the same on both backends (``tests/contract`` and ``bench/pg_parity.py`` check it).

FTS5's porter step leaves tokens under 3 or over 64 bytes unstemmed (``fts5_tokenize.c``,
``FTS5_PORTER_MAX_TOKEN``). Two limits of ``tsvector`` (PostgreSQL docs, "Text Search
Limitations"): a lexeme holds at most 256 positions, so a term's frequency in one unit is
counted up to 256 (title occurrences first), and a lexeme is at most 2 KB, so a longer token
(a pasted blob) is left out of the terms but still counted in the row's length.
"""

from __future__ import annotations

from collections import Counter

from electa.text import stem, tokens

PORTER_MIN_BYTES = 3
PORTER_MAX_BYTES = 64
MAX_POSITIONS = 256
MAX_LEXEME_BYTES = 2046


def index_term(token: str) -> str:
    """A folded token as FTS5's ``porter`` tokenizer stores it.

    >>> [index_term(t) for t in ("refunds", "is", "e1042")]
    ['refund', 'is', 'e1042']
    """
    size = len(token.encode())
    return token if size < PORTER_MIN_BYTES or size > PORTER_MAX_BYTES else stem(token)


def index_terms(text: str) -> list[str]:
    """Every term of ``text`` in order, stop words included (the index keeps them)."""
    return [index_term(t) for t in tokens(text)]


def _quote(term: str) -> str:
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


def tsvector_literal(title: str, body: str, acl: list[str]) -> tuple[str, int]:
    """``(tsvector text, row length)`` of a unit: title terms weighted A, body B, ``acl`` D.

    >>> tsvector_literal("Refund policy", "Refunds within 14 days", ["o1"])
    ("'14':1B 'dai':1B 'o1':1 'polici':1A 'refund':1A,2B 'within':1B", 7)
    """
    columns = (Counter(index_terms(title)), Counter(index_terms(body)), Counter(acl))
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

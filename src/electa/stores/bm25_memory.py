"""An in-memory image of an FTS5 table's BM25 scoring, for a fast full-text leg.

SQLite FTS5 stays the index of record (persistent, transactional, filtered by access inside
the match). Ranking with ``ORDER BY bm25()`` scores every matching row inside SQLite, which on
long OR-queries costs milliseconds. This image holds, per term, the rows that contain it and
each row's precomputed BM25 contribution, so a query is a sum of a few arrays and a partial
sort: the layout of bm25s (Lù, 2024), with FTS5's own formula (``fts5_aux.c``):

    score(row) = Σ_terms idf(t) · f·(k1+1) / (f + k1·(1 − b + b·|row|/avg|row|))
    idf(t)     = ln((N − n_t + 0.5) / (n_t + 0.5)), or 1e-6 where that is ≤ 0
    f          = Σ_columns weight(column) · occurrences of t in that column

with k1 = 1.2, b = 0.75, |row| the tokens of all columns, N the rows of the table and n_t the
rows holding t. The image is built from the FTS5 index itself (``fts5vocab`` ``instance``), so
its terms are FTS5's terms, and it is rebuilt when the store's generation moves.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

import numpy as np

from electa.text import STOPWORDS, stem, tokens

K1 = 1.2
B = 0.75


def fts_terms(query: str) -> list[str]:
    """The query's content words as FTS5's ``porter`` tokenizer indexes them: its Porter
    implementation leaves tokens of under three characters unstemmed."""
    words = [w for w in tokens(query) if w not in STOPWORDS] or tokens(query)
    return list(dict.fromkeys(w if len(w) < 3 else stem(w) for w in words))


@dataclass
class _Postings:
    rows: np.ndarray  # positions into BM25Image.unit_ids
    scores: np.ndarray


class BM25Image:
    """``BM25Image.build(con, "chunk_fts", (2.0, 1.0, 0.0), generation)`` then ``.search()``."""

    def __init__(self, unit_ids: np.ndarray, postings: dict[str, _Postings], generation: int) -> None:
        self.unit_ids = unit_ids
        self.postings = postings
        self.generation = generation

    @classmethod
    def build(cls, con: sqlite3.Connection, table: str, weights: tuple[float, ...],
              generation: int) -> BM25Image:
        con.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{table}_instances USING fts5vocab(main, {table}, instance)")
        rows = con.execute(
            f"SELECT term, doc, col, count(*) FROM temp.{table}_instances GROUP BY term, doc, col"
        ).fetchall()
        columns = {name: i for i, name in enumerate(
            r[1] for r in con.execute(f"PRAGMA table_info({table})").fetchall())}
        unit_ids = np.array(sorted({r[1] for r in rows}), dtype=np.int64)
        if not unit_ids.size:
            return cls(unit_ids, {}, generation)
        pos_of = {int(u): i for i, u in enumerate(unit_ids)}
        lengths = np.zeros(unit_ids.size, dtype=np.float64)
        weight = np.array([weights[columns[r[2]]] for r in rows], dtype=np.float64)
        pos = np.fromiter((pos_of[r[1]] for r in rows), dtype=np.int64, count=len(rows))
        counts = np.fromiter((r[3] for r in rows), dtype=np.float64, count=len(rows))
        np.add.at(lengths, pos, counts)
        n_rows = int(con.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
        avg = lengths.sum() / max(n_rows, 1)
        norm = K1 * (1.0 - B + B * lengths / max(avg, 1e-9))
        postings: dict[str, _Postings] = {}
        start = 0
        while start < len(rows):
            end = start
            term = rows[start][0]
            while end < len(rows) and rows[end][0] == term:
                end += 1
            p = pos[start:end]
            freq = weight[start:end] * counts[start:end]
            # A term appearing only in zero-weight columns still counts as a hit for n_t,
            # as in FTS5, which counts rows that match the phrase in any column.
            uniq, inverse = np.unique(p, return_inverse=True)
            f = np.zeros(uniq.size)
            np.add.at(f, inverse, freq)
            n_t = uniq.size
            idf = np.log((n_rows - n_t + 0.5) / (n_t + 0.5))
            if idf <= 0.0:
                idf = 1e-6
            scores = idf * f * (K1 + 1.0) / (f + norm[uniq])
            keep = f > 0
            postings[term] = _Postings(uniq[keep].astype(np.int64), scores[keep].astype(np.float64))
            start = end
        return cls(unit_ids, postings, generation)

    def search(self, query: str, allowed_ids: np.ndarray, limit: int) -> list[tuple[int, float]]:
        """Top ``limit`` ``(unit id, score)`` among ``allowed_ids`` (sorted), best first."""
        hits = [self.postings[t] for t in fts_terms(query) if t in self.postings]
        if not hits or not allowed_ids.size or limit <= 0:
            return []
        rows = np.concatenate([h.rows for h in hits])
        scores = np.concatenate([h.scores for h in hits])
        if len(hits) > 1:
            rows, inverse = np.unique(rows, return_inverse=True)
            scores = np.bincount(inverse, weights=scores)
        units = self.unit_ids[rows]
        pos = np.clip(np.searchsorted(allowed_ids, units), 0, allowed_ids.size - 1)
        ok = allowed_ids[pos] == units
        units, scores = units[ok], scores[ok]
        if not units.size:
            return []
        top = min(limit, units.size)
        best = np.argpartition(-scores, top - 1)[:top]
        # Ties broken by unit id, as FTS5's ORDER BY bm25() leaves them in rowid order.
        best = best[np.lexsort((units[best], -scores[best]))]
        return [(int(units[i]), float(scores[i])) for i in best]

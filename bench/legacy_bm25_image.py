# ruff: noqa
# BM25Image as of commit 037fce4, verbatim below (for bench/image_layout.py).
"""An in-memory image of an FTS5 table's BM25 scoring, for a fast full-text leg.

SQLite FTS5 stays the index of record (persistent, transactional, filtered by access inside
the match). Ranking with ``ORDER BY bm25()`` scores every matching row inside SQLite, which on
long OR-queries costs milliseconds. This image holds, per term, the rows that contain it and
each row's column-weighted term frequency, so a query is a few array operations and a partial
sort: the layout of bm25s (Lù, 2024), with FTS5's own formula (``fts5_aux.c``):

    score(row) = Σ_terms idf(t) · f·(k1+1) / (f + k1·(1 − b + b·|row|/avg|row|))
    idf(t)     = ln((N − n_t + 0.5) / (n_t + 0.5)), or 1e-6 where that is ≤ 0
    f          = Σ_columns weight(column) · occurrences of t in that column

with k1 = 1.2, b = 0.75 and |row| the tokens of all columns.

**Statistics per caller.** FTS5 computes N (rows), n_t (rows holding t) and avg|row| over the
whole table, i.e. over every organisation and team: a tenant's raw scores would move when
another tenant writes, which leaks the other tenant's vocabulary through the provenance shown
with each hit and makes calibration drift with someone else's data. Here N, n_t and avg|row|
are computed over the rows the caller may see (its allowed set), so a caller's scores depend
only on what that caller may read. With every row allowed the result is FTS5's ``bm25()``
exactly (unit-tested). The cost is computing idf and length normalisation at query time over
the query terms' postings instead of reading precomputed scores (``bench/tenant_bm25.py``).

The image is built from the FTS5 index itself (``fts5vocab`` ``instance``), so its terms are
FTS5's terms. It comes in **segments** (Lucene's and tantivy's shape): a large one over every
row up to some id, and a small one over the rows written since, which is all a write rebuilds;
the large one is rebuilt in the background now and then (``electa.legs.fulltext``). A query
sums the statistics of every segment (:func:`search_segments`), so segments change only the
cost of a write, never a score.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from electa.text import STOPWORDS, stem, tokens

K1 = 1.2
B = 0.75
MASKS_KEPT = 16


def fts_terms(query: str) -> list[str]:
    """The query's content words as FTS5's ``porter`` tokenizer indexes them: it leaves tokens of
    under 3 or over 64 bytes unstemmed (``fts5_tokenize.c``), as the index side does."""
    words = [w for w in tokens(query) if w not in STOPWORDS] or tokens(query)
    return list(dict.fromkeys(w if not 3 <= len(w.encode()) <= 64 else stem(w) for w in words))


@dataclass
class _Postings:
    rows: np.ndarray  # positions into BM25Image.unit_ids, ascending
    freqs: np.ndarray  # column-weighted term frequency f (0 where the term is only in zero-weight columns)


@dataclass(frozen=True)
class _View:
    """What one caller may see of the image: a row mask and the collection statistics over it."""

    mask: np.ndarray
    n_rows: int
    len_sum: float


class BM25Image:
    """``BM25Image.build(con, "chunk_fts", (2.0, 1.0, 0.0), generation)`` then ``.search()``."""

    def __init__(self, unit_ids: np.ndarray, lengths: np.ndarray, postings: dict[str, _Postings],
                 generation: int, scanned: int = 0) -> None:
        self.unit_ids = unit_ids
        self.lengths = lengths
        self.postings = postings
        self.generation = generation
        # Rows read to build it (before keeping those above ``above``): what rebuilding it costs.
        self.scanned = scanned or int(unit_ids.size)
        self._views: OrderedDict[object, _View] = OrderedDict()
        self._views_lock = threading.Lock()

    @property
    def max_row(self) -> int:
        """The highest unit id the segment holds (0 when empty)."""
        return int(self.unit_ids[-1]) if self.unit_ids.size else 0

    @classmethod
    def build(cls, con: sqlite3.Connection, table: str, weights: tuple[float, ...],
              generation: int, above: int = 0) -> BM25Image:
        """The segment of FTS5 ``table``'s rows with ids above ``above``."""
        con.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{table}_instances USING fts5vocab(main, {table}, instance)")
        columns = {name: i for i, name in enumerate(
            r[1] for r in con.execute(f"PRAGMA table_info({table})").fetchall())}
        rows = [(term, doc, columns[col], n) for term, doc, col, n in con.execute(
            f"SELECT term, doc, col, count(*) FROM temp.{table}_instances GROUP BY term, doc, col")]
        scanned = len({r[1] for r in rows})
        if above:
            rows = [r for r in rows if r[1] > above]
        return cls.from_rows(rows, weights, generation, scanned)

    @classmethod
    def from_rows(cls, rows: Sequence[tuple[str, int, int, int]], weights: tuple[float, ...], generation: int,
                  scanned: int = 0) -> BM25Image:
        """An image of ``(term, unit id, column, occurrences)`` rows, grouped by term (each term's
        rows together); ``weights[column]`` weights a column. A row's length counts every
        column's occurrences, zero-weight ones included, as FTS5's ``|row|`` does."""
        unit_ids = np.array(sorted({r[1] for r in rows}), dtype=np.int64)
        lengths = np.zeros(unit_ids.size, dtype=np.float64)
        if not unit_ids.size:
            return cls(unit_ids, lengths, {}, generation, scanned)
        pos_of = {int(u): i for i, u in enumerate(unit_ids)}
        weight = np.array([weights[r[2]] for r in rows], dtype=np.float64)
        pos = np.fromiter((pos_of[r[1]] for r in rows), dtype=np.int64, count=len(rows))
        counts = np.fromiter((r[3] for r in rows), dtype=np.float64, count=len(rows))
        np.add.at(lengths, pos, counts)
        postings: dict[str, _Postings] = {}
        start = 0
        while start < len(rows):
            end = start
            term = rows[start][0]
            while end < len(rows) and rows[end][0] == term:
                end += 1
            # A row holding the term only in a zero-weight column still counts in n_t, as in
            # FTS5, which counts rows that match the phrase in any column.
            uniq, inverse = np.unique(pos[start:end], return_inverse=True)
            f = np.zeros(uniq.size)
            np.add.at(f, inverse, weight[start:end] * counts[start:end])
            postings[term] = _Postings(uniq.astype(np.int64), f)
            start = end
        return cls(unit_ids, lengths, postings, generation, scanned)

    @classmethod
    def empty(cls, generation: int) -> BM25Image:
        return cls(np.empty(0, dtype=np.int64), np.zeros(0), {}, generation)

    def _view(self, allowed_ids: np.ndarray, key: object) -> _View:
        """The caller's row mask and statistics; cached per ``key`` (generation and caller)."""
        with self._views_lock:
            view = self._views.get(key) if key is not None else None
            if view is not None:
                self._views.move_to_end(key)
                return view
        mask = np.zeros(self.unit_ids.size, dtype=bool)
        if allowed_ids.size and self.unit_ids.size:
            pos = np.clip(np.searchsorted(self.unit_ids, allowed_ids), 0, self.unit_ids.size - 1)
            mask[pos[self.unit_ids[pos] == allowed_ids]] = True
        view = _View(mask, int(mask.sum()), float(self.lengths[mask].sum()))
        if key is not None:
            with self._views_lock:
                self._views[key] = view
                while len(self._views) > MASKS_KEPT:
                    self._views.popitem(last=False)
        return view

    def search(self, query: str, allowed_ids: np.ndarray, limit: int, key: object = None) -> list[tuple[int, float]]:
        """Top ``limit`` ``(unit id, score)`` among ``allowed_ids`` (sorted), best first, with
        N, n_t and avg|row| taken over ``allowed_ids`` only. ``key`` names the allowed set for
        caching its mask (same key, same set)."""
        return search_segments((self,), query, allowed_ids, limit, key)


def search_segments(segments: Sequence[BM25Image], query: str, allowed_ids: np.ndarray, limit: int,
                    key: object = None) -> list[tuple[int, float]]:
    """BM25 over segments that hold disjoint rows, as if they were one image: N, n_t and
    avg|row| are summed over every segment's rows the caller may read."""
    terms = fts_terms(query)
    if not terms or not allowed_ids.size or limit <= 0:
        return []
    views = [seg._view(allowed_ids, key) for seg in segments]
    n_rows = sum(v.n_rows for v in views)
    if not n_rows:
        return []
    avg_len = sum(v.len_sum for v in views) / n_rows
    parts_units, parts_scores = [], []
    for term in terms:
        kept = []
        for seg, view in zip(segments, views, strict=True):
            p = seg.postings.get(term)
            if p is not None:
                keep = view.mask[p.rows]
                kept.append((seg, p.rows[keep], p.freqs[keep]))
        n_t = sum(rows.size for _, rows, _ in kept)
        if not n_t:
            continue
        idf = np.log((n_rows - n_t + 0.5) / (n_t + 0.5))
        if idf <= 0.0:
            idf = 1e-6
        for seg, rows, f in kept:
            hit = f > 0
            rows, f = rows[hit], f[hit]
            norm = K1 * (1.0 - B + B * seg.lengths[rows] / max(avg_len, 1e-9))
            parts_units.append(seg.unit_ids[rows])
            parts_scores.append(idf * f * (K1 + 1.0) / (f + norm))
    if not parts_units:
        return []
    units = np.concatenate(parts_units)
    scores = np.concatenate(parts_scores)
    if len(parts_units) > 1:
        units, inverse = np.unique(units, return_inverse=True)
        scores = np.bincount(inverse, weights=scores)
    return top_units(units, scores, limit)


def top_units(units: np.ndarray, scores: np.ndarray, limit: int) -> list[tuple[int, float]]:
    """The ``limit`` best ``(unit id, score)``, best first; ties broken by unit id, as FTS5's
    ``ORDER BY bm25()`` leaves them in rowid order."""
    if not units.size or limit <= 0:
        return []
    top = min(limit, units.size)
    best = np.argpartition(-scores, top - 1)[:top]
    best = best[np.lexsort((units[best], -scores[best]))]
    return [(int(units[i]), float(scores[i])) for i in best]

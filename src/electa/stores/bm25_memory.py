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
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from electa.text.analysis import DEFAULT_LANGUAGE, query_terms

K1 = 1.2
B = 0.75
MASKS_KEPT = 16


BATCH = 65_536  # rows fetched and converted at a time while building


class TermNumbers(Protocol):
    """A term's number in an image: a ``dict`` when built in memory, a
    :class:`electa.stores.lexical_segments.SortedTerms` when memory-mapped."""

    def get(self, term: str, /) -> int | None: ...

    def __len__(self) -> int: ...


def batches(cursor: Any) -> Iterator[Sequence[Any]]:
    """A DB-API cursor's rows, ``BATCH`` at a time (read when called, so tests can shrink it)."""
    return iter(lambda: cursor.fetchmany(BATCH), [])


@dataclass(frozen=True)
class _View:
    """What one caller may see of the image: a row mask and the collection statistics over it."""

    mask: np.ndarray
    n_rows: int
    len_sum: float


class BM25Image:
    """``BM25Image.build(con, "chunk_fts", (2.0, 1.0, 0.0), generation)`` then ``.search()``.

    The postings are one compressed-sparse-row layout (bm25s's): ``terms`` maps a term to its
    number ``i``, whose rows are ``rows[offsets[i]:offsets[i+1]]`` (positions into
    ``unit_ids``, ascending, int32) with their column-weighted frequencies in ``freqs``
    (float32: sums of small counts times the legs' weights of 0, 1 and 2 are exact in float32;
    other weights round at one part in ten million). Eight
    bytes a posting and three arrays in all, whatever the vocabulary, so an image can be saved
    as plain arrays and memory-mapped (:mod:`electa.stores.lexical_segments`): then the postings
    live in the page cache, shared by every worker on the machine, not in each one's heap.
    """

    def __init__(self, unit_ids: np.ndarray, lengths: np.ndarray, terms: TermNumbers, offsets: np.ndarray,
                 rows: np.ndarray, freqs: np.ndarray, generation: int, scanned: int = 0) -> None:
        self.unit_ids = unit_ids
        self.lengths = lengths
        self.terms = terms
        self.offsets = offsets
        self.rows = rows
        self.freqs = freqs
        self.generation = generation
        # Rows read to build it (before keeping those above ``above``): what rebuilding it costs.
        self.scanned = scanned or int(unit_ids.size)
        self._views: OrderedDict[object, _View] = OrderedDict()
        self._views_lock = threading.Lock()

    @property
    def max_row(self) -> int:
        """The highest unit id the segment holds (0 when empty)."""
        return int(self.unit_ids[-1]) if self.unit_ids.size else 0

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays (postings, offsets, ids, lengths); the term dictionary aside."""
        return sum(int(a.nbytes) for a in (self.unit_ids, self.lengths, self.offsets, self.rows, self.freqs))

    def postings(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        """The term's ``(rows, freqs)``, or ``None`` when no row holds it."""
        i = self.terms.get(term)
        if i is None:
            return None
        start, end = int(self.offsets[i]), int(self.offsets[i + 1])
        return self.rows[start:end], self.freqs[start:end]

    @classmethod
    def build(cls, con: sqlite3.Connection, table: str, weights: tuple[float, ...],
              generation: int, above: int = 0) -> BM25Image:
        """The segment of FTS5 ``table``'s rows with ids above ``above``, read in one pass of
        ``fts5vocab`` (``instance``) summed per term and row inside SQLite and converted
        ``BATCH`` rows at a time, so building never holds more than one batch as Python objects."""
        con.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{table}_instances USING fts5vocab(main, {table}, instance)")
        names = [r[1] for r in con.execute(f"PRAGMA table_info({table})").fetchall()]
        case = " ".join("WHEN ? THEN ?" for _ in names)
        params: list[object] = [x for name, w in zip(names, weights, strict=True) for x in (name, float(w))]
        scanned = int(con.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
        unit_ids = np.fromiter((r[0] for r in con.execute(
            f"SELECT rowid FROM {table} WHERE rowid > ? ORDER BY rowid", (above,))), dtype=np.int64)
        cursor = con.execute(
            f"SELECT term, doc, sum(CASE col {case} ELSE 0.0 END), count(*) FROM temp.{table}_instances"
            " WHERE doc > ? GROUP BY term, doc ORDER BY term, doc", (*params, above))
        return cls.from_batches(unit_ids, batches(cursor), generation, scanned)

    @classmethod
    def from_batches(cls, unit_ids: np.ndarray, batches: Iterable[Sequence[tuple[str, int, float, int]]],
                     generation: int, scanned: int = 0) -> BM25Image:
        """An image of ``(term, unit id, f, occurrences)`` rows, one per term and row, sorted by
        term then unit id, in batches; ``f`` is the column-weighted frequency and
        ``occurrences`` the tokens of every column, zero-weight ones included, as FTS5's
        ``|row|`` counts them. ``unit_ids`` (ascending) are every row of the segment.

        A row holding a term only in a zero-weight column (``f`` = 0) still counts in n_t, as in
        FTS5, which counts rows that match the phrase in any column."""
        unit_ids = np.asarray(unit_ids, dtype=np.int64)
        lengths = np.zeros(unit_ids.size, dtype=np.float64)
        terms: dict[str, int] = {}
        counts: list[int] = []
        rows_parts: list[np.ndarray] = []
        freq_parts: list[np.ndarray] = []
        last: object = None
        for batch in batches:
            n = len(batch)
            if not n:
                continue
            docs = np.fromiter((r[1] for r in batch), dtype=np.int64, count=n)
            pos = np.searchsorted(unit_ids, docs)
            if pos.size and (int(pos.max()) >= unit_ids.size or not np.array_equal(unit_ids[pos], docs)):
                raise ValueError("a posting names a row outside the segment's rows (read outside one snapshot?)")
            occurrences = np.fromiter((r[3] for r in batch), dtype=np.float64, count=n)
            np.add.at(lengths, pos, occurrences)
            names = np.empty(n, dtype=object)
            names[:] = [r[0] for r in batch]
            changed = np.empty(n, dtype=bool)
            changed[0] = names[0] != last
            np.not_equal(names[1:], names[:-1], out=changed[1:])
            starts = np.flatnonzero(changed).tolist()
            if not starts or starts[0] > 0:  # the batch opens on the last batch's term
                counts[-1] += starts[0] if starts else n
            for s, e in zip(starts, [*starts[1:], n] if starts else [], strict=True):
                if names[s] in terms:
                    raise ValueError(f"the rows of term {names[s]!r} are not together (not sorted by term)")
                terms[names[s]] = len(counts)
                counts.append(e - s)
            last = names[-1]
            rows_parts.append(pos.astype(np.int32))
            freq_parts.append(np.fromiter((r[2] for r in batch), dtype=np.float32, count=n))
        offsets = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        rows = np.concatenate(rows_parts) if rows_parts else np.empty(0, dtype=np.int32)
        freqs = np.concatenate(freq_parts) if freq_parts else np.empty(0, dtype=np.float32)
        return cls(unit_ids, lengths, terms, offsets, rows, freqs, generation, scanned)

    @classmethod
    def empty(cls, generation: int) -> BM25Image:
        return cls(np.empty(0, dtype=np.int64), np.zeros(0), {}, np.zeros(1, dtype=np.int64),
                   np.empty(0, dtype=np.int32), np.empty(0, dtype=np.float32), generation)

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
                    key: object = None, languages: Sequence[str] = (DEFAULT_LANGUAGE,)) -> list[tuple[int, float]]:
    """BM25 over segments that hold disjoint rows, as if they were one image: N, n_t and
    avg|row| are summed over every segment's rows the caller may read. The query is analysed
    in each of ``languages`` (those of the caller's units)."""
    terms = query_terms(query, languages)
    if not terms or not allowed_ids.size or limit <= 0:
        return []
    views = [seg._view(allowed_ids, key) for seg in segments]
    n_rows = sum(v.n_rows for v in views)
    if not n_rows:
        return []
    avg_len = sum(v.len_sum for v in views) / n_rows
    parts: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in segments]  # per segment: (rows, scores)
    for term in terms:
        kept = []
        for i, (seg, view) in enumerate(zip(segments, views, strict=True)):
            found = seg.postings(term)
            if found is not None:
                rows, freqs = found
                keep = view.mask[rows]
                kept.append((i, rows[keep], freqs[keep].astype(np.float64)))
        n_t = sum(rows.size for _, rows, _ in kept)
        if not n_t:
            continue
        idf = np.log((n_rows - n_t + 0.5) / (n_t + 0.5))
        if idf <= 0.0:
            idf = 1e-6
        for i, rows, f in kept:
            seg = segments[i]
            hit = f > 0
            rows, f = rows[hit], f[hit]
            norm = K1 * (1.0 - B + B * seg.lengths[rows] / max(avg_len, 1e-9))
            parts[i].append((rows, idf * f * (K1 + 1.0) / (f + norm)))
    units_of, scores_of = [], []
    for seg, matched_by in zip(segments, parts, strict=True):
        if len(matched_by) == 1:  # one term: its rows are distinct already
            units_of.append(seg.unit_ids[matched_by[0][0]])
            scores_of.append(matched_by[0][1])
        elif matched_by:
            # Summed per row in a dense array the size of the segment: linear, where sorting the
            # matched rows (np.unique) was most of a search at 1M rows. Every contribution is
            # positive (idf is floored above 0), so a row is matched exactly when its sum is not 0;
            # each row's terms are added in query order, as before.
            summed = np.bincount(np.concatenate([r for r, _ in matched_by]),
                                 weights=np.concatenate([w for _, w in matched_by]))
            matched = np.flatnonzero(summed)
            units_of.append(seg.unit_ids[matched])
            scores_of.append(summed[matched])
    if not units_of:
        return []
    # Segments hold disjoint rows: their units never repeat across them.
    units = np.concatenate(units_of) if len(units_of) > 1 else units_of[0]
    scores = np.concatenate(scores_of) if len(scores_of) > 1 else scores_of[0]
    return top_units(units, scores, limit)


def mentioned_in(segments: Sequence[BM25Image], text: str, allowed_ids: np.ndarray, key: object = None,
                 languages: Sequence[str] = (DEFAULT_LANGUAGE,)) -> bool:
    """Whether a row among ``allowed_ids`` holds a content word of ``text`` in a weighted column
    (not only in a zero-weight one, the access tokens): FTS5's ``title/body : (word OR …)``
    asked of the image, with no scan of the rows."""
    terms = query_terms(text, languages)
    if not terms or not allowed_ids.size:
        return False
    for seg in segments:
        view = seg._view(allowed_ids, key)
        for term in terms:
            found = seg.postings(term)
            if found is not None and bool(np.any(view.mask[found[0][found[1] > 0]])):
                return True
    return False


def top_units(units: np.ndarray, scores: np.ndarray, limit: int) -> list[tuple[int, float]]:
    """The ``limit`` best ``(unit id, score)``, best first; ties broken by unit id, as FTS5's
    ``ORDER BY bm25()`` leaves them in rowid order."""
    if not units.size or limit <= 0:
        return []
    top = min(limit, units.size)
    best = np.argpartition(-scores, top - 1)[:top]
    best = best[np.lexsort((units[best], -scores[best]))]
    return [(int(units[i]), float(scores[i])) for i in best]

"""An in-memory inverted index over learned term weights (SPEC B3), searched by dot product.

The store keeps each unit's weights (``sparse_terms``: term ids and weights, stamped with the
model); this image holds them column-wise, one posting list per vocabulary entry
(``scipy.sparse`` CSC: a query reads only its own terms' postings). A query's score for a unit is
``Σ_t w_query(t) · w_unit(t)`` over the terms they share.

It comes in **segments**: a large one over the units up to some id and small ones over the units
written since; each sync adds a segment for the units above the last one seen, and segments are
merged when there are more than :data:`MAX_SEGMENTS`. A search sums nothing across segments (a
unit is in exactly one), so segments change only the cost of a write.

The access rule (SPEC B8) is applied inside the match: only units in the caller's allowed set
are ranked, before the top ``depth`` are taken. Deleted units stay in the image (unit ids are
never reused) but are in no allowed set; :meth:`SparseIndex.rebuild` (``electa reindex``, or a
restart) frees them.

Memory: the postings of every parent unit, ~1.9 KB each with SPLADE-tiny (244 terms median on
SciFact, 8 bytes a term): ~1.9 GB at a million parents, built on a process's first search.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from electa.stores.protocol import AllowedSet

if TYPE_CHECKING:  # (imported where an index is built: scipy costs every process 0.1 s to start)
    from scipy import sparse

log = logging.getLogger(__name__)

MAX_SEGMENTS = 8

# (store sequence number, unit id, term ids as little-endian int32 bytes, weights as little-endian
# float32 bytes), in the order the store took them.
StoredTerms = tuple[int, int, bytes, bytes]


def pack(terms: np.ndarray, weights: np.ndarray) -> tuple[bytes, bytes]:
    """A sparse vector as the store keeps it."""
    return np.asarray(terms, dtype="<i4").tobytes(), np.asarray(weights, dtype="<f4").tobytes()


def unpack(terms: bytes, weights: bytes) -> tuple[np.ndarray, np.ndarray]:
    t, w = np.frombuffer(terms, dtype="<i4"), np.frombuffer(weights, dtype="<f4")
    if t.size != w.size:
        raise ValueError(f"stored sparse vector has {t.size} terms but {w.size} weights")
    return t, w


@dataclass(frozen=True)
class Segment:
    ids: np.ndarray  # unit ids
    matrix: sparse.csc_matrix  # len(ids) x vocab

    @classmethod
    def build(cls, rows: list[StoredTerms], vocab: int) -> Segment:
        """A segment of ``rows``; a row that does not decode (lengths that differ, a term outside
        the vocabulary, a weight that is not finite) is left out and logged: one bad row must not
        take the leg, or the writes that sync it, down."""
        ids, vectors = [], []
        for _, uid, t, w in rows:
            try:
                terms, weights = unpack(t, w)
                if terms.size and (terms.min() < 0 or terms.max() >= vocab or not np.isfinite(weights).all()):
                    raise ValueError(f"a term outside the vocabulary of {vocab} or a weight that is not finite")
            except ValueError as exc:
                log.warning("unit %s: stored term weights left out of the index: %s", uid, exc)
                continue
            ids.append(uid)
            vectors.append((terms, weights))
        lengths = np.fromiter((v[0].size for v in vectors), dtype=np.int64, count=len(vectors))
        indptr = np.concatenate([[0], np.cumsum(lengths)])
        cols = np.concatenate([v[0] for v in vectors]) if vectors else np.zeros(0, np.int32)
        data = np.concatenate([v[1] for v in vectors]) if vectors else np.zeros(0, np.float32)
        from scipy import sparse

        csr = sparse.csr_matrix((data, cols, indptr), shape=(len(vectors), vocab), dtype=np.float32)
        return cls(np.asarray(ids, dtype=np.int64), csr.tocsc())

    def scores(self, terms: np.ndarray, weights: np.ndarray) -> np.ndarray:
        return np.asarray(self.matrix[:, terms] @ weights).ravel()


class SparseIndex:
    """``SparseIndex(rows_after, vocab)``: ``rows_after(seq)`` yields the vectors (of this
    index's model) the store took after its sequence number ``seq``, in order. Thread-safe:
    searches read a tuple of segments that a sync replaces whole."""

    def __init__(self, rows_after: Callable[[int], Iterable[StoredTerms]], vocab: int) -> None:
        self.rows_after, self.vocab = rows_after, vocab
        self._segments: tuple[Segment, ...] = ()
        self._last = 0  # the store's sequence number of the last vector in the image
        self._lock = threading.Lock()  # one sync at a time

    def __len__(self) -> int:
        return sum(len(s.ids) for s in self._segments)

    @property
    def nbytes(self) -> int:
        """Memory the postings hold (ids, term ids, weights, column pointers)."""
        return sum(s.ids.nbytes + s.matrix.data.nbytes + s.matrix.indices.nbytes + s.matrix.indptr.nbytes
                   for s in self._segments)

    def sync(self, wait: bool = True) -> int:
        """Add the vectors stored since the last sync (one indexed range read when there are
        none); returns how many. A search calls it with ``wait=False``: while another thread
        syncs, that search reads the image as it was (best effort, never blocked)."""
        if not self._lock.acquire(blocking=wait):
            return 0
        try:
            rows = list(self.rows_after(self._last))
            if not rows:
                return 0
            segments = (*self._segments, Segment.build(rows, self.vocab))
            if len(segments) > MAX_SEGMENTS:
                # Size-tiered: the small ones are merged, and into the large one once they are a
                # quarter of its size, so that no merge copies the whole index every few writes.
                tail = sum(len(seg.ids) for seg in segments[1:])
                segments = ((_merge(segments),) if tail * 4 >= len(segments[0].ids)
                            else (segments[0], _merge(segments[1:])))
            self._segments, self._last = segments, int(rows[-1][0])
            return len(rows)
        finally:
            self._lock.release()

    def rebuild(self) -> None:
        """Read every stored vector again: after another model's weights were dropped (a unit
        stored again under a new sequence number would otherwise be held twice) or to free the
        rows of deleted units, which stay in the image until then."""
        with self._lock:
            rows = list(self.rows_after(0))
            self._segments = (Segment.build(rows, self.vocab),) if rows else ()
            self._last = int(rows[-1][0]) if rows else 0

    def search(self, terms: np.ndarray, weights: np.ndarray, depth: int, allowed: AllowedSet) -> list[tuple[int, float]]:
        """The ``depth`` allowed units with the highest dot product (> 0), best first; ties by id."""
        if depth <= 0 or not terms.size or not len(allowed):
            return []
        keep = (terms >= 0) & (terms < self.vocab)
        terms, weights = terms[keep].astype(np.int64), weights[keep].astype(np.float32)
        found_ids, found_scores = [], []
        for segment in self._segments:
            scores = segment.scores(terms, weights)
            hit = np.flatnonzero(scores > 0)
            ids = segment.ids[hit]
            # The access rule inside the match: only allowed units are ranked at all.
            pos = np.searchsorted(allowed.ids, ids)
            inside = (pos < allowed.ids.size) & (allowed.ids[np.minimum(pos, allowed.ids.size - 1)] == ids)
            found_ids.append(ids[inside])
            found_scores.append(scores[hit][inside])
        if not found_ids:
            return []
        ids, scores = np.concatenate(found_ids), np.concatenate(found_scores)
        ids, first = np.unique(ids, return_index=True)  # a unit held twice (see rebuild) counts once
        scores = scores[first]
        if ids.size > depth:
            # Everything scoring at least the depth-th best, then ties broken by id.
            cut = np.partition(scores, ids.size - depth)[ids.size - depth]
            ids, scores = ids[scores >= cut], scores[scores >= cut]
        order = np.lexsort((ids, -scores))[:depth]
        return [(int(ids[i]), float(scores[i])) for i in order]


def _merge(segments: Iterable[Segment]) -> Segment:
    from scipy import sparse

    parts = list(segments)
    return Segment(np.concatenate([s.ids for s in parts]),
                   sparse.vstack([s.matrix for s in parts], format="csc", dtype=np.float32))

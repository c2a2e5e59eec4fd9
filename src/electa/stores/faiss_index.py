"""FaissHnswIndex: the dense index (SPEC B2, B8), rebuilt from SQLite whenever in doubt.

HNSW with M=16 and efConstruction=200 (reference/three-lane-company-search.txt) over unit
vectors with inner product, which is cosine. SQLite holds every vector; this file is a cache:

- it is written atomically (temporary file, then ``os.replace``), after the SQLite commit;
- on open it is caught up with vectors committed after it was saved (ids only grow:
  ``AUTOINCREMENT``), or rebuilt when missing or unreadable;
- a deleted chunk's vector stays in the graph as a *tombstone*: the caller's allowed set (live
  units only) is the search's ``IDSelector``, so a tombstone is never returned, and the graph is
  rebuilt when tombstones pass a quarter of it.

The filter is applied inside the search (``SearchParametersHNSW(sel=...)``). When the allowed
set is small, HNSW's filtered walk loses recall, so the search is exact over just those vectors.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from electa.stores.protocol import AllowedSet, IndexStore

MAX_EF_SEARCH = 4096


def filtered_ef(ef: int, allowed: int, total: int) -> int:
    """The walk's breadth when only ``allowed`` of the graph's ``total`` vectors may be returned.

    faiss applies the selector during the walk: the ``ef`` best candidates kept are all allowed
    ones, but the walk meets allowed vectors at the allowed share of the graph's rate, so a
    caller holding a small share gets a fraction of its true neighbours. Widening ``ef`` by the
    inverse share gives the walk about the reach an unfiltered one has, as pgvector's iterative
    scans and Qdrant's filterable HNSW do in their own ways; capped at ``MAX_EF_SEARCH``.
    Measured (bench/filtered_hnsw.py, random vectors, the caller holding 1/2 to 1/8 of the
    graph): recall@k 0.31-0.76 as set, 0.89-0.99 widened. On SciFact train with StackFAQ as
    a second tenant (hash vectors, first 300 queries, bench/pg_parity.py) it moved dense
    nDCG@10 only from 0.2018 to 0.2049 against 0.2587 exact: there the graph's own
    approximation, not the filter, loses most.

    >>> filtered_ef(128, 50_000, 100_000), filtered_ef(128, 100_000, 100_000), filtered_ef(128, 1, 10**6)
    (256, 128, 4096)
    """
    if allowed <= 0 or allowed >= total:
        return ef
    return min(MAX_EF_SEARCH, max(ef, -(-ef * total // allowed)))


class _ReadWriteLock:
    """Many readers or one writer. faiss's HNSW ``add_with_ids`` mutates the graph that a
    concurrent ``search`` walks; searches hold the read side, mutations the write side.
    Writers are preferred, so a stream of searches cannot starve a sync."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._writer = False
        self._waiting_writers = 0

    @contextmanager
    def read(self) -> Iterator[None]:
        with self._cond:
            while self._writer or self._waiting_writers:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextmanager
    def write(self) -> Iterator[None]:
        with self._cond:
            self._waiting_writers += 1
            while self._writer or self._readers:
                self._cond.wait()
            self._waiting_writers -= 1
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()


class FaissHnswIndex:
    """``index.search(query_vec, k, allowed) -> [(chunk_id, cosine), ...]`` best first."""

    def __init__(self, store: IndexStore, model_id: str, dim: int, m: int = 16,
                 ef_construction: int = 200, ef_search: int = 128, exact_below: int = 20_000) -> None:
        import faiss

        self._faiss = faiss
        self.store = store
        self.model_id = model_id
        self.dim = dim
        self.m, self.ef_construction, self.ef_search = m, ef_construction, ef_search
        self.exact_below = exact_below
        tag = hashlib.sha256(model_id.encode()).hexdigest()[:12]
        self.path = store.directory / f"vectors-{tag}.faiss"
        self._lock = threading.RLock()  # one sync at a time
        self._graph = _ReadWriteLock()  # searches read the graph; adds and swaps write it
        self._generation = -1
        self._dirty = False
        self._remove_stale_temporaries()
        self._index = self._load()
        self._ids = np.empty(0, dtype=np.int64)
        self._vecs = np.empty((0, dim), dtype=np.float32)
        self._refresh_arrays()
        self.save()

    def _remove_stale_temporaries(self) -> None:
        """A process killed while saving leaves its temporary file (``<name>.<pid>.<thread>.tmp``)
        behind; remove those of processes that are gone."""
        for tmp in self.path.parent.glob(f"{self.path.stem}.*.tmp"):
            try:
                pid = int(tmp.name.split(".")[1])
                if pid != os.getpid():
                    os.kill(pid, 0)  # raises when no such process exists
            except (ValueError, IndexError, ProcessLookupError):
                tmp.unlink(missing_ok=True)
            except PermissionError:
                pass  # another user's live process

    def _new(self):  # type: ignore[no-untyped-def]
        faiss = self._faiss
        hnsw = faiss.IndexHNSWFlat(self.dim, self.m, faiss.METRIC_INNER_PRODUCT)
        hnsw.hnsw.efConstruction = self.ef_construction
        return faiss.IndexIDMap2(hnsw)

    def _load(self):  # type: ignore[no-untyped-def]
        if self.path.exists():
            try:
                index = self._faiss.read_index(str(self.path))
                if index.d == self.dim:
                    return index
            except RuntimeError:
                pass  # unreadable cache: rebuilt from SQLite below
        return self._new()

    def _known_ids(self) -> np.ndarray:
        return self._faiss.vector_to_array(self._index.id_map).astype(np.int64)

    def _refresh_arrays(self) -> None:
        """Load every live vector; add to the graph what it lacks; rebuild it when a quarter of
        it is tombstones. Runs on open, when tombstones pile up and after vectors were added to
        older chunks; not on every write."""
        # Read before the vectors: a write landing meanwhile leaves a newer generation to catch up on.
        generation, backfills = self.store.state
        ids, vecs = [], []
        for batch_ids, batch_vecs in self.store.vectors(self.model_id):
            ids.append(batch_ids)
            vecs.append(batch_vecs)
        self._ids = np.concatenate(ids) if ids else np.empty(0, dtype=np.int64)
        self._vecs = np.vstack(vecs) if vecs else np.empty((0, self.dim), dtype=np.float32)
        known = self._known_ids()
        missing = np.setdiff1d(self._ids, known, assume_unique=True)
        live = self._ids.size
        if self._index.ntotal > max(1000, live) and (self._index.ntotal - live) > 0.25 * self._index.ntotal:
            fresh = self._new()
            fresh.add_with_ids(self._vecs, self._ids)
            with self._graph.write():
                self._index = fresh
            missing = missing[:0]
            self._dirty = True
        if missing.size:
            rows = np.searchsorted(self._ids, missing)
            with self._graph.write():
                self._index.add_with_ids(self._vecs[rows], missing)
            self._dirty = True
        self._generation, self._backfills = generation, backfills

    def sync(self) -> None:
        """Catch up with the store if it changed (this process or another wrote).

        New vectors (ids only grow) are appended; deleted ones stay as tombstones that no
        allowed set names, until they pass a quarter of the graph and it is rebuilt."""
        if self.store.state == (self._generation, self._backfills):
            return
        with self._lock:
            generation, backfills = self.store.state
            if generation == self._generation and backfills == self._backfills:
                return
            if backfills != self._backfills:
                # Vectors were added to older chunks (ids below ours): appending cannot find them.
                self._add_backfilled()
                self._backfills = backfills
            after = int(self._ids[-1]) if self._ids.size else 0
            batches = list(self.store.vectors(self.model_id, after_id=after))
            if batches:
                new_ids = np.concatenate([b[0] for b in batches])
                new_vecs = np.vstack([b[1] for b in batches])
                with self._graph.write():
                    self._index.add_with_ids(new_vecs, new_ids)
                # New arrays, never mutated in place: a search holding the old ones stays whole.
                self._ids = np.concatenate([self._ids, new_ids])
                self._vecs = np.vstack([self._vecs, new_vecs])
                self._dirty = True
            live = self.store.count_vectors(self.model_id)
            if self._ids.size > 1000 and self._ids.size - live > 0.25 * self._ids.size:
                self._refresh_arrays()
            self._generation = generation

    def _add_backfilled(self) -> None:
        """Fetch the vectors the store holds and this index lacks (only their ids are scanned),
        add them to the graph and merge them into the sorted arrays."""
        missing = np.setdiff1d(self.store.vector_ids(self.model_id), self._ids, assume_unique=True)
        if not missing.size:
            return
        ids, vecs = self.store.vectors_of(self.model_id, missing)
        if not ids.size:
            return
        with self._graph.write():
            self._index.add_with_ids(vecs, ids)
        order = np.argsort(np.concatenate([self._ids, ids]), kind="stable")
        self._ids = np.concatenate([self._ids, ids])[order]
        self._vecs = np.vstack([self._vecs, vecs])[order]
        self._dirty = True

    def save(self) -> None:
        """Write the graph if it changed (atomically). SQLite stays the truth: a graph older than
        the store is caught up on the next open."""
        with self._lock:
            if not self._dirty:
                return
            # A name of its own: a server and a CLI saving the same index must not share a temporary file.
            tmp = self.path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
            with self._graph.read():
                self._faiss.write_index(self._index, str(tmp))
            os.replace(tmp, self.path)
            self._dirty = False

    def __len__(self) -> int:
        return int(self._ids.size)

    def search(self, vec: np.ndarray, k: int, allowed: AllowedSet) -> list[tuple[int, float]]:
        self.sync()
        with self._lock:
            ids, vecs = self._ids, self._vecs
        if not len(allowed) or not ids.size or k <= 0:
            return []
        query = np.asarray(vec, dtype=np.float32).reshape(1, -1)
        if len(allowed) <= self.exact_below:
            pos = np.clip(np.searchsorted(ids, allowed.ids), 0, ids.size - 1)
            rows = pos[ids[pos] == allowed.ids]
            if not rows.size:
                return []
            sims = vecs[rows] @ query[0]
            top = min(k, sims.size)
            best = np.argpartition(-sims, top - 1)[:top]
            best = best[np.argsort(-sims[best], kind="stable")]
            return [(int(ids[rows[i]]), float(sims[i])) for i in best]
        faiss = self._faiss
        selector = faiss.IDSelectorBatch(allowed.ids)
        params = faiss.SearchParametersHNSW(sel=selector, efSearch=filtered_ef(max(self.ef_search, k), len(allowed),
                                                                                int(ids.size)))
        with self._graph.read():
            scores, found = self._index.search(query, k, params=params)
        return [(int(i), float(s)) for i, s in zip(found[0], scores[0], strict=True) if i >= 0]

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
import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from electa.stores.protocol import AllowedSet, IndexStore

log = logging.getLogger(__name__)
MAX_EF_SEARCH = 4096
SAVE_IDLE_S = 30.0  # a deferred save (after a write) runs once no write has come for this long...
SAVE_MAX_WAIT_S = 120.0  # ...or this long after the first unsaved write...
SAVE_SHARE = 0.05  # ...or at once when this share of the graph is unsaved (a restart re-adds it)
SAVE_MIN = 1000


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
        self._backfills_key = f"vector_backfills:{model_id}"  # (SqliteStore.put_vectors counts each model's)
        self._own_backfills: str | None = None
        self._dirty = False
        self._unsaved = 0  # vectors added since the file was last written
        self._timer: threading.Timer | None = None  # a deferred save (see save)
        self._first_unsaved: float | None = None  # when the oldest unsaved change was made
        self._saving = False  # the file is being written from the graph (see save, sync)
        self._remove_stale_temporaries()
        self._index = self._load()
        # (graph, live ids sorted, each id's row in the graph's own vector storage): replaced
        # whole, never mutated, so a search reads one consistent triple without a lock.
        self._view: tuple[Any, np.ndarray, np.ndarray] = (self._index, np.empty(0, np.int64), np.empty(0, np.int64))
        self._refresh_arrays()
        self.save()

    @property
    def _ids(self) -> np.ndarray:
        return self._view[1]

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

    def _rows_of(self, index: Any, ids: np.ndarray) -> np.ndarray:
        """Each id's row in ``index``'s vector storage (every id must be in the graph)."""
        id_map = self._faiss.vector_to_array(index.id_map).astype(np.int64)
        order = np.argsort(id_map, kind="stable")
        at = np.searchsorted(id_map[order], ids)
        return order[at].astype(np.int64)

    def _stored_vectors(self, index: Any) -> np.ndarray:
        """The graph's own copy of its vectors, as a view (no copy): read it under the graph's
        read lock only, since an add may move the storage."""
        storage: Any = self._faiss.downcast_index(self._faiss.downcast_index(index.index).storage)  # type: ignore[attr-defined]
        return self._faiss.rev_swig_ptr(storage.get_xb(), storage.ntotal * self.dim).reshape(storage.ntotal, self.dim)

    def _refresh_arrays(self) -> None:
        """Add to the graph the vectors it lacks; rebuild it when a quarter of it is tombstones.
        Reads the store's vector ids, and only the vectors the graph lacks (all of them for a
        rebuild). Runs on open, when tombstones pile up and after vectors were added to older
        chunks; not on every write. The vectors are kept once, in the graph: no second copy."""
        # Read before the ids: a write landing meanwhile leaves a newer generation to catch up on.
        generation, backfills = self.store.state
        own = self.store.meta(self._backfills_key)
        live = self.store.vector_ids(self.model_id)
        index = self._index
        known = self._faiss.vector_to_array(index.id_map).astype(np.int64)
        if index.ntotal > max(1000, live.size) and (index.ntotal - live.size) > 0.25 * index.ntotal:
            index = self._new()
            added = []
            for ids, vecs in self.store.vectors(self.model_id):
                keep = np.isin(ids, live, assume_unique=True)  # not those written since `live` was read
                if keep.any():
                    index.add_with_ids(vecs[keep], ids[keep])
                    added.append(ids[keep])
            live = np.concatenate(added) if added else np.empty(0, np.int64)  # those deleted meanwhile are not
            self._dirty, self._unsaved = True, self._unsaved + live.size
        else:
            missing = np.setdiff1d(live, known, assume_unique=True)
            if missing.size:
                ids, vecs = self.store.vectors_of(self.model_id, missing)
                if ids.size:  # (all deleted meanwhile: faiss refuses an empty add)
                    with self._graph.write():
                        index.add_with_ids(vecs, ids)
                self._dirty, self._unsaved = True, self._unsaved + int(ids.size)
                live = np.union1d(np.intersect1d(live, known, assume_unique=True), ids)
            else:
                live = np.intersect1d(live, known, assume_unique=True)
        with self._graph.write():
            self._index = index
            self._view = (index, live, self._rows_of(index, live))
        self._generation, self._backfills, self._own_backfills = generation, backfills, own

    def sync(self) -> None:
        """Catch up with the store if it changed (this process or another wrote).

        New vectors (ids only grow) are appended; deleted ones stay as tombstones that no
        allowed set names, until they pass a quarter of the graph and it is rebuilt."""
        if self.store.state == (self._generation, self._backfills) or self._saving:
            return
        with self._lock:
            if self._saving:
                # The graph's file is being written from it: nothing may be added until it is
                # done. Searches go on with the graph as it is (the full-text leg already finds a
                # new unit); the first sync after the save catches up.
                return
            generation, backfills = self.store.state
            if generation == self._generation and backfills == self._backfills:
                return
            if backfills != self._backfills:
                # Vectors were added to older chunks (ids below ours): appending cannot find them.
                # Another model's (an organisation's own reading) need no scan of ours.
                own = self.store.meta(self._backfills_key)
                if own != self._own_backfills:
                    self._add_backfilled()
                    self._own_backfills = own
                self._backfills = backfills
            index, ids, rows = self._view
            after = int(ids[-1]) if ids.size else 0
            batches = list(self.store.vectors(self.model_id, after_id=after))
            if batches:
                new_ids = np.concatenate([b[0] for b in batches])
                new_vecs = np.vstack([b[1] for b in batches])
                with self._graph.write():
                    first = index.ntotal
                    index.add_with_ids(new_vecs, new_ids)
                    self._view = (index, np.concatenate([ids, new_ids]),
                                  np.concatenate([rows, np.arange(first, first + new_ids.size, dtype=np.int64)]))
                self._dirty, self._unsaved = True, self._unsaved + int(new_ids.size)
            live = self.store.count_vectors(self.model_id)
            if self._ids.size > 1000 and self._ids.size - live > 0.25 * self._ids.size:
                self._refresh_arrays()
            self._generation = generation

    def _add_backfilled(self) -> None:
        """Fetch the vectors the store holds and this index lacks (only their ids are scanned),
        add them to the graph and merge them into the sorted ids."""
        index, known, _ = self._view
        missing = np.setdiff1d(self.store.vector_ids(self.model_id), known, assume_unique=True)
        if not missing.size:
            return
        ids, vecs = self.store.vectors_of(self.model_id, missing)
        if not ids.size:
            return
        merged = np.union1d(known, ids)
        with self._graph.write():
            index.add_with_ids(vecs, ids)
            self._view = (index, merged, self._rows_of(index, merged))
        self._dirty, self._unsaved = True, self._unsaved + int(ids.size)

    def save(self, force: bool = True) -> None:
        """Write the graph if it changed (atomically). SQLite stays the truth: a graph older than
        the store is caught up on the next open, so a write need not wait for the file (at a
        million 384-d vectors it is 1.6 GB, seconds to write, and a write is to be searchable
        within a second). ``force=False`` (after each write) leaves it to a background thread:
        once no write has come for ``SAVE_IDLE_S`` (at most ``SAVE_MAX_WAIT_S`` after the first
        unsaved write), or at once when ``SAVE_SHARE`` of the graph is unsaved (what a restart
        after a crash would have to add again). While the file is written the graph takes no
        additions, and no search waits for it: a write landing then is found by the full-text
        leg at once and by the dense leg when the save ends (seconds at a million vectors)."""
        if not force:
            with self._lock:
                if not self._dirty:
                    return
                due = self._unsaved >= max(SAVE_MIN, SAVE_SHARE * self._index.ntotal)
                now = time.monotonic()
                if self._first_unsaved is None:
                    self._first_unsaved = now
                # Quiet for SAVE_IDLE_S, but never later than SAVE_MAX_WAIT_S after the first
                # unsaved write (a steady stream of writes would otherwise put it off for ever).
                delay = 0.0 if due else max(0.0, min(SAVE_IDLE_S, self._first_unsaved + SAVE_MAX_WAIT_S - now))
                if self._timer is not None:
                    self._timer.cancel()
                self._timer = threading.Timer(delay, self._save_in_background)
                self._timer.daemon = True
                self._timer.start()
            return
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if not self._dirty or self._saving:
                return  # (a save under way writes this same graph: nothing is added meanwhile)
            self._saving, index = True, self._index
        saved = False
        try:
            # Without the sync lock: a search's catch-up returns at once while the file is written
            # (see sync), where it used to wait seconds at a million vectors for the save to end.
            # A name of its own: a server and a CLI saving the same index must not share a temporary file.
            tmp = self.path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
            with self._graph.read():
                self._faiss.write_index(index, str(tmp))
            os.replace(tmp, self.path)
            saved = True
        finally:
            with self._lock:
                self._saving = False
                if saved:
                    self._dirty, self._unsaved, self._first_unsaved = False, 0, None

    def _save_in_background(self) -> None:
        if not self.path.parent.is_dir():
            return  # the data directory is gone (a store dropped without closing): nothing to keep
        try:
            self.save()
        except Exception as exc:  # the file is a cache: the next save or open makes up for it
            log.warning("saving the vector graph to %s failed (%s); it is rebuilt from the store on the next open",
                        self.path, exc)

    def __len__(self) -> int:
        return int(self._ids.size)

    def search(self, vec: np.ndarray, k: int, allowed: AllowedSet) -> list[tuple[int, float]]:
        self.sync()
        index, ids, stored_rows = self._view
        if not len(allowed) or not ids.size or k <= 0:
            return []
        query = np.asarray(vec, dtype=np.float32).reshape(1, -1)
        if len(allowed) <= self.exact_below:
            pos = np.clip(np.searchsorted(ids, allowed.ids), 0, ids.size - 1)
            rows = pos[ids[pos] == allowed.ids]
            if not rows.size:
                return []
            with self._graph.read():  # an add may move the storage: copy the rows out under the lock
                vecs = self._stored_vectors(index)[stored_rows[rows]]
            sims = vecs @ query[0]
            top = min(k, sims.size)
            best = np.argpartition(-sims, top - 1)[:top]
            best = best[np.argsort(-sims[best], kind="stable")]
            return [(int(ids[rows[i]]), float(sims[i])) for i in best]
        faiss = self._faiss
        selector = faiss.IDSelectorBatch(allowed.ids)
        params = faiss.SearchParametersHNSW(sel=selector, efSearch=filtered_ef(max(self.ef_search, k), len(allowed),
                                                                                int(ids.size)))
        with self._graph.read():
            scores, found = index.search(query, k, params=params)
        return [(int(i), float(s)) for i, s in zip(found[0], scores[0], strict=True) if i >= 0]

"""Allowed sets that follow writes instead of being read whole after each one.

A caller's allowed set (every unit id it may read) changes only two ways: units leave by
deletion (a document's access never changes in place: new access, new document, new ids) and
units arrive with ids above every id committed before them (writes are serialised, ids drawn in
order). So a set read at one generation is brought to a later one from the units removed since
(a log each store keeps, pruned after ``REMOVALS_KEPT`` generations) and the caller's ids above
the highest id of the earlier read, at a cost in proportion to the change. At a million units
the whole read took about a second of each write's time to searchable, on either backend.

:class:`AllowedSets` keeps, per caller, the last set read and the highest unit id then (its
*base*), and per generation and caller the set itself (the *cache*); both are shared by a
store's threads. Bases are dropped together once they hold ``ALLOWED_KEPT_IDS`` ids in all.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from electa.stores.protocol import AllowedSet
from electa.types import Caller

REMOVALS_KEPT = 4096  # generations of removed units kept for incremental allowed sets
ALLOWED_KEPT_IDS = 32_000_000  # unit ids kept as the bases of allowed sets, all callers (256 MB)
CACHED = 256  # allowed sets cached per generation and caller


class AllowedSets:
    """The cache and the bases of a store's allowed sets (thread-safe)."""

    def __init__(self) -> None:
        self._cache: dict[str, AllowedSet] = {}
        self._bases: dict[str, tuple[AllowedSet, int]] = {}
        self._kept = 0  # ids in the bases, all callers
        self._lock = threading.Lock()

    @staticmethod
    def key(generation: int, caller: Caller) -> str:
        return f"{generation}|{caller.cache_key()}"

    def cached(self, generation: int, caller: Caller) -> AllowedSet | None:
        return self._cache.get(self.key(generation, caller))

    def forget_cached(self) -> None:
        """After a write by this process (or its rollback): the cache goes; bases stay (they
        follow writes through the removal log)."""
        with self._lock:
            self._cache.clear()

    def read(self, caller: Caller, generation: int, logged_from: int,
             removed_since: Callable[[int], np.ndarray], fresh_above: Callable[[int], np.ndarray],
             keep: bool = True, top: int = 0) -> AllowedSet:
        """The caller's set at ``generation`` (all read in one snapshot by the store): from its
        base when the base is no older than ``logged_from`` (the oldest generation the removal
        log still covers), minus ``removed_since(base generation)``, plus
        ``fresh_above(base's highest id)``; otherwise ``fresh_above(0)``, the whole set.
        ``keep=False``: neither cached nor kept (read inside a write that may yet be rolled back).

        The next read starts above the highest of: the ids this read returned, the base's
        start, and ``top``, a unit id every unit at or below which was committed when the
        snapshot was taken (the table's highest id, read in that snapshot or an earlier one).
        A unit the caller may read that commits later has a higher id still (writes are
        serialised and draw ids in order). ``top`` keeps the next read from walking every
        other tenant's rows written since this caller's last unit."""
        with self._lock:
            previous = self._bases.get(caller.cache_key())
        base, above = np.empty(0, dtype=np.int64), 0
        if previous is not None and logged_from <= previous[0].generation <= generation:
            before, above = previous
            removed = removed_since(before.generation)
            base = before.ids[~np.isin(before.ids, removed)] if removed.size else before.ids
        fresh = fresh_above(above)
        allowed = AllowedSet(np.concatenate([base, fresh]) if base.size else fresh, generation, caller)
        if keep:
            self._keep(caller, allowed, max(top, above, int(fresh[-1]) if fresh.size else 0))
        return allowed

    def _keep(self, caller: Caller, allowed: AllowedSet, top: int) -> None:
        caller_key = caller.cache_key()
        with self._lock:  # searches run on many threads
            if len(self._cache) > CACHED:
                self._cache.clear()
            self._cache[self.key(allowed.generation, caller)] = allowed
            replaced = self._bases.pop(caller_key, None)
            self._kept -= len(replaced[0]) if replaced is not None else 0
            if len(self._bases) >= CACHED or self._kept + len(allowed) > ALLOWED_KEPT_IDS:
                self._bases.clear()  # (the sets themselves: many callers at a million units each)
                self._kept = 0
            self._bases[caller_key] = (allowed, top)
            self._kept += len(allowed)

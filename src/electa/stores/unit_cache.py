"""Units kept in memory between searches, for any backend (see ``IndexStore.units``).

A unit's text never changes (ids are never reused), but its locations may, and every change
moves the store's generation: the cache holds units read at one generation and empties when a
newer one is seen. Bounded by characters (``UNITS_KEPT_CHARS`` in all, none longer than
``UNIT_KEPT_CHARS``: a whole-document unit can be megabytes).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence

from electa.stores.protocol import StoredUnit

UNITS_KEPT_CHARS = 64_000_000
UNIT_KEPT_CHARS = 20_000


class UnitCache:
    def __init__(self, kept_chars: int = UNITS_KEPT_CHARS, unit_chars: int = UNIT_KEPT_CHARS) -> None:
        self.kept_chars, self.unit_chars = kept_chars, unit_chars
        self._units: dict[int, StoredUnit] = {}
        self._generation = -1
        self._chars = 0
        self._lock = threading.Lock()

    def lookup(self, generation: int, ids: Sequence[int]) -> dict[int, StoredUnit]:
        """The units of ``ids`` kept at ``generation`` (a newer generation empties the cache)."""
        with self._lock:
            if generation > self._generation:
                self._reset(generation)
            if generation != self._generation:
                return {}
            units = self._units
            return {i: u for i in ids if (u := units.get(i)) is not None}

    def keep(self, generation: int, fresh: Mapping[int, StoredUnit]) -> None:
        """Keep units just read at ``generation`` (ignored if the cache has moved on)."""
        with self._lock:
            if generation != self._generation:
                return
            for uid, unit in fresh.items():
                size = len(unit.text) + len(unit.title)
                if size > self.unit_chars:
                    continue
                if self._chars + size > self.kept_chars:
                    self._reset(generation)
                self._units[uid] = unit
                self._chars += size

    def forget(self) -> None:
        """After a write (or its rollback) by this process: nothing read before it is kept."""
        with self._lock:
            self._reset(-1)

    def _reset(self, generation: int) -> None:
        self._units.clear()
        self._chars = 0
        self._generation = generation


LEADS_KEPT = 1_000_000  # documents


class LeadCache:
    """Each document's title and opening unit id (``IndexStore.leads``; None for a document
    without a title unit), kept at one generation as :class:`UnitCache` keeps units: a document's
    units never change, but a title unit may be added to an older one (a generation's move)."""

    def __init__(self, kept: int = LEADS_KEPT) -> None:
        self.kept = kept
        self._leads: dict[int, tuple[str, int] | None] = {}
        self._generation = -1
        self._lock = threading.Lock()

    def lookup(self, generation: int, documents: Sequence[int]) -> dict[int, tuple[str, int] | None]:
        with self._lock:
            if generation > self._generation:
                self._leads.clear()
                self._generation = generation
            if generation != self._generation:
                return {}
            leads = self._leads
            return {d: leads[d] for d in documents if d in leads}

    def keep(self, generation: int, fresh: Mapping[int, tuple[str, int] | None]) -> None:
        with self._lock:
            if generation != self._generation:
                return
            if len(self._leads) + len(fresh) > self.kept:
                self._leads.clear()
            self._leads.update(fresh)

    def forget(self) -> None:
        with self._lock:
            self._leads.clear()
            self._generation = -1

    def read(self, generation: int, documents: Sequence[int],
             query: Callable[[list[int]], Iterable[tuple[int, str, int]]]) -> dict[int, tuple[str, int]]:
        """Each of ``documents``' title and opening unit id: those kept at ``generation``, the
        rest by ``query`` (rows of document, title, opening for the ids it is given), kept; a
        document without a title unit is left out. (A backend's ``leads``, inside its snapshot.)"""
        found = self.lookup(generation, documents)
        missing = [d for d in documents if d not in found]
        fresh: dict[int, tuple[str, int] | None] = dict.fromkeys(missing)
        if missing:
            fresh.update((int(d), (str(title), int(u))) for d, title, u in query(missing))
        self.keep(generation, fresh)
        return {d: lead for d, lead in (found | fresh).items() if lead is not None}


def with_units(leads: Mapping[int, tuple[str, int]],
               units: Callable[[Sequence[int]], Mapping[int, StoredUnit]]) -> dict[int, tuple[str, StoredUnit]]:
    """``leads`` with each opening's unit read by ``units`` (an opening deleted meanwhile is left out)."""
    read = units(sorted({u for _, u in leads.values()}))
    return {d: (title, read[u]) for d, (title, u) in leads.items() if u in read}

"""In-process result cache (SPEC H3).

Keyed by organisation, agent, the caller's principal set, answer provider, normalised query,
page and the store's generation: any source change anywhere moves the generation, so a changed
knowledge base is never answered from the cache (stricter than purging one agent, and correct
across processes that share the store). Entries expire after ``ttl_s``. The probe never uses it.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any, Protocol

from electa.types import Caller


def normalise(query: str) -> str:
    return " ".join(query.lower().split())


class Cache(Protocol):
    """A result cache (SPEC H3). The in-process :class:`ResultCache` is the embedded one; a
    shared one (Redis) must honour the same contract, checked by
    :class:`electa.testing.cache_contract.CacheContract`:

    - ``key(...)`` differs whenever any part differs: kind, the caller (organisation, agent,
      principal set), provider, query (after folding case and blanks), page, store version,
      ``extra``; and is equal when they are all equal;
    - ``get(key)`` returns what ``put(key, value)`` stored, until ``ttl_s`` has passed; after
      that, and for a key never stored, ``None``;
    - storing never fails the caller; the cache may forget entries at any time (bounded size);
    - ``status`` is ``"ok"``, or ``"unavailable: <reason>"`` while a shared backend is being
      skipped (every ``get`` a miss, every ``put`` dropped): responses then say ``"cache": "unavailable"``.
    """

    ttl_s: float

    @property
    def status(self) -> str: ...

    def key(self, kind: str, caller: Caller, provider: str, query: str, page: str | None, generation: object,
            extra: str = "") -> tuple[object, ...]: ...

    def get(self, key: tuple[object, ...]) -> Any | None: ...

    def put(self, key: tuple[object, ...], value: Any) -> None: ...


class ResultCache:
    """The in-process cache: LRU of ``max_entries``, each living ``ttl_s`` seconds."""

    def __init__(self, ttl_s: float = 300.0, max_entries: int = 2048) -> None:
        self.ttl_s, self.max_entries = ttl_s, max_entries
        self._data: OrderedDict[tuple[object, ...], tuple[float, Any]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    @property
    def status(self) -> str:
        return "ok"  # in this process: never unavailable

    @staticmethod
    def key(kind: str, caller: Caller, provider: str, query: str, page: str | None, generation: object,
            extra: str = "") -> tuple[object, ...]:
        return (kind, caller.cache_key(), provider, normalise(query), page or "", generation, extra)

    def get(self, key: tuple[object, ...]) -> Any | None:
        with self._lock:
            entry = self._data.get(key)
            if entry is None or entry[0] < time.monotonic():
                self._data.pop(key, None)
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return entry[1]

    def put(self, key: tuple[object, ...], value: Any) -> None:
        with self._lock:
            self._data[key] = (time.monotonic() + self.ttl_s, value)
            self._data.move_to_end(key)
            while len(self._data) > self.max_entries:
                self._data.popitem(last=False)

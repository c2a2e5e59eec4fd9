"""The shared result cache (SPEC H3) in Redis: what every worker of one deployment reads and writes.

It honours the :class:`electa.api.cache.Cache` contract (checked by
:class:`electa.testing.cache_contract.CacheContract` against a real server) and adds:

**Generation keys.** A key is made from the same parts as the in-process cache's, the store's
``version`` among them. The version moves with every source change and lives in the database, so
all workers read the same one: the moment any worker adds or removes a source, every worker's
keys change, and the entries made under the old version are unreachable everywhere at once. No
worker has to tell another to purge anything; the stale entries simply expire (``ttl_s``).

**Keys are digests.** The parts are encoded canonically and digested with HMAC-SHA256 under a
secret of the data directory (:meth:`electa.redis_link.RedisLink.digest`), under the namespace
``electa:cache:v1:``: no caller text becomes a Redis key, and two deployments sharing one Redis
never read each other's entries.

**Values are JSON, never pickle.** Anyone who can write to Redis could otherwise run code in
every worker. :func:`encode` writes what the API stores (dicts with string keys, lists, tuples,
strings, numbers, booleans, None, and the ask pipeline's :class:`~electa.types.AnswerEvent`) and
:func:`decode` gives back equal values, tuples as tuples; anything else is not cached. A value
that does not decode (written by something else) is a miss.

**Bounded.** Every entry expires after ``ttl_s`` (Redis ``PX``), and a value over
``max_value_bytes`` is not stored. What Redis drops when it is full is its operator's choice
(``maxmemory`` and ``maxmemory-policy``, e.g. ``allkeys-lru``); under ``noeviction`` a full
Redis refuses writes, which this cache treats like any other Redis error.

**Never fails an answer.** Every Redis error is caught by :class:`~electa.redis_link.RedisLink`:
``get`` is a miss, ``put`` does nothing, the breaker skips Redis for a few seconds, and
``status`` says ``"unavailable: …"`` so responses can say the cache was skipped.
"""

from __future__ import annotations

import json
import logging
from enum import Enum
from typing import Any

from electa.api.cache import ResultCache
from electa.errors import ElectaError
from electa.redis_link import RedisLink
from electa.types import AnswerEvent, Caller

log = logging.getLogger("electa.cache")

NAMESPACE = "electa:cache:v1:"
MAX_VALUE_BYTES = 4 * 2**20
_TUPLE, _EVENT, _DICT = "__tuple__", "__event__", "__dict__"
_TAGS = frozenset({_TUPLE, _EVENT, _DICT})


class Unstorable(ElectaError):
    """A value holds something the cache's JSON encoding would not give back equal."""


def _tagged(value: object) -> object:
    if value is None or type(value) in (str, bool):
        return value
    if isinstance(value, Enum):
        raise Unstorable(f"{type(value).__name__} is not cached (it would come back as a plain value)")
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if type(value) is list:
        return [_tagged(v) for v in value]
    if type(value) is tuple:
        return {_TUPLE: [_tagged(v) for v in value]}
    if type(value) is dict:
        if not all(type(k) is str for k in value):
            raise Unstorable("a dict with keys that are not strings is not cached")
        inner = {k: _tagged(v) for k, v in value.items()}
        # A dict that looks like a tag is wrapped, so decoding never mistakes it for one.
        return {_DICT: inner} if len(value) == 1 and next(iter(value)) in _TAGS else inner
    if type(value) is AnswerEvent:
        return {_EVENT: [value.kind, _tagged(value.data)]}
    raise Unstorable(f"{type(value).__name__} is not cached (only JSON values, tuples and AnswerEvent are)")


def _untagged(value: object) -> Any:
    if isinstance(value, list):
        return [_untagged(v) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        [(tag, inner)] = value.items()
        if tag == _TUPLE and isinstance(inner, list):
            return tuple(_untagged(v) for v in inner)
        if tag == _DICT and isinstance(inner, dict):
            return {k: _untagged(v) for k, v in inner.items()}
        if tag == _EVENT:
            kind, data = inner
            if not isinstance(kind, str) or not isinstance(data, dict):
                raise ValueError("a malformed cached event")
            return AnswerEvent(kind, _untagged(data))
    return {k: _untagged(v) for k, v in value.items()}


def encode(value: object) -> bytes:
    """``value`` as tagged JSON (raises :class:`Unstorable` for what would not come back equal).

    >>> encode([("token", {"token": "Yes"})])
    b'[{"__tuple__":["token",{"token":"Yes"}]}]'
    >>> decode(encode({"__tuple__": (1, None), "hits": [1.5, True]}))
    {'__tuple__': (1, None), 'hits': [1.5, True]}
    """
    return json.dumps(_tagged(value), ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def decode(data: bytes) -> Any:
    """What :func:`encode` encoded (raises ValueError, TypeError or RecursionError on anything else)."""
    return _untagged(json.loads(data.decode("utf-8")))


class RedisCache:
    """The result cache in Redis at ``link`` (a URL or a shared :class:`RedisLink`); entries live ``ttl_s``."""

    def __init__(self, link: RedisLink | str, ttl_s: float = 300.0, *, max_value_bytes: int = MAX_VALUE_BYTES,
                 namespace: str = NAMESPACE) -> None:
        self.link = link if isinstance(link, RedisLink) else RedisLink(link)
        self.ttl_s, self.max_value_bytes, self.namespace = ttl_s, max_value_bytes, namespace
        self.hits = self.misses = 0
        self._warned: set[str] = set()

    @property
    def status(self) -> str:
        """``"ok"``, or ``"unavailable: <reason>"`` while Redis is being skipped."""
        return self.link.status

    def key(self, kind: str, caller: Caller, provider: str, query: str, page: str | None, generation: object,
            extra: str = "") -> tuple[object, ...]:
        parts = ResultCache.key(kind, caller, provider, query, page, generation, extra)  # the same folding
        return (self.link.digest(self.namespace, parts),)

    def _name(self, key: tuple[object, ...]) -> str:
        if len(key) == 1 and isinstance(key[0], str) and key[0].startswith(self.namespace):
            return key[0]
        return self.link.digest(self.namespace, key)  # a key made elsewhere: still never raw text

    def get(self, key: tuple[object, ...]) -> Any | None:
        name = self._name(key)
        raw = self.link.call(lambda client: client.get(name), None)
        if raw is None:
            self.misses += 1
            return None
        try:
            value = decode(raw)
        except (ValueError, TypeError, RecursionError) as exc:
            self._warn_once("undecodable", "a cached value in redis does not decode (%s): treated as a miss", exc)
            self.misses += 1
            return None
        self.hits += 1
        return value

    def put(self, key: tuple[object, ...], value: Any) -> None:
        try:
            data = encode(value)
        except (Unstorable, ValueError, RecursionError) as exc:
            self._warn_once(f"unstorable:{exc}", "not cached: %s", exc)
            return
        if len(data) > self.max_value_bytes:
            log.debug("not cached: %d bytes is over the %d-byte limit", len(data), self.max_value_bytes)
            return
        name, ttl_ms = self._name(key), max(1, round(self.ttl_s * 1000))
        self.link.call(lambda client: client.set(name, data, px=ttl_ms), None)

    def _warn_once(self, what: str, message: str, *args: object) -> None:
        """A value problem repeats with every request that meets it: one log line per kind is enough."""
        if what not in self._warned and len(self._warned) < 100:
            self._warned.add(what)
            log.warning(message, *args)

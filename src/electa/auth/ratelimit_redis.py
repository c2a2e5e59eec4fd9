"""The rate limits of :mod:`electa.auth.ratelimit`, shared by every worker through Redis.

:class:`RedisRateLimiter` keeps :class:`~electa.auth.ratelimit.RateLimiter`'s semantics exactly:
two token buckets per request (per key, per key and client address), a request takes one token
from each, and when either is short neither is charged and :meth:`hit` returns the seconds until
both have one again. The buckets live in Redis and one Lua script reads, refills and charges both
atomically (Redis runs a script alone), so N workers share one budget instead of each granting
the full one.

The clock is Redis ``TIME`` unless one is passed in (then every worker must pass the same
wall clock; the doctest scenario of :mod:`electa.auth.ratelimit` passes a fake one). Bucket keys
are keyed digests of (key, client address), never the key or address themselves, and each
expires once its bucket would be full again: an absent bucket is a full one, so expiry changes
nothing and the keyspace stays bounded.

Redis down: the limiter falls back to its own in-process buckets (the same limits, per worker),
says so once in the log and in ``status``, and goes back to Redis when the breaker lets a call
through again. Erring towards letting visitors through is the in-process limiter's rule too.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from electa.auth.ratelimit import RateLimiter
from electa.redis_link import RedisLink

log = logging.getLogger("electa.auth")

NAMESPACE = "electa:rate:v1:"

# KEYS: the buckets; ARGV[1]: now in seconds ("" = Redis TIME); ARGV[1 + i]: bucket i's tokens per minute.
# Numbers leave as strings: Redis would truncate a Lua number to an integer.
_HIT = """
local now = tonumber(ARGV[1])
if not now then
  if redis.replicate_commands then redis.replicate_commands() end
  local t = redis.call('TIME')
  now = tonumber(t[1]) + tonumber(t[2]) / 1000000
end
local levels, wait = {}, 0
for i, key in ipairs(KEYS) do
  local rate = tonumber(ARGV[i + 1])
  local capacity = math.max(1, rate)
  local level = capacity
  local saved = redis.call('HMGET', key, 'tokens', 'at')
  if saved[1] and saved[2] then
    level = math.min(capacity, tonumber(saved[1]) + math.max(0, now - tonumber(saved[2])) * rate / 60)
  end
  levels[i] = level
  if level < 1 then wait = math.max(wait, (1 - level) * 60 / rate) end
end
if wait > 0 then return string.format('%.17g', wait) end
for i, key in ipairs(KEYS) do
  local rate = tonumber(ARGV[i + 1])
  local tokens = levels[i] - 1
  redis.call('HSET', key, 'tokens', string.format('%.17g', tokens), 'at', string.format('%.17g', now))
  redis.call('PEXPIRE', key, string.format('%d', math.ceil((math.max(1, rate) - tokens) * 60000 / rate) + 1000))
end
return '0'
"""


class RedisRateLimiter(RateLimiter):
    """:class:`RateLimiter` with its buckets in Redis at ``link`` (a URL or a shared :class:`RedisLink`).

    ``clock`` (seconds) is sent to the script when given; otherwise Redis ``TIME`` is used. The
    inherited in-process buckets are the fallback while Redis is unavailable.
    """

    def __init__(self, link: RedisLink | str, per_key_per_minute: float, per_client_per_minute: float,
                 clock: Callable[[], float] | None = None, max_buckets: int = 100_000,
                 namespace: str = NAMESPACE) -> None:
        super().__init__(per_key_per_minute, per_client_per_minute, clock or time.monotonic, max_buckets)
        self.link = link if isinstance(link, RedisLink) else RedisLink(link)
        self.shared_clock, self.namespace = clock, namespace
        self._script = self.link.client.register_script(_HIT)  # EVALSHA, loading it again after a Redis restart
        self._falling_back = False
        self._flag = threading.Lock()

    @property
    def status(self) -> str:
        """``"ok"``, or ``"unavailable: <reason>"`` while the in-process buckets stand in."""
        return self.link.status

    def hit(self, key: str, client: str) -> float:
        """Take a token for ``key`` from ``client``: 0.0 when allowed, else seconds to wait."""
        limits = [(b, n) for b, n in ((("key", key), self.per_key), (("client", key, client), self.per_client)) if n > 0]
        if not limits:
            return 0.0
        names = [self.link.digest(self.namespace, bucket) for bucket, _ in limits]
        now = "" if self.shared_clock is None else repr(float(self.shared_clock()))
        args = [now, *(repr(per_minute) for _, per_minute in limits)]
        wait = self.link.call(lambda _client: self._script(keys=names, args=args), None)
        if wait is None:
            self._fall_back(True)
            return super().hit(key, client)
        self._fall_back(False)
        return float(wait)

    def _fall_back(self, falling: bool) -> None:
        if falling == self._falling_back:
            return
        with self._flag:
            if falling == self._falling_back:
                return
            self._falling_back = falling
        if falling:
            log.warning("rate limits fall back to this process's buckets (%g/min per key, %g/min per key and client)"
                        " while redis is %s", self.per_key, self.per_client, self.link.status)
        else:
            log.warning("rate limits are shared through redis again")


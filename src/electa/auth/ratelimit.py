"""Token-bucket rate limits for browser-facing credentials (search keys, visitor tokens).

Two buckets guard each request: one per key (every browser sharing a widget key, together) and
one per (key, client address) (one visitor). A bucket holds ``per_minute`` tokens (at least one), refills
at ``per_minute / 60`` per second, and a request takes one from each of its two buckets; when
either is empty the request is refused and neither is charged, with the seconds until both
have a token again. ``per_minute = 0`` switches that limit off. This is the classic token bucket
(Turner, "New directions in communications", IEEE Commun. Mag. 1986; the same shape as Algolia's
per-IP limit on a secured key).

Buckets live in this process (several workers each hold their own). The least recently used are
dropped past ``max_buckets``; a dropped bucket comes back full, which errs towards letting
someone through, never towards refusing them.

>>> t = [0.0]
>>> limits = RateLimiter(per_key_per_minute=0, per_client_per_minute=2, clock=lambda: t[0])
>>> [limits.hit("k", "1.2.3.4") for _ in range(3)]
[0.0, 0.0, 30.0]
>>> t[0] = 30.0
>>> limits.hit("k", "1.2.3.4")
0.0
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable

from electa.errors import RateLimited


class RateLimiter:
    def __init__(self, per_key_per_minute: float, per_client_per_minute: float,
                 clock: Callable[[], float] = time.monotonic, max_buckets: int = 100_000) -> None:
        self.per_key, self.per_client = float(per_key_per_minute), float(per_client_per_minute)
        self.clock, self.max_buckets = clock, max_buckets
        # bucket id -> (tokens, time of that count)
        self._buckets: OrderedDict[Hashable, tuple[float, float]] = OrderedDict()
        self._lock = threading.Lock()

    def _level(self, bucket: Hashable, per_minute: float, now: float) -> float:
        capacity = max(1.0, per_minute)
        tokens, then = self._buckets.get(bucket, (capacity, now))
        return min(capacity, tokens + (now - then) * per_minute / 60.0)

    def hit(self, key: str, client: str) -> float:
        """Take a token for ``key`` from ``client``: 0.0 when allowed, else seconds to wait."""
        now = self.clock()
        limits = [(b, n) for b, n in ((("key", key), self.per_key), (("client", key, client), self.per_client)) if n > 0]
        with self._lock:
            levels = [(bucket, per_minute, self._level(bucket, per_minute, now)) for bucket, per_minute in limits]
            short = [(1.0 - level) * 60.0 / per_minute for _, per_minute, level in levels if level < 1.0]
            if short:
                return max(short)
            for bucket, _, level in levels:
                self._buckets[bucket] = (level - 1.0, now)
                self._buckets.move_to_end(bucket)
            while len(self._buckets) > self.max_buckets:
                self._buckets.popitem(last=False)
        return 0.0

    def check(self, key: str, client: str) -> None:
        """:meth:`hit`, raising :class:`RateLimited` (HTTP 429, ``retry_after`` seconds) when refused."""
        wait = self.hit(key, client)
        if wait > 0:
            raise RateLimited(f"too many requests for this key; retry in {math.ceil(wait)} s (limits:"
                              f" {self.per_key:g}/min per key, {self.per_client:g}/min per key and client address)",
                              retry_after=wait)

"""One Redis connection for the shared result cache and rate limits, behind a circuit breaker.

Redis is an accelerator here, never a dependency of an answer: every call has short socket
timeouts, no client-side retries, and any error opens the breaker, so for ``cooldown_s`` seconds
every call is skipped at once (a dead Redis costs no latency per request). After the cooldown one
call probes it again; success closes the breaker. An outage is logged once when it starts and
once when it ends, not per request. The ``redis`` package is imported only here, and this module
only when ``ELECTA_REDIS_URL`` is set, so the core install does not need it.

Keys are never raw caller text: :meth:`RedisLink.digest` is an HMAC-SHA256 of a canonical
encoding under a secret of the data directory, which also keeps two deployments that share one
Redis apart (their store versions and organisation names may well coincide).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit

from electa.errors import ConfigError

log = logging.getLogger("electa.redis")

T = TypeVar("T")

OK = "ok"


def canonical(parts: object) -> bytes:
    """A canonical byte encoding of JSON-like ``parts``; a value's type is part of it (1 is not "1")."""
    def typed(value: object) -> object:
        if isinstance(value, list | tuple):
            return [typed(v) for v in value]
        if value is None or isinstance(value, str | bool | int | float):
            return value if isinstance(value, str) else [type(value).__name__, value]
        return [type(value).__name__, repr(value)]
    return json.dumps(typed(parts), ensure_ascii=False, separators=(",", ":")).encode("utf-8")


class RedisLink:
    """A Redis client (``url``) with ``timeout_s`` socket timeouts and a circuit breaker.

    ``call(fn, default)`` runs ``fn(client)`` unless the breaker is open, and returns ``default``
    when it is open or ``fn`` raises a Redis or socket error. ``status`` is ``"ok"`` or
    ``"unavailable: <reason>"`` (the reason is for logs and operators, not for clients).
    """

    def __init__(self, url: str, *, timeout_s: float = 0.25, cooldown_s: float = 5.0, secret: bytes = b"",
                 clock: Callable[[], float] = time.monotonic) -> None:
        try:
            import redis
            from redis.backoff import NoBackoff
            from redis.retry import Retry
        except ImportError as exc:
            raise ConfigError("ELECTA_REDIS_URL needs the redis package: pip install 'redis>=5'") from exc

        self.timeout_s, self.cooldown_s, self.secret, self.clock = timeout_s, cooldown_s, secret, clock
        parts = urlsplit(url)
        # Logs name the server, never the URL's password.
        self.where = f"{parts.hostname}:{parts.port or 6379}{parts.path}" if parts.hostname else parts.path
        # No client-side retries: the breaker decides when to try again, so a failure costs one timeout.
        try:
            self.client: Any = redis.Redis.from_url(url, socket_connect_timeout=timeout_s, socket_timeout=timeout_s,
                                                    retry=Retry(NoBackoff(), 0), health_check_interval=0)
        except ValueError as exc:
            raise ConfigError(f"ELECTA_REDIS_URL is not a Redis URL (redis://host:6379/0): {exc}") from None
        self._errors: tuple[type[BaseException], ...] = (redis.RedisError, OSError)
        self._lock = threading.Lock()
        self._down_since: float | None = None
        self._retry_at = 0.0
        self._reason = ""

    @property
    def status(self) -> str:
        return OK if self._down_since is None else f"unavailable: {self._reason}"

    def digest(self, namespace: str, parts: object) -> str:
        """``namespace`` + the keyed digest of ``parts``: what is stored in Redis instead of caller text."""
        return namespace + hmac.new(self.secret, canonical(parts), hashlib.sha256).hexdigest()

    def _may_call(self) -> bool:
        with self._lock:
            if self._down_since is None:
                return True
            now = self.clock()
            if now < self._retry_at:
                return False
            self._retry_at = now + self.cooldown_s  # this caller probes; the others keep skipping meanwhile
            return True

    def call(self, fn: Callable[[Any], T], default: T) -> T:
        if not self._may_call():
            return default
        try:
            result = fn(self.client)
        except self._errors as exc:
            self._failed(exc)
            return default
        if self._down_since is not None:
            self._recovered()
        return result

    def ping(self) -> str:
        """PING through the breaker (a health check); the status afterwards."""
        self.call(lambda client: client.ping(), None)
        return self.status

    def _failed(self, exc: BaseException) -> None:
        with self._lock:
            first = self._down_since is None
            now = self.clock()
            self._reason = f"{type(exc).__name__}: {exc}"[:200]
            self._retry_at = now + self.cooldown_s
            if first:
                self._down_since = now
        if first:
            log.warning("redis at %s is unavailable (%s): the result cache is skipped and rate limits use this"
                        " process's buckets; retrying every %g s", self.where, self._reason, self.cooldown_s)
        else:
            log.debug("redis at %s still unavailable: %s", self.where, self._reason)

    def _recovered(self) -> None:
        with self._lock:
            since, self._down_since, self._reason = self._down_since, None, ""
        if since is not None:
            log.warning("redis at %s is back after %.1f s", self.where, self.clock() - since)

    def close(self) -> None:
        self.client.close()

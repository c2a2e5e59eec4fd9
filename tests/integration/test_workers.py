"""Many workers on one PostgreSQL + Redis (issue 12, items 3-4): two `electa serve` processes,
and one `electa serve --workers 2`, all real servers started here."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from electa.testing.pg_server import shared_server
from electa.testing.redis_server import RedisServer
from tests.integration.test_server import admin_headers, ask, serve_process

pytestmark = pytest.mark.integration

REFUND_30 = "# Refund policy\nAnnual plans are refunded within 30 days of purchase.\n"
REFUND_45 = "# Refund policy\nAnnual plans are refunded within 45 days of purchase.\n"
QUESTION = "How many days do I have to get a refund on an annual plan?"


@pytest.fixture
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    server = shared_server()
    dsn = server.database("workers")
    redis = RedisServer()
    try:
        yield {"ELECTA_STORE": dsn, "ELECTA_REDIS_URL": redis.url, "redis": redis}  # type: ignore[dict-item]
    finally:
        redis.close()  # stops it and removes its folder (stop() alone left one per test in /tmp)


def ingest_key(url: str) -> dict[str, str]:
    assert httpx.post(f"{url}/v1/orgs", json={"name": "acme"}, headers=admin_headers()).status_code == 201
    key = httpx.post(f"{url}/v1/orgs/acme/keys", json={"scope": "ingest"}, headers=admin_headers()).json()["key"]
    return {"Authorization": f"Bearer {key}"}


def put(url: str, headers: dict[str, str], name: str, content: str) -> None:
    r = httpx.post(f"{url}/v1/sources", json={"name": name, "content": content}, headers=headers, timeout=60)
    assert r.status_code == 201, r.text


def test_a_write_through_one_worker_is_answered_by_another_and_redis_down_still_answers(
        tmp_path_factory: pytest.TempPathFactory, shared: dict[str, object]) -> None:
    env = {k: str(v) for k, v in shared.items() if k.startswith("ELECTA_")}
    with serve_process(tmp_path_factory.mktemp("worker-a"), "--embedder", "hash", **env) as a, \
            serve_process(tmp_path_factory.mktemp("worker-b"), "--embedder", "hash", **env) as b:
        headers = ingest_key(a)
        _, citations, done = ask(b, headers, QUESTION)
        assert citations == [] and done["strict"]  # nothing stored yet
        put(a, headers, "refunds.md", REFUND_30)
        text, citations, done = ask(b, headers, QUESTION)
        assert "30 days" in text and citations and not done["cached"]
        assert ask(b, headers, QUESTION)[2]["cached"]  # the same question again: from the shared cache
        assert ask(a, headers, QUESTION)[2]["cached"]  # on the other worker too (one Redis)
        put(a, headers, "refunds.md", REFUND_45)  # the next identical question must reflect it
        text, _, done = ask(b, headers, QUESTION)
        assert "45 days" in text and "30 days" not in text and not done["cached"]
        shared["redis"].stop()  # type: ignore[attr-defined]
        text, citations, done = ask(b, headers, QUESTION)
        assert "45 days" in text and citations and done.get("cache") == "unavailable"
        health = httpx.get(f"{b}/healthz", timeout=10).json()
        assert health["ok"] is True


def test_serve_with_two_workers_answers_every_request_after_a_write(
        tmp_path_factory: pytest.TempPathFactory, shared: dict[str, object]) -> None:
    """Two worker processes on one port: requests are answered by both (told apart by the
    X-Electa-Worker header), and after a write through either, both answer with it."""
    env = {"ELECTA_STORE": str(shared["ELECTA_STORE"])}  # no Redis: each worker keeps its own cache
    with serve_process(tmp_path_factory.mktemp("workers"), "--embedder", "hash", "--workers", "2", **env) as url:
        headers = ingest_key(url)

        def answers(expected: str) -> set[str]:
            """Ask on fresh connections until both workers have answered (each must say ``expected``)."""
            seen: set[str] = set()
            for _ in range(300):
                r = httpx.post(f"{url}/v1/search", json={"query": QUESTION}, headers=headers, timeout=30)
                assert r.status_code == 200 and expected in r.json()["hits"][0]["text"], r.text
                seen.add(r.headers["X-Electa-Worker"])
                if len(seen) == 2:
                    break
            return seen

        put(url, headers, "refunds.md", REFUND_30)
        assert len(answers("30 days")) == 2  # both workers answered (and cached) the old text
        put(url, headers, "refunds.md", REFUND_45)
        assert len(answers("45 days")) == 2  # neither answers from what it read before the write


def test_workers_share_cached_results_only_when_their_model_files_hold_the_same_bytes(
        tmp_path_factory: pytest.TempPathFactory, shared: dict[str, object]) -> None:
    """A ranker retrained into the file ELECTA_LTR names must not be served from entries the old
    one ranked; a worker holding the same bytes elsewhere (another host's copy) shares them."""
    import json

    from tests.unit.test_ltr import upside_down

    env = {k: str(v) for k, v in shared.items() if k.startswith("ELECTA_")}
    files = tmp_path_factory.mktemp("rankers")
    ranker, copy = files / "ranker.json", files / "elsewhere" / "ranker-copy.json"
    copy.parent.mkdir()
    ranker.write_text(json.dumps(upside_down().to_dict()))
    copy.write_bytes(ranker.read_bytes())
    search = {"query": QUESTION}

    def cached(url: str, headers: dict[str, str]) -> bool:
        r = httpx.post(f"{url}/v1/search", json=search, headers=headers, timeout=30)
        assert r.status_code == 200 and r.json()["hits"], r.text
        return bool(r.json()["cached"])

    with serve_process(tmp_path_factory.mktemp("worker-a"), "--embedder", "hash", ELECTA_LTR=str(ranker), **env) as a:
        headers = ingest_key(a)
        put(a, headers, "refunds.md", REFUND_30)
        assert not cached(a, headers) and cached(a, headers)
    with serve_process(tmp_path_factory.mktemp("worker-b"), "--embedder", "hash", ELECTA_LTR=str(copy), **env) as b:
        assert cached(b, headers)
    ranker.write_text(json.dumps(upside_down(trained_on="the questions since").to_dict()))  # trained again, same path
    with serve_process(tmp_path_factory.mktemp("worker-c"), "--embedder", "hash", ELECTA_LTR=str(ranker), **env) as c:
        assert not cached(c, headers) and cached(c, headers)

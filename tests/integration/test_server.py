"""`electa serve` as a real process on loopback, called over HTTP (SPEC H1, H2, H3, G3, G6, G7)."""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.integration.conftest import electa_cmd

pytestmark = pytest.mark.integration

ADMIN = "test-admin-token"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serve_process(data: Path, *args: str, **env_extra: str) -> Iterator[str]:
    """`electa serve` on ``data`` and a free loopback port, with ``args`` and ``env_extra``; yields its URL."""
    port = free_port()
    env = {**os.environ, "ELECTA_ADMIN_TOKEN": ADMIN, "PYTHONUNBUFFERED": "1", **env_extra}
    proc = subprocess.Popen([*electa_cmd(), "serve", "--data", str(data), "--port", str(port), *args], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.2)
    else:
        proc.kill()
        proc.wait()
        raise RuntimeError(f"server did not start: {proc.stderr.read().decode() if proc.stderr else ''}")
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        if proc.stderr is not None:
            proc.stderr.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serve_process(tmp_path_factory.mktemp("server-data")) as url:
        yield url


def admin_headers() -> dict[str, str]:
    return {"Authorization": f"Bearer {ADMIN}"}


@pytest.fixture(scope="module")
def keys(server: str) -> dict[str, dict[str, str]]:
    out = {}
    for org in ("acme", "globex"):
        assert httpx.post(f"{server}/v1/orgs", json={"name": org}, headers=admin_headers()).status_code == 201
        # the tests below upload, delete and assert principals: the organisation's backend (ingest)
        key = httpx.post(f"{server}/v1/orgs/{org}/keys", json={"scope": "ingest"}, headers=admin_headers()).json()["key"]
        out[org] = {"Authorization": f"Bearer {key}"}
    pages = {
        "acme": [("refunds.md", "# Refund policy\nAnnual plans are refunded within 30 days of purchase.\n"),
                 ("pricing.md", "# Pricing\nThe Free plan costs $0/mo. Growth costs $29/mo per seat.\n")],
        "globex": [("secret.md", "# Globex roadmap\nRefunds for annual plans end in 2027. Project Falcon ships in May.\n")],
    }
    for org, files in pages.items():
        for name, text in files:
            r = httpx.post(f"{server}/v1/sources", json={"name": name, "content": text}, headers=out[org], timeout=60)
            assert r.status_code == 201, r.text
    internal = "# Escalations\nSupport agents page the on-call engineer for Sev 1 outages.\n"
    r = httpx.post(f"{server}/v1/sources", json={"name": "internal.md", "content": internal, "public": False,
                                                 "principals": ["team:support"]}, headers=out["acme"], timeout=60)
    assert r.status_code == 201
    return out


def ask(server: str, headers: dict[str, str], question: str, **extra: object) -> tuple[str, list[dict], dict]:
    tokens, citations, done = [], [], {}
    with httpx.stream("POST", f"{server}/v1/ask", json={"question": question, **extra}, headers=headers,
                      timeout=60) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        event = None
        for line in r.iter_lines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                data = json.loads(line[6:])
                assert event != "error", data
                if event == "token":
                    tokens.append(data["token"])
                elif event == "citations":
                    citations = data["citations"]
                elif event == "done":
                    done = data
    return "".join(tokens), citations, done


def test_keys_are_required_and_checked(server: str, keys: dict[str, dict[str, str]]) -> None:
    assert httpx.post(f"{server}/v1/search", json={"query": "refund"}).status_code == 401
    bad = {"Authorization": "Bearer el_nope"}
    assert httpx.post(f"{server}/v1/search", json={"query": "refund"}, headers=bad).status_code == 401
    assert httpx.post(f"{server}/v1/orgs", json={"name": "x"}, headers=keys["acme"]).status_code == 403
    assert "/v1/ask" in httpx.get(f"{server}/openapi.json").json()["paths"]


def test_an_organisation_never_sees_another(server: str, keys: dict[str, dict[str, str]]) -> None:
    for question in ("refund annual plans", "Project Falcon roadmap 2027"):
        hits = httpx.post(f"{server}/v1/search", json={"query": question, "top": 50}, headers=keys["acme"]).json()["hits"]
        assert all("Globex" not in h["title"] and "2027" not in h["text"] for h in hits)
        probe = httpx.post(f"{server}/v1/probe", json={"query": question, "top": 50}, headers=keys["acme"]).json()
        assert all("Falcon" not in h["text"] for h in probe["hits"])
    text, citations, _ = ask(server, keys["acme"], "When do refunds for annual plans end?")
    assert "2027" not in text and all("secret" not in c["url"] for c in citations)
    sources = httpx.get(f"{server}/v1/sources", headers=keys["globex"]).json()
    assert [s["uri"] for s in sources] == ["secret.md"]
    gone = httpx.request("DELETE", f"{server}/v1/sources", params={"uri": "refunds.md"}, headers=keys["globex"])
    assert gone.status_code == 404


def test_team_only_source_needs_the_principal(server: str, keys: dict[str, dict[str, str]]) -> None:
    q = {"query": "who pages the on-call engineer for Sev 1", "top": 20}
    visitor = httpx.post(f"{server}/v1/search", json=q, headers=keys["acme"]).json()["hits"]
    member = httpx.post(f"{server}/v1/search", json={**q, "principals": ["team:support"]}, headers=keys["acme"]).json()
    assert not any("Escalations" in h["title"] for h in visitor)
    assert member["hits"][0]["title"].startswith("Escalations")


def test_ask_streams_cited_answer_with_prices_intact(server: str, keys: dict[str, dict[str, str]]) -> None:
    text, citations, done = ask(server, keys["acme"], "How much is the free plan?")
    assert "$0/mo" in text and citations[0]["title"] == "Pricing"
    assert done["confidence"] >= 0.4 and {leg["leg"] for leg in done["legs"]} == {"fulltext", "dense", "qa"}
    hi, _, hi_done = ask(server, keys["acme"], "Goedemorgen")
    assert hi.startswith("Hello") and hi_done["legs"] == [] and hi_done["low_confidence"] is False


def test_unanswerable_gets_strict_reply_and_lands_in_gaps(server: str, keys: dict[str, dict[str, str]]) -> None:
    text, citations, done = ask(server, keys["acme"], "Do you sell zebra saddles?")
    assert done["strict"] and not citations and "don't have information" in text
    gaps = httpx.get(f"{server}/v1/gaps", headers=keys["acme"]).json()
    assert any(g["question"] == "Do you sell zebra saddles?" for g in gaps)
    assert httpx.get(f"{server}/v1/gaps", headers=keys["globex"]).json() == []
    usage = httpx.get(f"{server}/v1/usage", headers=keys["acme"]).json()["usage"]
    assert sum(u["questions"] for u in usage) >= 1


def test_cache_serves_repeats_and_never_stale_answers(server: str, keys: dict[str, dict[str, str]]) -> None:
    question = "What does the Enterprise plan cost?"
    _, _, first = ask(server, keys["acme"], question)
    _, _, second = ask(server, keys["acme"], question)
    assert first["cached"] is False and second["cached"] is True
    page = "# Enterprise\nThe Enterprise plan costs $99/mo per seat with SSO.\n"
    assert httpx.post(f"{server}/v1/sources", json={"name": "enterprise.md", "content": page},
                      headers=keys["acme"], timeout=60).status_code == 201
    text, _, third = ask(server, keys["acme"], question)
    assert third["cached"] is False and "$99/mo" in text
    httpx.request("DELETE", f"{server}/v1/sources", params={"uri": "enterprise.md"}, headers=keys["acme"])
    text, _, fourth = ask(server, keys["acme"], question)
    assert fourth["cached"] is False and "$99/mo" not in text


def test_bad_requests_say_what_is_wrong(server: str, keys: dict[str, dict[str, str]]) -> None:
    r = httpx.post(f"{server}/v1/sources", json={"name": "x.md", "content": "@@@", "base64": True}, headers=keys["acme"])
    assert r.status_code == 422 and "base64" in r.text
    r = httpx.post(f"{server}/v1/sources", json={"name": "movie.mp4", "content": "x"}, headers=keys["acme"])
    assert r.status_code == 422 and "unsupported file type" in r.text
    r = httpx.post(f"{server}/v1/sources", json={"name": "e.md", "content": ""}, headers=keys["acme"])
    assert r.status_code == 422 and "empty" in r.text
    pdf = base64.b64encode(b"%PDF-1.4 broken").decode()
    r = httpx.post(f"{server}/v1/sources", json={"name": "b.pdf", "content": pdf, "base64": True}, headers=keys["acme"])
    assert r.status_code == 422 and "PDF" in r.text
    r = httpx.post(f"{server}/v1/search", content=b"{not json", headers={**keys["acme"], "Content-Type": "application/json"})
    assert r.status_code == 422
    assert httpx.post(f"{server}/v1/search", json={"query": "refund"}, headers=keys["acme"]).status_code == 200


def test_twenty_concurrent_askers_all_complete(server: str, keys: dict[str, dict[str, str]]) -> None:
    questions = [f"refund annual plans question {i}" for i in range(20)]
    with ThreadPoolExecutor(max_workers=20) as pool:
        results = list(pool.map(lambda q: ask(server, keys["acme"], q), questions))
    assert len(results) == 20 and all(done.get("confidence") is not None for _, _, done in results)
    assert all("30 days" in text for text, _, _ in results)


def test_follow_up_uses_the_stored_conversation(server: str, keys: dict[str, dict[str, str]]) -> None:
    _, _, first = ask(server, keys["acme"], "How much is the Growth plan?", conversation_id="c-42")
    assert first["search_query"] == "How much is the Growth plan?"
    text, _, done = ask(server, keys["acme"], "and for the free plan?", conversation_id="c-42")
    assert done["search_query"].startswith("How much is the Growth plan?") and "free plan" in done["search_query"]
    assert "$0/mo" in text
    _, _, other = ask(server, keys["acme"], "and for the free plan?", conversation_id="c-other")
    assert other["search_query"] == "and for the free plan?"


def test_agent_settings_shape_the_answer(server: str, keys: dict[str, dict[str, str]]) -> None:
    r = httpx.put(f"{server}/v1/agents/strict", json={"threshold": 0.99, "name": "Acme Assistant"}, headers=keys["acme"])
    assert r.status_code == 200 and r.json()["retrieval"]["threshold"] == 0.99
    page = "# Pricing\nThe Free plan costs $0/mo.\n"
    httpx.post(f"{server}/v1/sources", json={"name": "p.md", "content": page, "agent": "strict"}, headers=keys["acme"],
               timeout=60)
    _, _, done = ask(server, keys["acme"], "How much is the free plan?", agent="strict")
    assert done["strict"] is True
    assert httpx.get(f"{server}/v1/agents/strict", headers=keys["globex"]).json() == {}

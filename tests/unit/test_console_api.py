"""What the admin console (issue 13) needs of the API beyond the routes it shares: an answer
written for a content gap (a curated answer and a Q&A pair, as one source), gaps that say
whether they are answered, the agent's feedback listed, and the agent measured on its golden
set. In-process (Starlette's TestClient) on the hash embedder."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from electa import Access, Engine
from electa.testing.sse import sse_events
from tests.conftest import refund_and_pricing

GAP = "Do you sell zebra saddles?"


def _client(engine: Engine) -> tuple[TestClient, dict[str, str], dict[str, str]]:
    from electa.api.app import create_app

    engine.ingest_loaded("a", refund_and_pricing(), Access("acme"))
    engine.store.add_organisation("acme")
    ingest = engine.store.add_api_key("acme", "ingest")[0]
    search = engine.store.add_api_key("acme", "search")[0]
    client = TestClient(create_app(engine, "admin-token"), raise_server_exceptions=False)
    return client, {"Authorization": f"Bearer {ingest}"}, {"Authorization": f"Bearer {search}"}


def _done(client: TestClient, headers: dict[str, str], question: str) -> dict:
    r = client.post("/v1/ask", json={"question": question}, headers=headers)
    assert r.status_code == 200, r.text
    return next(d for k, d in sse_events(r.text.splitlines()) if k == "done")


def test_an_answer_written_for_a_gap_answers_it_until_its_source_is_deleted(engine: Engine) -> None:
    client, ingest, search = _client(engine)
    assert _done(client, search, GAP)["strict"] is True
    assert [(g["question"], g["answered"]) for g in client.get("/v1/gaps", headers=ingest).json()] == [(GAP, False)]
    r = client.post("/v1/curated", json={"question": "  Do you sell   zebra saddles? ", "answer": "No, only horse saddles.",
                                         "url": "https://a/saddles", "triggers": ["zebra saddle"]}, headers=ingest)
    assert r.status_code == 201, r.text
    made = r.json()
    assert made["uri"].startswith("curated/") and made["triggers"] == [GAP, "zebra saddle"]
    assert client.get("/v1/gaps", headers=ingest).json()[0]["answered"] is True
    done = _done(client, search, "Hi there, do you sell zebra saddles? I need two")
    assert done["curated"] == "do you sell zebra saddles"  # (the trigger as matched: folded words)
    # The Q&A pair: found by the Q&A leg for a question the triggers do not hold.
    hits = client.post("/v1/search", json={"query": "zebra saddles for sale"}, headers=search).json()["hits"]
    assert any(v["leg"] == "qa" for v in hits[0]["votes"]) and hits[0]["url"] == "https://a/saddles"
    # The same question again replaces it (one source), and deleting that source removes both.
    again = client.post("/v1/curated", json={"question": "do you sell zebra saddles?", "answer": "Yes, since May."},
                        headers=ingest).json()
    assert again["uri"] == made["uri"]
    assert _done(client, search, GAP)["curated"]  # (its one trigger the Q&A pair's question: both kept)
    assert [s["uri"] for s in client.get("/v1/sources", headers=ingest).json()].count(made["uri"]) == 1
    gone = client.request("DELETE", "/v1/sources", params={"uri": made["uri"]}, headers=ingest)
    assert gone.status_code == 200 and gone.json()["removed_units"] > 0
    assert _done(client, search, GAP).get("curated") is None
    assert client.get("/v1/gaps", headers=ingest).json()[0]["answered"] is False


@pytest.mark.parametrize("url", ["javascript:alert(1)", "ftp://a/b", "https://a b"])
def test_a_written_answer_links_only_to_a_web_page(engine: Engine, url: str) -> None:
    client, ingest, _ = _client(engine)
    r = client.post("/v1/curated", json={"question": GAP, "answer": "No.", "url": url}, headers=ingest)
    assert r.status_code == 422 and "http(s)" in r.text


def test_the_console_routes_need_the_organisations_backend(engine: Engine) -> None:
    client, _, search = _client(engine)
    for method, path, body in (("POST", "/v1/curated", {"question": GAP, "answer": "No."}), ("GET", "/v1/feedback", None),
                               ("POST", "/v1/eval", {}), ("GET", "/v1/gaps", None)):
        r = client.request(method, path, json=body, headers=search)
        assert r.status_code == 403, (path, r.text)  # a search key is public: it reads and writes none of these


def test_feedback_is_listed_with_each_voters_net_vote(engine: Engine) -> None:
    client, ingest, search = _client(engine)
    for positive, headers in ((True, ingest), (True, ingest), (False, search)):
        assert client.post("/v1/feedback", json={"query": "refund", "url": "https://a/refunds", "positive": positive},
                           headers=headers).status_code == 201
    assert client.get("/v1/feedback", headers=ingest).json() == [{"query": "refund", "url": "https://a/refunds", "net": 1}]
    with_visitors = client.get("/v1/feedback", params={"visitors": "true"}, headers=ingest).json()
    assert with_visitors == [{"query": "refund", "url": "https://a/refunds", "net": 0}]


def test_the_agent_is_measured_on_its_golden_set(engine: Engine) -> None:
    client, ingest, _ = _client(engine)
    r = client.post("/v1/eval", json={}, headers=ingest)
    assert r.status_code == 422 and "no golden set" in r.text
    client.post("/v1/feedback", json={"query": "When are annual plans refunded?", "url": "https://a/refunds"}, headers=ingest)
    client.post("/v1/feedback", json={"query": "What does Growth cost?", "url": "https://a/pricing"}, headers=ingest)
    report = client.post("/v1/eval", json={"agent": "default"}, headers=ingest).json()
    assert report["queries"] == 2 and {"fulltext", "dense", "fused", "scored"} <= set(report["metrics"])
    assert 0 < report["metrics"]["scored"]["ndcg@10"] <= 1
    assert report["recall_curve"]["scored"] and "search" in report["latency_ms"]

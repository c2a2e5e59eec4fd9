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


def _answer(client: TestClient, headers: dict[str, str], question: str) -> tuple[str, dict]:
    r = client.post("/v1/ask", json={"question": question}, headers=headers)
    assert r.status_code == 200, r.text
    events = sse_events(r.text.splitlines())
    return "".join(d["token"] for k, d in events if k == "token"), next(d for k, d in events if k == "done")


def _done(client: TestClient, headers: dict[str, str], question: str) -> dict:
    return _answer(client, headers, question)[1]


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
    again = client.post("/v1/curated", json={"question": "do you sell zebra-saddles", "answer": "Yes, since May."},
                        headers=ingest).json()
    assert again["uri"] == made["uri"]  # (the same words, whatever their case and punctuation)
    text, done = _answer(client, search, GAP)
    assert done["curated"] and text == "Yes, since May."  # (its one trigger the Q&A pair's question: both kept)
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


def test_a_short_question_gets_a_qa_pair_but_never_takes_over_longer_ones(engine: Engine) -> None:
    client, ingest, search = _client(engine)
    made = client.post("/v1/curated", json={"question": "my account", "answer": "Accounts are free."}, headers=ingest)
    assert made.status_code == 201 and made.json()["triggers"] == []
    assert _done(client, search, "How do I delete my account and all my data?").get("curated") is None
    # Phrasings the admin names are taken as meant, wherever they appear.
    client.post("/v1/curated", json={"question": "Where is the zebra shop?", "answer": "In Leeds.",
                                     "triggers": ["zebra shop"]}, headers=ingest)
    assert client.post("/v1/curated", json={"question": "q", "answer": "a", "triggers": [" "]},
                       headers=ingest).status_code == 422
    assert _done(client, search, "is the zebra shop open?")["curated"] == "zebra shop"


def test_nothing_written_for_one_organisation_reaches_another(engine: Engine) -> None:
    client, ingest, search = _client(engine)
    engine.store.add_organisation("globex")
    other = {"Authorization": f"Bearer {engine.store.add_api_key('globex', 'ingest')[0]}"}
    other_search = {"Authorization": f"Bearer {engine.store.add_api_key('globex', 'search')[0]}"}
    _done(client, search, GAP)  # acme's gap
    client.post("/v1/feedback", json={"query": "refund", "url": "https://a/refunds"}, headers=ingest)
    client.post("/v1/curated", json={"question": GAP, "answer": "No.", "url": "https://a/saddles"}, headers=ingest)
    assert client.get("/v1/gaps", headers=other).json() == []
    assert client.get("/v1/feedback", headers=other).json() == []
    assert _done(client, other_search, GAP).get("curated") is None
    assert "no golden set" in client.post("/v1/eval", json={}, headers=other).text
    assert all(not s["uri"].startswith("curated/") for s in client.get("/v1/sources", headers=other).json())


def test_an_answer_written_for_a_gap_does_not_score_itself(engine: Engine) -> None:
    """Its question finds its own Q&A pair, which carries the URL the golden set counts
    relevant: measured with it, answers pointing nowhere scored nDCG 1.0."""
    client, ingest, _ = _client(engine)
    for i, question in enumerate(("Can I pay in Icelandic kronur?", "Do you sell zebra saddles?", "Is there a Linux app?")):
        client.post("/v1/curated", json={"question": question, "answer": "No.", "url": f"https://nowhere.test/{i}"},
                    headers=ingest)
    report = client.post("/v1/eval", json={}, headers=ingest).json()
    assert report["queries"] == 3 and report["metrics"]["scored"]["ndcg@10"] == 0.0, report["metrics"]


def test_the_golden_set_is_measured_on_the_qa_leg_it_is_served_its_own_pair_left_out(engine: Engine) -> None:
    """Found in the last note: the evaluation read full text and dense alone, though the agent's
    searches run the Q&A leg too, where another curated pair answering the same page counts."""
    client, ingest, _ = _client(engine)
    for question, url in (("Zebra saddle refund for annual plans?", "https://kb.test/z"),
                          ("Refund a zebra saddle on an annual plan?", "https://kb.test/z"),
                          ("Zebra saddle refund for monthly plans?", "https://kb.test/m")):
        client.post("/v1/curated", json={"question": question, "answer": "Within 30 days.", "url": url}, headers=ingest)
    report = client.post("/v1/eval", json={}, headers=ingest).json()
    assert report["queries"] == 3
    # The first two find each other's pair, which points to their page; the third's own pair alone
    # points to its page, and it is left out (with it, the Q&A leg would read 1.0).
    assert report["metrics"]["qa"]["ndcg@10"] == pytest.approx(2 / 3, abs=1e-4), report["metrics"]


def test_one_evaluation_at_a_time_per_organisation(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    client, ingest, _ = _client(engine)
    client.post("/v1/feedback", json={"query": "When are annual plans refunded?", "url": "https://a/refunds"}, headers=ingest)
    started, release = threading.Event(), threading.Event()
    real = __import__("electa.eval.runner", fromlist=["evaluate"]).evaluate

    def slow(*args: object, **kwargs: object) -> object:
        started.set()
        release.wait(10)
        return real(*args, **kwargs)

    monkeypatch.setattr("electa.eval.runner.evaluate", slow)
    first: list[int] = []
    worker = threading.Thread(target=lambda: first.append(client.post("/v1/eval", json={}, headers=ingest).status_code))
    worker.start()
    assert started.wait(10)
    second = client.post("/v1/eval", json={}, headers=ingest)
    release.set()
    worker.join(20)
    assert second.status_code == 409 and "already running" in second.text and first == [200]
    assert client.post("/v1/eval", json={}, headers=ingest).status_code == 200  # (and free again after)

"""The HTTP API's answers can be trusted (issue 8): cached asks keep their books, a failed LLM is
withdrawn by a ``reset``, caches follow agent settings, weights name real legs, and no exception
text reaches a client. In-process (Starlette's TestClient) on the hash embedder."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from electa import Access, Engine
from electa.answer.answerers import ExtractiveAnswerer
from electa.answer.prompt import Prompt
from electa.testing.fakes import ScriptedAnswerer
from electa.testing.sse import sse_events
from tests.conftest import refund_and_pricing


def _flaky() -> ScriptedAnswerer:
    return ScriptedAnswerer(["No, we never refund ", "[1]. "],
                            ConnectionError("upstream 10.0.0.7 said: invalid api key sk-live-123"))


def _client(engine: Engine, monkeypatch: pytest.MonkeyPatch, answerer: object | None = None) -> tuple[TestClient, dict]:
    if answerer is not None:
        monkeypatch.setattr("electa.api.app.create_answerer", lambda name, settings: answerer)
        monkeypatch.setattr(engine.settings, "answerer", "flaky")
    from electa.api.app import create_app

    engine.ingest_loaded("a", refund_and_pricing(), Access("acme"))
    engine.store.add_organisation("acme")
    # An `admin`-scope key (admin ⊃ ingest ⊃ search) may call every route used here.
    key = engine.store.add_api_key("acme", "admin")[0]
    client = TestClient(create_app(engine, "admin-token"), raise_server_exceptions=False)
    return client, {"Authorization": f"Bearer {key}"}


def _ask(client: TestClient, headers: dict, question: str, **extra: object) -> list[tuple[str, dict]]:
    r = client.post("/v1/ask", json={"question": question, **extra}, headers=headers)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream"), r.text
    return sse_events(r.text.splitlines())


def _done(events: list[tuple[str, dict]]) -> dict:
    return next(d for k, d in events if k == "done")


def test_a_cached_ask_keeps_its_books(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    client, headers = _client(engine, monkeypatch)
    first = _ask(client, headers, "How much is the Growth plan?", conversation_id="c1")
    again = _ask(client, headers, "How much is the Growth plan?", conversation_id="c2")
    assert _done(first)["cached"] is False and _done(again)["cached"] is True
    assert engine.store.recent_turns("acme", "default", "c2") == engine.store.recent_turns("acme", "default", "c1")
    # The second conversation started from the cache, and its follow-up is still rewritten.
    follow = _done(_ask(client, headers, "and for the free plan?", conversation_id="c2"))
    assert follow["search_query"].startswith("How much is the Growth plan?")
    for _ in range(2):
        _ask(client, headers, "Do you sell zebra saddles?")
    assert [g["question"] for g in engine.store.gaps("acme")] == ["Do you sell zebra saddles?"] * 2
    assert sum(int(u["questions"]) for u in engine.store.usage("acme")) == 5  # type: ignore[call-overload]


def test_a_failed_llm_is_withdrawn_by_reset_and_its_error_stays_in_the_log(
        engine: Engine, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    client, headers = _client(engine, monkeypatch, _flaky())
    events = _ask(client, headers, "refund annual plans days", conversation_id="c9")
    kinds = [k for k, _ in events]
    assert kinds[:3] == ["token", "token", "reset"] and kinds[-2:] == ["citations", "done"]
    assert "10.0.0.7" not in json.dumps(events) and "sk-live" not in json.dumps(events)
    done = _done(events)
    assert done["fallback"] == "the answerer failed; answered extractively" and done["incident"] in caplog.text
    [(_, answer)] = engine.store.recent_turns("acme", "default", "c9")
    assert "never refund" not in answer and "30 days" in answer
    # A fallback answer is not cached for the next visitor.
    assert _done(_ask(client, headers, "refund annual plans days"))["cached"] is False


def test_a_broken_stream_ends_with_a_fixed_error_and_an_incident(
        engine: Engine, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    client, headers = _client(engine, monkeypatch, _flaky())

    def broken(self: ExtractiveAnswerer, prompt: Prompt, question: str) -> str:
        raise OSError("/srv/electa/secret.db is locked")

    monkeypatch.setattr(ExtractiveAnswerer, "compose", broken)
    events = _ask(client, headers, "refund annual plans days")
    kind, data = events[-1]
    assert kind == "error" and data["error"] == "the answer could not be completed"
    assert "secret" not in json.dumps(events) and data["incident"] in caplog.text and "secret.db" in caplog.text


def test_an_unexpected_error_is_a_500_with_an_incident_not_a_trace(
        engine: Engine, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    client, headers = _client(engine, monkeypatch)

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("/srv/electa/secret.db is locked")

    monkeypatch.setattr(engine, "search", broken)
    r = client.post("/v1/search", json={"query": "refund"}, headers=headers)
    assert r.status_code == 500 and "secret" not in r.text and r.json()["incident"] in caplog.text


def test_search_cache_follows_the_agents_settings(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    client, headers = _client(engine, monkeypatch)
    body = {"query": "refund annual plans", "agent": "default"}
    assert client.post("/v1/search", json=body, headers=headers).json()["cached"] is False
    assert client.post("/v1/search", json=body, headers=headers).json()["cached"] is True
    r = client.put("/v1/agents/default", json={"weights": {"dense": 0.0}}, headers=headers)
    assert r.status_code == 200 and r.json()["retrieval"]["weights"] == {"dense": 0.0}
    assert client.post("/v1/search", json=body, headers=headers).json()["cached"] is False
    # `electa tune --agent` writes through the store: the same holds.
    engine.store.set_agent_settings("acme", "default", {"fusion": {"weights": {"qa": 0.5}}})
    assert client.post("/v1/search", json=body, headers=headers).json()["cached"] is False


# (each patched where it is read when a search is ordered or an answer's passages cut: the served
# order's module, the passages', the engine's search path, the modes', the learned ranker's; the
# key must follow the value served)
@pytest.mark.parametrize("upgrade", [("electa.judges.ltr.ORDER", "c4-next"), ("electa.answer.passages.ANSWER_WINDOW", 30),
                                     ("electa.engine_search.LIFT", 0.5), ("electa.served_order.GAP_WEIGHT", 0.7),
                                     ("electa.served_order.GAP_MARGIN", 0.2), ("electa.served_order.PAGE_BOOST", 0.2),
                                     ("electa.modes.protocol.MERGE_LIFT", 0.2), ("electa.modes.multimodal.FIGURE_LIFT", 0.2),
                                     ("electa.modes.multimodal.SHOWN_LIFT", 2.0), ("electa.modes.protocol.MERGE_K", 30.0),
                                     ("electa.modes.protocol.MERGE_DEPTH", 40), ("electa.modes.graph.ENTITY_WEIGHT", 0.7),
                                     ("electa.modes.corrective.GRADED", 8), ("electa.modes.corrective.KEEP", 5.0),
                                     ("electa.served_order.RANK_RULES", 99), ("electa.engine_search.AGREEMENT_K", 5.0)])
def test_a_cache_that_outlives_an_upgrade_never_replays_the_old_order_or_window(
        engine: Engine, monkeypatch: pytest.MonkeyPatch, upgrade: tuple[str, object]) -> None:
    # A shared cache (Redis) keeps its entries across a restart on new code: an entry made with
    # another served order (C4 lift) or answer window must not be served by the code after it.
    client, headers = _client(engine, monkeypatch)
    search = {"query": "refund annual plans"}
    assert client.post("/v1/search", json=search, headers=headers).json()["cached"] is False
    assert _done(_ask(client, headers, "Are annual plans refunded?"))["cached"] is False
    assert client.post("/v1/search", json=search, headers=headers).json()["cached"] is True
    assert _done(_ask(client, headers, "Are annual plans refunded?"))["cached"] is True
    monkeypatch.setattr(*upgrade)
    assert client.post("/v1/search", json=search, headers=headers).json()["cached"] is False
    assert _done(_ask(client, headers, "Are annual plans refunded?"))["cached"] is False


@pytest.mark.parametrize(("setting", "value"), [("floor", 0.55), ("weights", {"fulltext": 1.0, "dense": 2.0, "qa": 1.0}),
                                              ("depths", {"fulltext": 20, "dense": 20, "qa": 8}), ("top_passages", 3),
                                              ("rerank_blend", 0.5)])
def test_a_shared_cache_never_replays_what_other_engine_settings_made(
        engine: Engine, monkeypatch: pytest.MonkeyPatch, setting: str, value: object) -> None:
    # Workers restarted with another ELECTA_FLOOR (or started with other settings beside the old
    # ones) share a Redis cache: an entry cut or weighed by the settings before must not be served.
    client, headers = _client(engine, monkeypatch)
    search = {"query": "refund annual plans"}
    assert client.post("/v1/search", json=search, headers=headers).json()["cached"] is False
    assert _done(_ask(client, headers, "Are annual plans refunded?"))["cached"] is False
    assert client.post("/v1/search", json=search, headers=headers).json()["cached"] is True
    monkeypatch.setattr(engine.settings, setting, value)
    assert client.post("/v1/search", json=search, headers=headers).json()["cached"] is False
    assert _done(_ask(client, headers, "Are annual plans refunded?"))["cached"] is False


def test_a_search_or_answer_missing_a_leg_is_not_cached_for_the_next_request(
        engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    # A worker whose dense leg failed (its model missing, a bad moment) must not fill a cache that
    # healthy workers share with its full-text-only results.
    client, headers = _client(engine, monkeypatch)
    dense = engine.legs["dense"]

    def broken(*args: object) -> list[tuple[int, float]]:
        raise RuntimeError("model file missing")

    monkeypatch.setattr(dense, "search", broken)
    search = {"query": "refund annual plans"}
    for _ in range(2):
        r = client.post("/v1/search", json=search, headers=headers).json()
        assert r["cached"] is False and {leg["leg"]: leg["status"] for leg in r["legs"]}["dense"] == "error"
        assert _done(_ask(client, headers, "Are annual plans refunded?"))["cached"] is False
    monkeypatch.undo()
    assert client.post("/v1/search", json=search, headers=headers).json()["cached"] is False
    assert client.post("/v1/search", json=search, headers=headers).json()["cached"] is True


def test_a_worker_with_a_leg_out_caches_apart_from_whole_workers(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    # A leg out on a worker (its model missing, on one worker or on all) is a fact of that worker,
    # not a bad moment: its results are cached, under a key of their own, never read by a whole one.
    client, headers = _client(engine, monkeypatch)
    search = {"query": "refund annual plans"}
    monkeypatch.setattr(engine.legs["dense"], "available", lambda: False)
    first = client.post("/v1/search", json=search, headers=headers).json()
    assert first["cached"] is False and {leg["leg"]: leg["status"] for leg in first["legs"]}["dense"] == "unavailable"
    assert client.post("/v1/search", json=search, headers=headers).json()["cached"] is True
    assert _done(_ask(client, headers, "Are annual plans refunded?"))["cached"] is False
    assert _done(_ask(client, headers, "Are annual plans refunded?"))["cached"] is True
    monkeypatch.undo()
    assert client.post("/v1/search", json=search, headers=headers).json()["cached"] is False
    assert _done(_ask(client, headers, "Are annual plans refunded?"))["cached"] is False


def test_settings_outside_the_digest_are_real_settings() -> None:
    # A misspelt or renamed name would quietly put a setting that shapes results out of the keys' reach.
    from electa.config import NOT_IN_RESULTS, Settings

    assert NOT_IN_RESULTS.issubset(Settings.model_fields)


def test_settings_that_shape_no_result_keep_the_cache(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    client, headers = _client(engine, monkeypatch)
    search = {"query": "refund annual plans"}
    assert client.post("/v1/search", json=search, headers=headers).json()["cached"] is False
    for setting, value in (("rate_per_minute_key", 5000.0), ("admin_token", "another"), ("cache_ttl_s", 60.0)):
        monkeypatch.setattr(engine.settings, setting, value)
    assert client.post("/v1/search", json=search, headers=headers).json()["cached"] is True


@pytest.mark.parametrize(("weights", "needle"), [
    ({"bm25": 1.0}, "unknown leg 'bm25'; valid legs: fulltext, dense, qa"),
    ({"dense": -1.0}, "greater than or equal to 0"),
])
def test_weights_name_real_legs_and_are_not_negative(engine: Engine, monkeypatch: pytest.MonkeyPatch,
                                                      weights: dict[str, float], needle: str) -> None:
    client, headers = _client(engine, monkeypatch)
    for path, body in (("/v1/search", {"query": "refund", "weights": weights}), ("/v1/agents/default", {"weights": weights})):
        r = client.request("PUT" if "agents" in path else "POST", path, json=body, headers=headers)
        assert r.status_code == 422 and needle in r.text, r.text
    r = client.post("/v1/search", content=b'{"query": "refund", "weights": {"dense": NaN}}',
                    headers={**headers, "Content-Type": "application/json"})
    assert r.status_code == 422


def test_the_schema_tells_the_truth(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    client, headers = _client(engine, monkeypatch)
    schema = client.get("/openapi.json").json()
    weights = schema["components"]["schemas"]["LegWeights"]
    # Every leg Electa has; the learned-sparse one is switched off in these tests' settings.
    assert set(weights["properties"]) == {*engine.all_legs, "sparse"} and weights["additionalProperties"] is False
    assert all(p["anyOf"][0]["minimum"] == 0 for p in weights["properties"].values())
    for name in ("SearchIn", "AskIn", "AgentIn", "SourceIn", "FeedbackIn"):
        assert schema["components"]["schemas"][name]["additionalProperties"] is False
    ask = schema["paths"]["/v1/ask"]["post"]
    assert "text/event-stream" in ask["responses"]["200"]["content"] and "`reset`" in ask["description"]
    assert {"401", "403", "422", "429"} <= set(ask["responses"])
    assert "413" in schema["paths"]["/v1/sources"]["post"]["responses"]
    assert "404" in schema["paths"]["/v1/sources"]["delete"]["responses"]
    r = client.post("/v1/ask", json={"question": "refund", "colour": "blue"}, headers=headers)
    assert r.status_code == 422 and "colour" in r.text


def test_a_deeply_nested_json_upload_is_a_422_naming_the_problem(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    client, headers = _client(engine, monkeypatch)
    deep = "[" * 5000 + "]" * 5000
    r = client.post("/v1/sources", json={"name": "deep.json", "content": deep}, headers=headers)
    assert r.status_code == 422 and "nested too deeply" in r.json()["detail"]


@pytest.mark.embedded
def test_a_failing_or_missing_leg_tells_a_browser_key_nothing_of_the_server(engine: Engine,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by review: a leg's exception text (with the server's paths) reached search keys."""
    client, _ = _client(engine, monkeypatch)
    search_key = engine.store.add_api_key("acme", "search")[0]
    assert engine.index is not None
    secret_path = str(engine.index.path)

    def broken(*args: object) -> list[tuple[int, float]]:
        raise OSError(f"[Errno 5] Input/output error: '{secret_path}'")

    monkeypatch.setattr(engine.legs["dense"], "search", broken)
    r = client.post("/v1/search", json={"query": "refund"}, headers={"Authorization": f"Bearer {search_key}"})
    assert r.status_code == 200 and secret_path not in r.text and "Errno" not in r.text
    dense = next(leg for leg in r.json()["legs"] if leg["leg"] == "dense")
    assert dense["status"] == "error" and "incident" in dense["detail"]
    monkeypatch.setattr(engine.legs["dense"], "available", lambda: False)
    monkeypatch.setattr(type(engine.legs["dense"]), "why", property(lambda self: f"{secret_path} is missing"))
    r = client.post("/v1/search", json={"query": "refunds"}, headers={"Authorization": f"Bearer {search_key}"})
    assert secret_path not in r.text


def test_a_restructuredtext_upload_is_read_and_what_it_hides_is_not(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the HTTP API as through a folder: the page is read, its raw block is not, and
    what docutils would render hidden never reaches a search."""
    client, headers = _client(engine, monkeypatch)
    page = ("Refunds\n=======\n\nRefunds take 30 days.\n\n.. raw:: html\n\n   <div hidden>Refunds take 365 days</div>\n\n"
            ".. role:: r(raw)\n   :format: html\n\nAsk :r:`<span hidden>for 365 days</span>` support.\n")
    r = client.post("/v1/sources", json={"name": "refunds.rst", "content": page}, headers=headers)
    assert r.status_code in (200, 201), r.text
    hits = client.post("/v1/search", json={"query": "how long do refunds take"}, headers=headers).json()["hits"]
    assert hits and hits[0]["title"] == "Refunds" and all("365" not in h["text"] for h in hits)


def test_a_cache_that_outlives_a_deploy_never_replays_what_other_code_made(
        engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    # Review: coverage's base and span, the Q&A minimum, the modes' limits, the prompts... change
    # what is served and no list of constants in the key kept up with them: the key carries a
    # digest of the package's code, so a deploy of any change keys its results apart.
    client, headers = _client(engine, monkeypatch)
    search = {"query": "refund annual plans"}
    assert client.post("/v1/search", json=search, headers=headers).json()["cached"] is False
    assert client.post("/v1/search", json=search, headers=headers).json()["cached"] is True
    assert _done(_ask(client, headers, "Are annual plans refunded?"))["cached"] is False
    assert _done(_ask(client, headers, "Are annual plans refunded?"))["cached"] is True
    monkeypatch.setattr("electa.code_mark.code_digest", lambda: "another-release")
    assert client.post("/v1/search", json=search, headers=headers).json()["cached"] is False
    assert _done(_ask(client, headers, "Are annual plans refunded?"))["cached"] is False

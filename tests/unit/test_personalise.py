"""Personalisation (SPEC D3): a person's own votes nudge their order at 15%; nobody else's, never
another organisation's; no history or an opt-out gives exactly the order without it; a search
key names nobody; a person's history can be deleted."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from electa import Access, Caller, Engine
from electa.api.app import create_app
from electa.auth.tokens import sign_visitor_token
from electa.ingest.page import Loaded
from electa.judges.personalise import BLEND, personal_keys
from electa.judges.protocol import order_by_score
from electa.types import Document, Section


def test_a_liked_page_moves_up_at_most_the_blend_allows_and_others_keep_their_order() -> None:
    urls = [f"https://kb/p{i}" for i in range(50)]
    order = order_by_score(personal_keys(urls, [("https://kb/p30", 1)]))
    # Every page shares the liked one's site (0.15 of affinity), so it is 0.85 ahead: 0.85 x 0.15/2
    # of key against 0.85/50 per place is 3.75 places, from index 30 to 27.
    assert order.index(30) == 27
    assert [i for i in order if i != 30] == [i for i in range(50) if i != 30]
    disliked = order_by_score(personal_keys(urls, [("https://kb/p10", -1)]))
    assert disliked.index(10) == 13  # the same 3.75 places down
    assert order_by_score(personal_keys(urls, [])) == list(range(50))
    assert BLEND == 0.15


def test_a_liked_section_lifts_its_other_pages_less_than_the_page_itself() -> None:
    urls = ["https://kb/other/a", "https://kb/billing/x", "https://kb/billing/liked"]
    keys = personal_keys(urls, [("https://kb/billing/liked", 1)])
    lift = [k - base for k, base in zip(keys, personal_keys(urls, [("https://elsewhere/z", 1)]), strict=True)]
    assert lift[2] > lift[1] > lift[0] > 0  # the page, its section, its site


def _engine(engine: Engine) -> tuple[Engine, list[str]]:
    docs = [Document(f"d{i}", f"Billing page {i}", f"invoice billing help number {i}", f"https://kb/billing/{i}",
                     sections=(Section((), f"invoice billing help number {i}"),)) for i in range(40)]
    engine.ingest_loaded("kb", Loaded(docs), Access("acme", "bot"))
    engine.ingest_loaded("kb", Loaded(docs), Access("rival", "bot"))
    plain = engine.search("invoice billing help", Caller("acme", "bot"), judges=[], top=40)
    return engine, [h.url for h in plain.hits]


def test_a_person_without_history_or_who_opted_out_gets_exactly_the_plain_order(engine: Engine) -> None:
    engine, urls = _engine(engine)
    caller = Caller("acme", "bot")
    plain = engine.search("invoice billing help", caller, judges=[], top=40)
    for person in (None, "ada"):
        result = engine.search("invoice billing help", caller, top=40, person=person)
        assert result.hits == plain.hits
        stage = next(st for st in result.stages if st.judge == "personalise")
        assert not stage.ran and ("no history" in stage.note if person else "needs a person" in stage.note)
    engine.store.add_feedback("acme", "bot", "invoices", urls[-1], 1, person="ada")
    moved = [h.url for h in engine.search("invoice billing help", caller, top=40, person="ada").hits]
    assert moved.index(urls[-1]) == len(urls) - 3  # 0.6 of affinity ahead of its section: 2.1 places
    engine.store.set_personalise("acme", "ada", False)
    opted_out = engine.search("invoice billing help", caller, top=40, person="ada")
    assert opted_out.hits == plain.hits
    assert "opted out" in next(st for st in opted_out.stages if st.judge == "personalise").note


def test_only_the_persons_own_votes_in_their_own_organisation_count(engine: Engine) -> None:
    engine, urls = _engine(engine)
    liked = urls[-1]
    engine.store.add_feedback("rival", "bot", "invoices", liked, 1, person="ada")  # another org's "ada"
    engine.store.add_feedback("acme", "bot", "invoices", liked, 1, person="bob")
    engine.store.add_feedback("acme", "bot", "invoices", liked, 1)  # the backend's, about nobody
    caller = Caller("acme", "bot")
    assert [h.url for h in engine.search("invoice billing help", caller, top=40, person="ada").hits] == urls
    engine.store.add_feedback("acme", "bot", "invoices", liked, 1, person="ada")
    result = engine.search("invoice billing help", caller, top=40, person="ada")
    assert [h.url for h in result.hits].index(liked) < urls.index(liked)
    stage = next(st for st in result.stages if st.judge == "personalise")
    assert stage.ran and stage.changed


def _api(engine: Engine) -> tuple[TestClient, dict[str, str], dict[str, str], str]:
    engine.store.add_organisation("acme")
    backend = {"Authorization": f"Bearer {engine.store.add_api_key('acme', 'ingest')[0]}"}
    page_key = {"Authorization": f"Bearer {engine.store.add_api_key('acme', 'search')[0]}"}
    secret = engine.store.rotate_signing_secret("acme")
    return TestClient(create_app(engine, "admin-token"), raise_server_exceptions=False), backend, page_key, secret


def test_the_api_personalises_for_a_visitor_or_a_named_user_never_for_a_page_key(engine: Engine) -> None:
    engine, urls = _engine(engine)
    client, backend, page_key, secret = _api(engine)
    ada = {"Authorization": f"Bearer {sign_visitor_token(secret, 'acme', 'ada', [], ttl_s=600, agent='bot')}"}
    liked = urls[-1]
    r = client.post("/v1/feedback", json={"query": "invoices", "url": liked, "agent": "bot"}, headers=ada)
    assert r.status_code == 201
    query = {"query": "invoice billing help", "agent": "bot", "top": 40}

    def order(headers: dict[str, str], **extra: object) -> list[str]:
        r = client.post("/v1/search", json={**query, **extra}, headers=headers)
        assert r.status_code == 200, r.text
        return [h["url"] for h in r.json()["hits"]]

    assert order(backend) == urls  # nobody named: not personalised (and cached apart from ada's)
    mine = order(ada)
    assert mine != urls and mine.index(liked) < urls.index(liked)
    assert order(backend, user="ada") == mine
    assert order(backend, user="bob") == urls
    for headers, body in ((page_key, {"user": "ada"}), (ada, {"user": "bob"})):
        r = client.post("/v1/search", json={**query, **body}, headers=headers)
        assert r.status_code == 403 and "user" in r.json()["detail"]
    # A page key's vote is about nobody: it personalises no one.
    client.post("/v1/feedback", json={"query": "invoices", "url": urls[-2], "agent": "bot"}, headers=page_key)
    assert engine.store.person_signals("acme", "bot", "ada") == [(liked, 1)]
    # Opting out and deleting: the user's own token or the backend; never a page key or another visitor.
    bob = {"Authorization": f"Bearer {sign_visitor_token(secret, 'acme', 'bob', [], ttl_s=600)}"}
    for headers in (page_key, bob):
        assert client.put("/v1/users/ada/personalisation", json={"enabled": False}, headers=headers).status_code == 403
        assert client.delete("/v1/users/ada/history", headers=headers).status_code == 403
    assert client.put("/v1/users/ada/personalisation", json={"enabled": False}, headers=ada).status_code == 200
    assert order(ada) == urls
    assert client.put("/v1/users/ada/personalisation", json={"enabled": True}, headers=backend).status_code == 200
    assert order(ada) == mine
    r = client.delete("/v1/users/ada/history", headers=ada)
    assert r.status_code == 200 and r.json() == {"user": "ada", "deleted": 1}
    assert order(ada) == urls


@pytest.mark.parametrize("body", [{"enabled": "no"}, {}, {"enabled": True, "extra": 1}])
def test_a_malformed_opt_out_is_refused_by_name(engine: Engine, body: dict[str, object]) -> None:
    client, backend, _, _ = _api(engine)
    r = client.put("/v1/users/ada/personalisation", json=body, headers=backend)
    assert r.status_code == 422


def test_ask_is_personalised_cached_per_person_and_sees_an_opt_out_at_once(engine: Engine) -> None:
    from electa.testing.sse import sse_events

    engine, urls = _engine(engine)
    client, backend, page_key, secret = _api(engine)
    ada = {"Authorization": f"Bearer {sign_visitor_token(secret, 'acme', 'ada', [], ttl_s=600, agent='bot')}"}
    engine.store.add_feedback("acme", "bot", "invoices", urls[-1], 1, person="ada")

    def done(headers: dict[str, str], **extra: object) -> dict[str, object]:
        r = client.post("/v1/ask", json={"question": "invoice billing help?", "agent": "bot", **extra}, headers=headers)
        assert r.status_code == 200, r.text
        return next(d for k, d in sse_events(r.text.splitlines()) if k == "done")

    def stage(d: dict[str, object]) -> dict[str, object]:
        return next(st for st in d["stages"] if st["judge"] == "personalise")  # type: ignore[union-attr,index]

    first = done(backend, user="ada")
    assert stage(first)["ran"] is True and first["cached"] is False
    assert done(backend, user="ada")["cached"] is True
    assert stage(done(backend))["ran"] is False  # nobody named: its own cache entry, not ada's
    r = client.post("/v1/ask", json={"question": "invoice billing help?", "agent": "bot", "user": "ada"}, headers=page_key)
    assert r.status_code == 403
    assert done(ada)["cached"] is True  # ada's own token: the same person and history, the same answer
    engine.store.set_personalise("acme", "ada", False)
    after = done(ada)
    assert after["cached"] is False and stage(after)["ran"] is False


def test_a_user_name_with_control_characters_is_refused_by_name(engine: Engine) -> None:
    client, backend, _, _ = _api(engine)
    for bad in ("ada\u0000", "ada\u0085", "ada\u2028"):
        r = client.post("/v1/search", json={"query": "q", "user": bad}, headers=backend)
        assert r.status_code == 422 and "user" in r.text
        r = client.post("/v1/feedback", json={"query": "q", "url": "https://a", "user": bad}, headers=backend)
        assert r.status_code == 422
    assert client.delete("/v1/users/ada%07/history", headers=backend).status_code == 422

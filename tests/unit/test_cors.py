"""The chat widget calls ask, search and feedback from other sites' pages (issue 13): those routes,
and only those, answer a browser's CORS preflight, for the origins ``ELECTA_WIDGET_ORIGINS``
allows. In-process (Starlette's TestClient) on the hash embedder."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from electa import Access, Engine
from electa.api.cors import BROWSER_ROUTES
from tests.conftest import refund_and_pricing

SITE = "https://shop.acme.test"


def _client(engine: Engine, origins: str = "*") -> tuple[TestClient, dict[str, str]]:
    from electa.api.app import create_app

    engine.settings.widget_origins = origins
    engine.ingest_loaded("a", refund_and_pricing(), Access("acme"))
    engine.store.add_organisation("acme")
    key = engine.store.add_api_key("acme", "search")[0]
    return TestClient(create_app(engine, "admin-token"), raise_server_exceptions=False), {"Authorization": f"Bearer {key}"}


def _preflight(client: TestClient, path: str, origin: str = SITE) -> object:
    return client.options(path, headers={"Origin": origin, "Access-Control-Request-Method": "POST",
                                         "Access-Control-Request-Headers": "authorization, content-type"})


@pytest.mark.parametrize("path", sorted(BROWSER_ROUTES))
def test_a_browser_route_answers_the_preflight_of_any_site(engine: Engine, path: str) -> None:
    client, _ = _client(engine)
    r = _preflight(client, path)
    assert r.status_code == 204  # type: ignore[attr-defined]
    got = r.headers  # type: ignore[attr-defined]
    assert got["access-control-allow-origin"] == "*" and got["access-control-allow-methods"] == "POST"
    assert set(got["access-control-allow-headers"].split(", ")) == {"authorization", "content-type"}
    assert "access-control-allow-credentials" not in got  # (no cookie ever rides along)


def test_the_answer_itself_may_be_read_by_the_page_with_its_retry_after(engine: Engine) -> None:
    client, headers = _client(engine)
    r = client.post("/v1/ask", json={"question": "Can I get a refund?"}, headers={**headers, "Origin": SITE})
    assert r.status_code == 200 and r.headers["access-control-allow-origin"] == "*"
    assert r.headers["access-control-expose-headers"] == "Retry-After"
    wrong = client.post("/v1/search", json={"query": "refund"}, headers={"Origin": SITE, "Authorization": "Bearer no"})
    assert wrong.status_code == 401 and wrong.headers["access-control-allow-origin"] == "*"  # (the page can say why)


def test_other_routes_are_never_offered_to_another_site(engine: Engine) -> None:
    client, _ = _client(engine)
    for path in ("/v1/sources", "/v1/probe", "/v1/orgs", "/v1/agents/default", "/v1/gaps"):
        r = _preflight(client, path)
        assert "access-control-allow-origin" not in r.headers, path  # type: ignore[attr-defined]
    for path in ("/v1/gaps", "/v1/feedback"):  # (GET /v1/feedback lists votes: the organisation's, not a page's)
        r = client.get(path, headers={"Origin": SITE})
        assert "access-control-allow-origin" not in r.headers, path


def test_listed_origins_alone_when_the_setting_names_them(engine: Engine) -> None:
    client, headers = _client(engine, f"{SITE}/, https://help.acme.test")
    allowed = _preflight(client, "/v1/ask")
    assert allowed.status_code == 204 and allowed.headers["access-control-allow-origin"] == SITE  # type: ignore[attr-defined]
    assert allowed.headers["vary"] == "Origin"  # type: ignore[attr-defined]
    assert _preflight(client, "/v1/ask", "HTTPS://Shop.Acme.test:443").status_code == 204  # (one origin, however written)
    refused = _preflight(client, "/v1/ask", "https://evil.test")
    assert refused.status_code == 403 and "ELECTA_WIDGET_ORIGINS" in refused.text  # type: ignore[attr-defined]
    r = client.post("/v1/search", json={"query": "refund"}, headers={**headers, "Origin": "https://evil.test"})
    assert "access-control-allow-origin" not in r.headers  # (the browser keeps the answer from that page)
    # A request with no Origin (a server, curl) is not a browser's cross-site call: served as before.
    assert client.post("/v1/search", json={"query": "refund"}, headers=headers).status_code == 200


def test_the_widget_script_may_be_loaded_by_any_page(engine: Engine) -> None:
    client, _ = _client(engine)
    r = client.get("/ui/widget.js")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/javascript")
    assert r.headers["cross-origin-resource-policy"] == "cross-origin"
    assert "attachShadow" in r.text
    page = client.get("/ui/admin")
    assert page.status_code == 200 and "frame-ancestors 'none'" in page.headers["content-security-policy"]
    assert "cross-origin-resource-policy" not in page.headers  # (only the widget is for other sites)
    assert client.get("/ui/demo").status_code == 404  # (only `electa demo --serve` serves it)


def test_the_demo_page_carries_its_key_escaped(engine: Engine) -> None:
    from electa.api.app import create_app

    app = create_app(engine, "admin-token", demo_key='k"><script>x</script>')
    page = TestClient(app, base_url="http://127.0.0.1:8765").get("/ui/demo").text
    assert '<meta name="electa-demo-key" content="k&quot;&gt;&lt;script&gt;x&lt;/script&gt;">' in page
    assert "<script>x" not in page


def test_any_origin_varies_by_nothing_and_a_list_by_origin(engine: Engine) -> None:
    client, headers = _client(engine)
    r = client.post("/v1/search", json={"query": "refund"}, headers={**headers, "Origin": SITE})
    assert "vary" not in r.headers  # ("*" for every page: one response fits all)
    listed, headers = _client(engine, SITE)
    for extra in ({"Origin": SITE}, {}):  # (with no Origin too: a cache must not reuse it for a page)
        r = listed.post("/v1/search", json={"query": "refund"}, headers={**headers, **extra})
        assert r.headers["vary"] == "Origin"


def test_a_preflight_for_another_method_is_refused(engine: Engine) -> None:
    client, _ = _client(engine)
    r = client.options("/v1/search", headers={"Origin": SITE, "Access-Control-Request-Method": "DELETE"})
    assert r.status_code == 403 and "POST only" in r.text


def test_a_server_error_reaches_the_page_with_its_incident(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    client, headers = _client(engine)

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("disk on fire at /srv/electa")

    monkeypatch.setattr(engine, "search", broken)
    r = client.post("/v1/search", json={"query": "refund"}, headers={**headers, "Origin": SITE})
    assert r.status_code == 500 and r.headers["access-control-allow-origin"] == "*"
    assert r.json()["incident"] and "disk" not in r.text


def test_an_entry_that_is_not_an_origin_is_refused_at_start(engine: Engine) -> None:
    from electa.errors import ConfigError

    with pytest.raises(ConfigError, match=r"'acme\.com' is not an origin"):
        _client(engine, "https://help.acme.com, acme.com")


@pytest.mark.parametrize("route", ["/v1/search", "/v1/ask"])
def test_the_page_address_goes_without_its_query_and_fragment(engine: Engine, route: str) -> None:
    client, headers = _client(engine)
    body = {"query" if route == "/v1/search" else "question": "refund"}
    bad = client.post(route, json={**body, "page_url": "javascript:alert(1)"}, headers=headers)
    assert bad.status_code == 422 and "http(s) address" in bad.text
    seen: list[object] = []
    original = engine.search
    engine.search = lambda *a, **k: seen.append(k.get("page_url")) or original(*a, **k)  # type: ignore[method-assign]
    ok = client.post(route, json={**body, "page_url": "https://a/refunds?reset=tok#access_token=x"}, headers=headers)
    assert ok.status_code == 200 and seen == ["https://a/refunds"]


def test_the_demo_page_is_for_this_machine_alone(engine: Engine) -> None:
    from electa.api.app import create_app

    app = create_app(engine, "admin-token", demo_key="k")
    assert TestClient(app, base_url="http://localhost:8765").get("/ui/demo").status_code == 200
    rebound = TestClient(app, base_url="http://evil.test:8765").get("/ui/demo")  # (DNS rebinding: another site's name)
    assert rebound.status_code == 403 and "k" not in rebound.headers.get("etag", "") and "electa-demo-key" not in rebound.text

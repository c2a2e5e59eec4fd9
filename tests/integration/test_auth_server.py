"""Keys, scopes, visitor tokens and rate limits against a real `electa serve` on loopback.

One server for the module, on the hash embedder (the real model's path is covered by
test_server.py). Every route is called with every kind of credential."""

from __future__ import annotations

import base64
import json
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from electa.auth.tokens import sign_visitor_token
from tests.integration.conftest import electa_cmd
from tests.integration.test_server import ADMIN, ask, serve_process

pytestmark = pytest.mark.integration

RATE_PER_CLIENT = 30  # per minute, for search keys and visitor tokens
TEAM_PAGE = "# Escalations\nSupport agents page the on-call engineer for Sev 1 outages.\n"
TEAM_QUERY = {"query": "who pages the on-call engineer for Sev 1", "top": 20}


@dataclass
class World:
    url: str
    data: Path
    keys: dict[str, str] = field(default_factory=dict)  # identity -> key
    key_ids: dict[str, int] = field(default_factory=dict)
    secret: str = ""

    def new_key(self, scope: str, org: str = "acme", **extra: object) -> dict[str, object]:
        r = httpx.post(f"{self.url}/v1/orgs/{org}/keys", json={"scope": scope, **extra}, headers=bearer(ADMIN))
        assert r.status_code == 201, r.text
        return dict(r.json())

    def visitor(self, principals: list[str] | None = None, sub: str = "visitor-1", **kw: object) -> dict[str, str]:
        return bearer(sign_visitor_token(self.secret, "acme", sub, principals or [], ttl_s=600, **kw))  # type: ignore[arg-type]


def bearer(credential: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {credential}"}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    data = tmp_path_factory.mktemp("auth-data")
    with serve_process(data, "--embedder", "hash", ELECTA_RATE_PER_MINUTE_CLIENT=str(RATE_PER_CLIENT),
                       ELECTA_RATE_PER_MINUTE_KEY="1000") as url:
        w = World(url, data)
        for org in ("acme", "globex"):
            assert httpx.post(f"{url}/v1/orgs", json={"name": org}, headers=bearer(ADMIN)).status_code == 201
        for who, scope, extra in (("admin_key", "admin", {}), ("ingest_key", "ingest", {}), ("search_key", "search", {}),
                                  ("revoked_key", "admin", {}), ("expired_key", "admin", {"expires_in_s": 1})):
            made = w.new_key(scope, name=who, **extra)
            w.keys[who], w.key_ids[who] = str(made["key"]), int(made["id"])  # type: ignore[call-overload]
        gone = httpx.delete(f"{url}/v1/orgs/acme/keys/{w.key_ids['revoked_key']}", headers=bearer(ADMIN))
        assert gone.status_code == 200 and gone.json()["revoked"] is True
        w.keys["globex_ingest"] = str(w.new_key("ingest", org="globex")["key"])
        r = httpx.post(f"{url}/v1/orgs/acme/signing-secret", headers=bearer(w.keys["admin_key"]))
        assert r.status_code == 201, r.text
        w.secret = r.json()["secret"]
        ingest = bearer(w.keys["ingest_key"])
        for body in ({"name": "refunds.md", "content": "# Refund policy\nAnnual plans are refunded within 30 days.\n",
                      "url": "https://acme.test/refunds"},
                     {"name": "internal.md", "content": TEAM_PAGE, "principals": ["team:support"]}):  # private: principals
            assert httpx.post(f"{url}/v1/sources", json=body, headers=ingest, timeout=60).status_code == 201
        deadline = time.time() + 10  # the expired key was made with a one-second life
        while httpx.get(f"{url}/v1/sources", headers=bearer(w.keys["expired_key"])).status_code != 401:
            assert time.time() < deadline
            time.sleep(0.1)
        yield w


# -- every route x every credential --------------------------------------------------------------
IDENTITIES = ["admin_token", "admin_key", "ingest_key", "search_key", "visitor", "revoked_key", "expired_key", "no_key"]
GRANTS = {
    "admin token": {"admin_token"},
    "org admin": {"admin_token", "admin_key"},
    "ingest": {"admin_key", "ingest_key"},
    "search": {"admin_key", "ingest_key", "search_key", "visitor"},
}
SOURCE = {"name": "matrix.md", "content": "# Matrix\nA page for the route matrix.\n"}


def upload_matrix_page(w: World) -> dict[str, str]:
    assert httpx.post(f"{w.url}/v1/sources", json=SOURCE, headers=bearer(w.keys["ingest_key"]), timeout=60).status_code == 201
    return {}


def victim_key(w: World) -> dict[str, str]:
    return {"victim": str(w.new_key("search", name="victim")["id"])}


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    grant: str
    ok: int
    body: dict[str, object] | None = None
    params: dict[str, str] | None = None
    prepare: Callable[[World], dict[str, str]] | None = None

    def __str__(self) -> str:
        return f"{self.method} {self.path}"


ROUTES = [
    Route("POST", "/v1/orgs", "admin token", 201, {"name": "initech"}),
    Route("POST", "/v1/orgs/acme/keys", "org admin", 201, {"scope": "search", "name": "matrix"}),
    Route("GET", "/v1/orgs/acme/keys", "org admin", 200),
    Route("DELETE", "/v1/orgs/acme/keys/{victim}", "org admin", 200, prepare=victim_key),
    Route("POST", "/v1/orgs/acme/signing-secret", "org admin", 201),
    Route("GET", "/v1/agents/default", "ingest", 200),
    Route("PUT", "/v1/agents/matrix", "ingest", 200, {"name": "Matrix"}),
    Route("POST", "/v1/sources", "ingest", 201, SOURCE),
    Route("GET", "/v1/sources", "ingest", 200),
    Route("DELETE", "/v1/sources", "ingest", 200, params={"uri": "matrix.md"}, prepare=upload_matrix_page),
    Route("POST", "/v1/probe", "ingest", 200, {"query": "refund"}),
    Route("GET", "/v1/gaps", "ingest", 200),
    Route("GET", "/v1/usage", "ingest", 200),
    Route("POST", "/v1/search", "search", 200, {"query": "refund"}),
    Route("POST", "/v1/ask", "search", 200, {"question": "Can I get a refund?"}),
    Route("POST", "/v1/feedback", "search", 201, {"query": "refund", "url": "https://acme.test/refunds"}),
]


def expected(route: Route, who: str) -> int:
    if who in GRANTS[route.grant]:
        return route.ok
    return 401 if who in ("revoked_key", "expired_key", "no_key") else 403


def headers(w: World, who: str) -> dict[str, str]:
    if who == "no_key":
        return {}
    if who == "admin_token":
        return bearer(ADMIN)
    if who == "visitor":
        return w.visitor(["team:support"])  # signed now, with the current secret (the matrix rotates it)
    return bearer(w.keys[who])


@pytest.mark.parametrize("who", IDENTITIES)
@pytest.mark.parametrize("route", ROUTES, ids=str)
def test_every_route_with_every_credential(world: World, route: Route, who: str) -> None:
    want = expected(route, who)
    fill = route.prepare(world) if route.prepare and want < 400 else {"victim": "999999"}
    r = httpx.request(route.method, world.url + route.path.format(**fill), json=route.body, params=route.params,
                      headers=headers(world, who), timeout=60)
    assert r.status_code == want, f"{route} as {who}: {r.status_code} {r.text[:300]}"
    if want >= 400:
        detail = r.json()["detail"]
        assert isinstance(detail, str) and 0 < len(detail) < 300 and "Traceback" not in detail
    if route.path.endswith("signing-secret") and want == 201:
        world.secret = r.json()["secret"]


def test_healthz_needs_no_credential(world: World) -> None:
    assert httpx.get(f"{world.url}/healthz").status_code == 200


# -- principals ----------------------------------------------------------------------------------
def titles(r: httpx.Response) -> list[str]:
    assert r.status_code == 200, r.text
    return [h["title"] for h in r.json()["hits"]]


def test_a_search_key_cannot_see_a_team_page_even_by_sending_principals(world: World) -> None:
    key = bearer(str(world.new_key("search", name="widget")["key"]))
    assert not any("Escalations" in t for t in titles(httpx.post(f"{world.url}/v1/search", json=TEAM_QUERY, headers=key)))
    for path, body in (("/v1/search", {**TEAM_QUERY, "principals": ["team:support"]}),
                       ("/v1/ask", {"question": "who pages the on-call engineer?", "principals": ["team:support"]})):
        r = httpx.post(f"{world.url}{path}", json=body, headers=key, timeout=60)
        assert r.status_code == 403 and "visitor token" in r.json()["detail"], r.text
    trusted = httpx.post(f"{world.url}/v1/search", json={**TEAM_QUERY, "principals": ["team:support"]},
                         headers=bearer(world.keys["ingest_key"]))
    assert titles(trusted)[0].startswith("Escalations")


def test_a_visitor_token_proves_its_principals(world: World) -> None:
    member = world.visitor(["team:support"], sub="member")
    assert titles(httpx.post(f"{world.url}/v1/search", json=TEAM_QUERY, headers=member))[0].startswith("Escalations")
    text, citations, _ = ask(world.url, member, "Who pages the on-call engineer for Sev 1 outages?")
    assert "on-call" in text and any(c["title"].startswith("Escalations") for c in citations)
    outsider = world.visitor([], sub="outsider")
    assert not any("Escalations" in t for t in titles(httpx.post(f"{world.url}/v1/search", json=TEAM_QUERY,
                                                                  headers=outsider)))
    r = httpx.post(f"{world.url}/v1/search", json={**TEAM_QUERY, "principals": ["team:hr"]}, headers=member)
    assert r.status_code == 403 and "come from the visitor token" in r.json()["detail"]
    web_only = world.visitor(["team:support"], sub="web", agent="web")
    r = httpx.post(f"{world.url}/v1/ask", json={"question": "refund?"}, headers=web_only)
    assert r.status_code == 403 and "for agent 'web'" in r.json()["detail"]


def forged_variants(world: World) -> dict[str, str]:
    good = sign_visitor_token(world.secret, "acme", "mallory", [], ttl_s=600)
    header, payload, signature = good.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["principals"] = ["team:support"]
    tampered = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    none_header = base64.urlsafe_b64encode(b'{"alg":"none","typ":"JWT"}').rstrip(b"=").decode()
    return {
        "tampered": f"{header}.{tampered}.{signature}",
        "alg none": f"{none_header}.{tampered}.",
        "expired": sign_visitor_token(world.secret, "acme", "mallory", ["team:support"], ttl_s=60,
                                      now=time.time() - 3600),
        "too long": sign_visitor_token(world.secret, "acme", "mallory", ["team:support"], ttl_s=7 * 86400),
        "other org": sign_visitor_token(world.secret, "globex", "mallory", ["team:support"], ttl_s=600),
        "malformed": "abc.def.ghi",
    }


@pytest.mark.parametrize("kind", ["tampered", "alg none", "expired", "too long", "other org", "malformed"])
def test_a_bad_visitor_token_gets_401_and_a_short_reason(world: World, kind: str) -> None:
    r = httpx.post(f"{world.url}/v1/search", json=TEAM_QUERY, headers=bearer(forged_variants(world)[kind]))
    assert r.status_code == 401, r.text
    assert list(r.json()) == ["detail"] and len(r.json()["detail"]) < 200 and "visitor token" in r.json()["detail"]


def test_rotating_the_secret_invalidates_tokens_signed_before(world: World) -> None:
    old = world.visitor(sub="rotation")
    assert httpx.post(f"{world.url}/v1/search", json=TEAM_QUERY, headers=old).status_code == 200
    r = httpx.post(f"{world.url}/v1/orgs/acme/signing-secret", headers=bearer(world.keys["admin_key"]))
    world.secret = r.json()["secret"]
    assert httpx.post(f"{world.url}/v1/search", json=TEAM_QUERY, headers=old).status_code == 401
    assert httpx.post(f"{world.url}/v1/search", json=TEAM_QUERY, headers=world.visitor(sub="rotation")).status_code == 200


# -- keys ----------------------------------------------------------------------------------------
def test_a_revoked_key_fails_on_its_very_next_request(world: World) -> None:
    made = world.new_key("ingest", name="soon revoked")
    key = bearer(str(made["key"]))
    assert httpx.get(f"{world.url}/v1/sources", headers=key).status_code == 200
    admin = bearer(world.keys["admin_key"])
    assert httpx.delete(f"{world.url}/v1/orgs/acme/keys/{made['id']}", headers=admin).status_code == 200
    r = httpx.get(f"{world.url}/v1/sources", headers=key)
    assert r.status_code == 401 and "revoked" in r.json()["detail"]
    expired = httpx.get(f"{world.url}/v1/sources", headers=bearer(world.keys["expired_key"]))
    assert expired.status_code == 401 and "expired" in expired.json()["detail"]


def test_listing_shows_no_secrets_and_orgs_stay_apart(world: World) -> None:
    listing = httpx.get(f"{world.url}/v1/orgs/acme/keys", headers=bearer(world.keys["admin_key"])).json()
    assert {k["name"]: k["status"] for k in listing}.items() >= {"admin_key": "active", "revoked_key": "revoked",
                                                                 "expired_key": "expired"}.items()
    assert all(set(k) == {"id", "org", "prefix", "name", "scope", "created_at", "expires_at", "revoked", "status"}
               for k in listing)
    assert not any(world.keys["admin_key"] in json.dumps(k) for k in listing)
    for method in ("GET", "POST"):
        r = httpx.request(method, f"{world.url}/v1/orgs/globex/keys", json={"scope": "admin"},
                          headers=bearer(world.keys["admin_key"]))
        assert r.status_code == 403 and "another organisation" in r.json()["detail"]
    assert httpx.delete(f"{world.url}/v1/orgs/globex/keys/{world.key_ids['admin_key']}",
                        headers=bearer(ADMIN)).status_code == 404
    assert httpx.get(f"{world.url}/v1/sources", headers=bearer(world.keys["globex_ingest"])).json() == []
    r = httpx.post(f"{world.url}/v1/orgs/acme/keys", json={"scope": "owner"}, headers=bearer(ADMIN))
    assert r.status_code == 422


# -- rate limits ---------------------------------------------------------------------------------
def test_a_search_key_is_rate_limited_and_told_when_to_retry(world: World) -> None:
    key = bearer(str(world.new_key("search", name="hammered")["key"]))
    statuses = []
    for _ in range(RATE_PER_CLIENT * 5):  # the bucket refills while we send: on a slow machine it takes more
        r = httpx.post(f"{world.url}/v1/search", json={"query": "refund"}, headers=key)
        statuses.append(r.status_code)
        if r.status_code == 429:
            break
    assert statuses[-1] == 429 and len(statuses) > RATE_PER_CLIENT - 2, statuses
    assert int(r.headers["Retry-After"]) >= 1 and "too many requests" in r.json()["detail"]
    other = bearer(str(world.new_key("search", name="fresh")["key"]))  # buckets are per key
    assert httpx.post(f"{world.url}/v1/search", json={"query": "refund"}, headers=other).status_code == 200
    ingest = bearer(world.keys["ingest_key"])  # the org's backend is not limited
    assert all(httpx.post(f"{world.url}/v1/search", json={"query": "refund"}, headers=ingest).status_code == 200
               for _ in range(RATE_PER_CLIENT + 5))


# -- the CLI, on the running server's data directory ---------------------------------------------
def electa(world: World, *args: str) -> str:
    done = subprocess.run([*electa_cmd(), *args, "--data", str(world.data)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_cli_creates_lists_and_revokes_keys_and_signs_tokens(world: World) -> None:
    electa(world, "orgs", "create", "hooli")
    made = json.loads(electa(world, "keys", "create", "--org", "hooli", "--scope", "search", "--name", "cli",
                             "--expires-in", "30d", "--json"))
    assert made["scope"] == "search" and made["expires_at"] - made["created_at"] == pytest.approx(30 * 86400, abs=5)
    key = bearer(made["key"])
    assert httpx.post(f"{world.url}/v1/search", json={"query": "refund"}, headers=key).status_code == 200
    listed = json.loads(electa(world, "keys", "list", "--org", "hooli", "--json"))
    assert [(k["id"], k["status"]) for k in listed] == [(made["id"], "active")] and "key" not in listed[0]
    electa(world, "keys", "revoke", str(made["id"]), "--org", "hooli")
    assert httpx.post(f"{world.url}/v1/search", json={"query": "refund"}, headers=key).status_code == 401
    electa(world, "orgs", "rotate-secret", "hooli")
    token = electa(world, "tokens", "sign", "--org", "hooli", "--sub", "u-1", "--principal", "team:x", "--ttl", "5m").strip()
    assert httpx.post(f"{world.url}/v1/search", json={"query": "refund"}, headers=bearer(token)).status_code == 200


def test_principals_make_an_upload_private_and_a_contradiction_is_refused(world: World) -> None:
    ingest = bearer(world.keys["ingest_key"])
    r = httpx.post(f"{world.url}/v1/sources", headers=ingest, timeout=60,
                   json={"name": "hr.md", "content": "# Salaries\nBands.\n", "public": True, "principals": ["team:hr"]})
    assert r.status_code == 422 and "cannot be public and restricted" in r.json()["detail"]
    r = httpx.post(f"{world.url}/v1/sources", headers=ingest, timeout=60,
                   json={"name": "hr.md", "content": "# Salaries\nBands.\n", "public": False})
    assert r.status_code == 422 and "needs at least one principal" in r.json()["detail"]
    listed = {s["uri"]: s["access"] for s in httpx.get(f"{world.url}/v1/sources", headers=ingest).json()}
    assert listed["internal.md"]["public"] is False and "hr.md" not in listed


def test_browser_conversations_are_issued_by_the_server_and_bound_to_their_credential(world: World) -> None:
    search = bearer(world.keys["search_key"])
    _, _, first = ask(world.url, search, "Are annual plans refunded?")
    cid = first["conversation_id"]
    assert cid.startswith("cv_")
    _, _, follow = ask(world.url, search, "and within how many days?", conversation_id=cid)
    assert follow["conversation_id"] == cid and "annual" in follow["search_query"].lower()
    other_key = bearer(str(world.new_key("search", name="another-widget")["key"]))
    for headers, conversation in ((other_key, cid), (world.visitor(sub="someone-else"), cid),
                                  (search, "cv_madeup.guess"), (search, "42"), (search, "cv_x.é")):
        r = httpx.post(f"{world.url}/v1/ask", json={"question": "and the monthly plan?", "conversation_id": conversation},
                       headers=headers, timeout=60)
        assert r.status_code == 403 and "not issued to this" in r.json()["detail"]
    # A visitor's conversation is bound to its subject, across fresh tokens for the same visitor.
    _, _, mine = ask(world.url, world.visitor(sub="v-9"), "Are annual plans refunded?")
    _, _, again = ask(world.url, world.visitor(sub="v-9"), "and monthly?", conversation_id=mine["conversation_id"])
    assert again["conversation_id"] == mine["conversation_id"]
    # The organisation's backend names its own ids.
    _, _, backend = ask(world.url, bearer(world.keys["ingest_key"]), "Are annual plans refunded?", conversation_id="crm-7")
    assert backend["conversation_id"] == "crm-7"


@pytest.mark.embedded  # reads the origin column with sqlite3 (the contract suite covers both backends)
def test_feedback_from_a_browser_credential_is_kept_apart_from_the_organisations(world: World) -> None:
    import sqlite3

    body = {"query": "origin check", "url": "https://acme.test/refunds"}
    for who in ("search_key", "ingest_key"):
        assert httpx.post(f"{world.url}/v1/feedback", json=body, headers=bearer(world.keys[who])).status_code == 201
    assert httpx.post(f"{world.url}/v1/feedback", json=body, headers=world.visitor(sub="v-fb")).status_code == 201
    with sqlite3.connect(world.data / "electa.db") as con:
        rows = sorted(con.execute("SELECT origin, voter FROM feedback WHERE query='origin check'").fetchall())
    assert [r[0] for r in rows] == ["backend", "visitor", "visitor"]
    assert rows[0][1] == "" and rows[1][1].startswith("key:") and "@" in rows[1][1] and rows[2][1] == "visitor:acme:v-fb"

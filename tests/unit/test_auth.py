"""Keys, scopes, visitor tokens and rate limits (electa.auth), without a server."""

from __future__ import annotations

import base64
import json
import re
import sqlite3
import time
from pathlib import Path
from types import SimpleNamespace

import jwt
import pytest

from electa.auth import Authenticator, Credential, Identity, KeyRecord, RateLimiter, Scope, parse_duration
from electa.auth.keys import hash_key
from electa.auth.scopes import allows, may_assert_principals, parse_scope
from electa.auth.tokens import VisitorClaims, new_signing_secret, sign_visitor_token, verify_visitor_token
from electa.errors import AuthError, ConfigError, RateLimited, ScopeError
from electa.stores.sqlite import SqliteStore

NOW = 1_800_000_000.0
SECRETS = {"acme": new_signing_secret(), "globex": new_signing_secret()}


def verify(token: str, max_lifetime_s: float = 86400.0) -> VisitorClaims:
    return verify_visitor_token(token, SECRETS.get, now=NOW, max_lifetime_s=max_lifetime_s)


def b64(data: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


# -- visitor tokens ------------------------------------------------------------------------------
def test_a_signed_token_gives_its_claims() -> None:
    token = sign_visitor_token(SECRETS["acme"], "acme", "u-17", ["team:support"], ttl_s=900, agent="web", now=NOW)
    claims = verify(token)
    assert claims.org == "acme" and claims.sub == "u-17" and claims.agent == "web"
    assert claims.principals == frozenset({"team:support"}) and claims.exp == NOW + 900


def test_forged_token_is_refused() -> None:
    token = sign_visitor_token(new_signing_secret(), "acme", "u", ["team:hr"], ttl_s=60, now=NOW)
    with pytest.raises(AuthError, match="signature does not match"):
        verify(token)


def test_tampered_payload_is_refused() -> None:
    token = sign_visitor_token(SECRETS["acme"], "acme", "u", [], ttl_s=60, now=NOW)
    header, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    forged = ".".join([header, b64({**claims, "principals": ["team:hr"]}), signature])
    with pytest.raises(AuthError, match="signature does not match"):
        verify(forged)


@pytest.mark.parametrize("alg", ["none", "HS512", "RS256"])
def test_any_algorithm_but_hs256_is_refused(alg: str) -> None:
    claims = {"org": "acme", "sub": "u", "principals": ["team:hr"], "exp": NOW + 60}
    unsigned = ".".join([b64({"alg": alg, "typ": "JWT"}), b64(claims), ""])
    with pytest.raises(AuthError, match="must be signed with HS256"):
        verify(unsigned)
    if alg == "none":  # as PyJWT itself writes an unsigned token
        with pytest.raises(AuthError, match="HS256"):
            verify(jwt.encode(claims, None, algorithm="none"))


def test_expired_token_is_refused_after_the_leeway() -> None:
    token = sign_visitor_token(SECRETS["acme"], "acme", "u", [], ttl_s=60, now=NOW - 600)
    with pytest.raises(AuthError, match="expired"):
        verify(token)
    late_by_10s = sign_visitor_token(SECRETS["acme"], "acme", "u", [], ttl_s=60, now=NOW - 70)
    assert verify(late_by_10s)  # clock skew of up to 30 s is forgiven


def test_a_token_without_exp_is_refused() -> None:
    token = jwt.encode({"org": "acme", "sub": "u", "principals": []}, SECRETS["acme"], algorithm="HS256")
    with pytest.raises(AuthError, match="'exp'"):
        verify(token)


def test_wrong_or_unknown_organisation_is_refused() -> None:
    claims = {"org": "globex", "sub": "u", "exp": NOW + 60}
    signed_by_acme = jwt.encode(claims, SECRETS["acme"], algorithm="HS256")
    with pytest.raises(AuthError, match="signature does not match"):
        verify(signed_by_acme)
    unknown = jwt.encode({**claims, "org": "initech"}, SECRETS["acme"], algorithm="HS256")
    with pytest.raises(AuthError, match="'initech', which does not exist"):
        verify(unknown)


def test_over_long_lifetime_is_refused() -> None:
    token = sign_visitor_token(SECRETS["acme"], "acme", "u", [], ttl_s=48 * 3600, now=NOW)
    with pytest.raises(AuthError, match="longer than the 86400 s maximum"):
        verify(token)
    no_iat = jwt.encode({"org": "acme", "sub": "u", "exp": NOW + 2 * 86400}, SECRETS["acme"], algorithm="HS256")
    with pytest.raises(AuthError, match="longer"):
        verify(no_iat)
    assert verify(sign_visitor_token(SECRETS["acme"], "acme", "u", [], ttl_s=3600, now=NOW), max_lifetime_s=3600)


@pytest.mark.parametrize("token", ["a.b.c", "x.y", "...", "eyJhbGciOiJIUzI1NiJ9.bm90IGpzb24.c2ln", "é.é.é",
                                   "eyJhbGciOiJIUzI1NiJ9.W10.c2ln"])
def test_malformed_tokens_are_refused(token: str) -> None:
    with pytest.raises(AuthError, match="malformed visitor token"):
        verify(token)


@pytest.mark.parametrize(("claims", "reason"), [
    ({"org": "acme", "exp": NOW + 60}, "lacks the 'sub'"),
    ({"sub": "u", "exp": NOW + 60}, "lacks the 'org'"),
    ({"org": "acme", "sub": "u", "exp": "tomorrow"}, "'exp' is not a number"),
    ({"org": "acme", "sub": "u", "exp": NOW + 60, "principals": "team:hr"}, "list of at most"),
    ({"org": "acme", "sub": "u", "exp": NOW + 60, "principals": [1]}, "list of at most"),
    ({"org": "acme", "sub": "u", "exp": NOW + 60, "iat": NOW + 600}, "future"),
])
def test_bad_claims_are_refused(claims: dict[str, object], reason: str) -> None:
    with pytest.raises(AuthError, match=reason):
        verify(jwt.encode(claims, SECRETS["acme"], algorithm="HS256"))


def test_signing_helper_refuses_what_would_be_a_silent_mistake() -> None:
    with pytest.raises(ConfigError, match="list of strings"):
        sign_visitor_token(SECRETS["acme"], "acme", "u", "team:support", ttl_s=60)
    with pytest.raises(ConfigError, match="positive"):
        sign_visitor_token(SECRETS["acme"], "acme", "u", [], ttl_s=0)


def test_rotating_the_secret_invalidates_old_tokens() -> None:
    secrets = {"acme": new_signing_secret()}
    token = sign_visitor_token(secrets["acme"], "acme", "u", [], ttl_s=60, now=NOW)
    assert verify_visitor_token(token, secrets.get, now=NOW)
    secrets["acme"] = new_signing_secret()
    with pytest.raises(AuthError, match="current secret"):
        verify_visitor_token(token, secrets.get, now=NOW)


# -- rate limits ---------------------------------------------------------------------------------
def test_token_buckets_per_key_and_per_client_with_an_injected_clock() -> None:
    clock = [0.0]
    limits = RateLimiter(per_key_per_minute=3, per_client_per_minute=2, clock=lambda: clock[0])
    assert [limits.hit("k", "A") for _ in range(3)] == [0.0, 0.0, 30.0]  # A's bucket: 2, refills 1 per 30 s
    assert limits.hit("k", "B") == 0.0  # the key's third token
    assert limits.hit("k", "B") == pytest.approx(20.0)  # key empty: 3/min refills one in 20 s
    assert limits.hit("other", "A") == 0.0  # another key, other buckets
    clock[0] = 20.0
    assert limits.hit("k", "B") == 0.0
    assert limits.hit("k", "A") == pytest.approx(20.0)  # A has 2/3 of a token and the key is empty again
    clock[0] = 40.0
    assert limits.hit("k", "A") == 0.0  # refused requests charged nothing: A is back to a whole token


def test_buckets_hold_a_minute_at_most_and_zero_switches_a_limit_off() -> None:
    clock = [0.0]
    limits = RateLimiter(per_key_per_minute=0, per_client_per_minute=60, clock=lambda: clock[0])
    assert all(limits.hit("k", "A") == 0.0 for _ in range(60)) and limits.hit("k", "A") == pytest.approx(1.0)
    clock[0] = 3600.0  # an hour idle refills to 60, not 3,600
    assert sum(limits.hit("k", "A") == 0.0 for _ in range(100)) == 60
    assert all(RateLimiter(0, 0).hit("k", "A") == 0.0 for _ in range(1000))


def test_check_raises_rate_limited_with_the_wait() -> None:
    limits = RateLimiter(per_key_per_minute=1, per_client_per_minute=0, clock=lambda: 0.0)
    limits.check("k", "A")
    with pytest.raises(RateLimited, match="retry in 60 s") as refused:
        limits.check("k", "A")
    assert refused.value.retry_after == pytest.approx(60.0)


# -- scopes --------------------------------------------------------------------------------------
def test_scopes_nest() -> None:
    table = {(held, needed): allows(held, needed) for held in Scope for needed in Scope}
    assert [pair for pair, ok in table.items() if not ok] == [
        (Scope.SEARCH, Scope.INGEST), (Scope.SEARCH, Scope.ADMIN), (Scope.INGEST, Scope.ADMIN)]
    assert [s for s in Scope if may_assert_principals(s)] == [Scope.INGEST, Scope.ADMIN]
    with pytest.raises(ConfigError, match="admin, ingest, search"):
        parse_scope("read")


def key(scope: Scope, org: str = "acme") -> Identity:
    return Identity(Credential.KEY, scope, org, key_id=1)


def test_only_a_trusted_backend_may_assert_principals() -> None:
    assert key(Scope.INGEST).caller(None, ["team:hr"]).principals == {"team:hr"}
    assert key(Scope.ADMIN).caller("web", ["team:hr"]).agent == "web"
    assert key(Scope.SEARCH).caller(None, []).principals == frozenset()
    with pytest.raises(ScopeError, match="visitor token signed by your backend"):
        key(Scope.SEARCH).caller(None, ["team:hr"])
    visitor = Identity(Credential.VISITOR, Scope.SEARCH, "acme", frozenset({"team:support"}), agent="web", subject="u")
    assert visitor.caller(None, []).principals == {"team:support"}
    assert visitor.caller(None, []).agent == "web"  # "every agent" narrows to the token's
    with pytest.raises(ScopeError, match="come from the visitor token"):
        visitor.caller(None, ["team:hr"])
    with pytest.raises(ScopeError, match="for agent 'web'"):
        visitor.caller("intranet", [])


def test_route_requirements() -> None:
    assert key(Scope.INGEST).require(Scope.SEARCH) == "acme"
    with pytest.raises(ScopeError, match="may only search, ask and send feedback"):
        key(Scope.SEARCH).require(Scope.INGEST)
    with pytest.raises(ScopeError, match="scope 'admin'"):
        key(Scope.INGEST).require(Scope.ADMIN)
    admin_token = Identity(Credential.ADMIN_TOKEN, Scope.ADMIN, None)
    with pytest.raises(ScopeError, match="not their data"):
        admin_token.require(Scope.SEARCH)
    admin_token.require_admin_of("anything")
    admin_token.require_admin_token()
    key(Scope.ADMIN).require_admin_of("acme")
    with pytest.raises(ScopeError, match="another organisation"):
        key(Scope.ADMIN).require_admin_of("globex")
    with pytest.raises(ScopeError, match="cannot manage keys"):
        key(Scope.INGEST).require_admin_of("acme")
    with pytest.raises(ScopeError, match="ELECTA_ADMIN_TOKEN"):
        key(Scope.ADMIN).require_admin_token()
    assert key(Scope.SEARCH).rate_key == "key:1" and key(Scope.INGEST).rate_key is None


# -- resolving the Authorization header ----------------------------------------------------------
class FakeStore:
    def __init__(self) -> None:
        self.keys: dict[str, KeyRecord] = {}

    def api_key(self, key: str) -> KeyRecord | None:
        return self.keys.get(hash_key(key))

    def signing_secret(self, org: str) -> str | None:
        return SECRETS.get(org)


def test_authenticator_checks_state_on_every_request() -> None:
    store, clock = FakeStore(), [NOW]
    auth = Authenticator(store, "admin-secret-token", clock=lambda: clock[0])
    store.keys[hash_key("el_live")] = KeyRecord(1, "acme", "el_live", "", Scope.SEARCH, NOW, NOW + 60, False)
    assert auth.resolve("Bearer el_live") == Identity(Credential.KEY, Scope.SEARCH, "acme", key_id=1, subject="el_live")
    assert auth.resolve("Bearer admin-secret-token").kind is Credential.ADMIN_TOKEN
    clock[0] = NOW + 60
    with pytest.raises(AuthError, match="expired"):
        auth.resolve("Bearer el_live")
    clock[0] = NOW
    store.keys[hash_key("el_live")] = KeyRecord(1, "acme", "el_live", "", Scope.SEARCH, NOW, None, True)
    with pytest.raises(AuthError, match="revoked"):
        auth.resolve("Bearer el_live")
    for header in (None, "", "Bearer ", "Basic abc", "el_live"):
        with pytest.raises(AuthError, match="Authorization: Bearer"):
            auth.resolve(header)
    with pytest.raises(AuthError, match="unknown API key"):
        auth.resolve("Bearer el_nope")
    token = sign_visitor_token(SECRETS["acme"], "acme", "u-9", ["team:support"], ttl_s=60, now=NOW)
    who = auth.resolve(f"Bearer {token}")
    assert (who.kind, who.scope, who.org, who.principals, who.subject) == (
        Credential.VISITOR, Scope.SEARCH, "acme", {"team:support"}, "u-9")
    assert who.rate_key == "visitor:acme:u-9"


def test_parse_duration() -> None:
    assert [parse_duration(t) for t in ("90s", "15m", "12h", "30d", "2w", "45")] == [
        90, 900, 43200, 2592000, 1209600, 45]
    for bad in ("", "soon", "-5m", "0", "3y"):
        with pytest.raises(ConfigError, match="not a duration"):
            parse_duration(bad)


# -- the store -----------------------------------------------------------------------------------
def test_a_store_from_before_scopes_opens_and_its_keys_become_search_keys(tmp_path: Path) -> None:
    con = sqlite3.connect(tmp_path / "electa.db")
    con.executescript("""
        CREATE TABLE organisations(name TEXT PRIMARY KEY, created_at REAL NOT NULL);
        CREATE TABLE api_keys(
          id INTEGER PRIMARY KEY AUTOINCREMENT, org TEXT NOT NULL REFERENCES organisations(name) ON DELETE CASCADE,
          key_hash TEXT NOT NULL UNIQUE, prefix TEXT NOT NULL, created_at REAL NOT NULL,
          revoked INTEGER NOT NULL DEFAULT 0);""")
    con.execute("INSERT INTO organisations VALUES('acme', 1.0)")
    con.execute("INSERT INTO api_keys(org, key_hash, prefix, created_at) VALUES('acme', ?, 'el_old', 1.0)",
                (hash_key("el_old"),))
    con.commit()
    con.close()
    store = SqliteStore(tmp_path)
    old = store.api_key("el_old")
    assert old is not None and (old.scope, old.name, old.expires_at, old.revoked) == (Scope.SEARCH, "", None, False)
    key, record = store.add_api_key("acme", Scope.SEARCH, "widget", expires_at=time.time() + 60)
    assert store.api_key(key) == record and record.scope is Scope.SEARCH
    assert store.signing_secret("acme") is None
    secret = store.rotate_signing_secret("acme")
    store.close()
    again = SqliteStore(tmp_path)  # the migration is idempotent
    assert again.signing_secret("acme") == secret
    assert [r.prefix for r in again.api_keys("acme")] == ["el_old", key[:10]]
    assert again.revoke_api_key("acme", 1).revoked and again.org_for_key("el_old") is None
    again.close()


def test_store_key_errors_say_what_to_do(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    with pytest.raises(Exception, match="create it first"):
        store.add_api_key("nobody", Scope.SEARCH)
    store.add_organisation("acme")
    with pytest.raises(ConfigError, match="already past"):
        store.add_api_key("acme", Scope.SEARCH, expires_at=time.time() - 1)
    with pytest.raises(Exception, match="keys list --org acme"):
        store.revoke_api_key("acme", 99)
    store.close()


# -- the README's example ------------------------------------------------------------------------
def test_readme_security_example_signs_a_token_that_verifies() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Security model", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    namespace: dict[str, object] = {"ACME_SIGNING_SECRET": SECRETS["acme"],
                                    "visitor": SimpleNamespace(id="u-17", teams=["support"])}
    exec(compile(code.group(1), "README.md", "exec"), namespace)
    claims = verify_visitor_token(str(namespace["token"]), SECRETS.get)
    assert claims.org == "acme" and claims.sub == "u-17" and claims.principals == {"team:support"}

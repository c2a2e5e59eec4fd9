"""Who is calling: the ``Authorization`` header resolved into an :class:`Identity`, and the rules
an identity must pass for a route.

Three credentials, all sent as ``Authorization: Bearer <credential>``:

- the **admin token** (``ELECTA_ADMIN_TOKEN``): creates organisations and manages any
  organisation's keys and signing secret; it belongs to no organisation, so it reads no data;
- an **API key** (``el_…``): one organisation, one scope (see :mod:`electa.auth.scopes`);
- a **visitor token** (a JWT, see :mod:`electa.auth.tokens`): one organisation, ``search``
  scope, with the principals (and optionally the agent) its signature proves.

Example::

    auth = Authenticator(store, admin_token="…")
    who = auth.resolve("Bearer el_…")
    caller = who.caller(agent=None, asserted=())   # the Caller a search runs under
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from electa.auth.keys import KeyRecord
from electa.auth.scopes import Scope, allows, may_assert_principals
from electa.auth.tokens import looks_like_token, verify_visitor_token
from electa.errors import AuthError, ScopeError
from electa.types import Caller


class Credential(StrEnum):
    ADMIN_TOKEN = "admin-token"
    KEY = "key"
    VISITOR = "visitor"


@dataclass(frozen=True)
class Identity:
    """The resolved caller. ``org`` is None only for the admin token; ``principals`` and
    ``agent`` are what a visitor token proves (empty and None for keys)."""

    kind: Credential
    scope: Scope
    org: str | None
    principals: frozenset[str] = frozenset()
    agent: str | None = None
    key_id: int | None = None
    subject: str | None = None

    @property
    def conversation_owner(self) -> str | None:
        """Whose conversation ids must be server-issued (browser-facing credentials); None for
        an organisation's backend, which names its own."""
        if self.scope is not Scope.SEARCH:
            return None
        return f"key:{self.key_id}" if self.kind is Credential.KEY else f"visitor:{self.org}:{self.subject}"

    @property
    def rate_key(self) -> str | None:
        """The rate-limit bucket of a browser-facing credential; None for trusted ones (not limited)."""
        return self.conversation_owner

    def _name(self) -> str:
        return "visitor token" if self.kind is Credential.VISITOR else f"{self.scope.value} key"

    def require(self, needed: Scope) -> str:
        """The organisation whose data a route that needs ``needed`` may touch, or :class:`ScopeError`."""
        if self.org is None:
            raise ScopeError("the admin token manages organisations and keys, not their data;"
                             " call this route with one of the organisation's API keys")
        if not allows(self.scope, needed):
            can = "may only search, ask and send feedback" if self.scope is Scope.SEARCH else "may not do this"
            raise ScopeError(f"this {self._name()} {can}; this route needs a key of scope '{needed.value}'")
        return self.org

    def require_admin_token(self) -> None:
        if self.kind is not Credential.ADMIN_TOKEN:
            raise ScopeError("creating organisations needs the admin token (ELECTA_ADMIN_TOKEN),"
                             " or `electa orgs create NAME` on the server")

    def require_admin_of(self, org: str) -> None:
        """Managing ``org``'s keys and signing secret: the admin token, or an admin key of ``org``."""
        if self.kind is Credential.ADMIN_TOKEN:
            return
        if self.scope is not Scope.ADMIN:
            raise ScopeError(f"this {self._name()} cannot manage keys; use an admin key of {org!r} or the admin token")
        if self.org != org:
            raise ScopeError(f"this key belongs to another organisation, not {org!r}")

    def caller(self, agent: str | None, asserted: Iterable[str]) -> Caller:
        """The :class:`Caller` a search, ask or feedback runs under.

        ``asserted`` are the principals the request body names: believed from a trusted backend
        (ingest, admin), refused from a search key or a visitor token, whose principals come from
        its signature. A visitor token naming an agent narrows ``agent=None`` to it and refuses others.
        """
        org = self.require(Scope.SEARCH)
        named = frozenset(asserted)
        if named and not may_assert_principals(self.scope):
            if self.kind is Credential.VISITOR:
                raise ScopeError("principals come from the visitor token; leave 'principals' out of the body")
            raise ScopeError("a search key cannot assert principals (anyone can read it in page source);"
                             " send a visitor token signed by your backend (README: Security model)")
        if self.agent is not None:
            if agent is not None and agent != self.agent:
                raise ScopeError(f"this visitor token is for agent {self.agent!r}; send agent {self.agent!r}")
            agent = self.agent
        return Caller(org, agent, named | self.principals)


    def person(self, asserted: str | None) -> str | None:
        """Whose feedback personalises a search, and whom a vote or a history request is about
        (SPEC D3): a visitor token's subject (signed by the organisation's backend), or the
        ``user`` a trusted backend names. A search key names nobody: anyone can read it in page
        source, and naming a person would show (and steer) that person's affinities."""
        if self.kind is Credential.VISITOR:
            if asserted is not None and asserted != self.subject:
                raise ScopeError("the user comes from the visitor token's subject; leave 'user' out of the body")
            subject = self.subject or ""
            # A subject with control characters names nobody here (no store could key it alike).
            return subject if subject and not any(ord(c) < 32 or ord(c) == 127 for c in subject) else None
        if asserted is not None and self.scope is Scope.SEARCH:
            raise ScopeError("a search key cannot name a user (anyone can read it in page source);"
                             " send a visitor token signed by your backend (README: Security model)")
        return asserted or None


class CredentialStore(Protocol):
    def api_key(self, key: str) -> KeyRecord | None:
        """The record of ``key`` (found by its hash) in any state, or None."""

    def signing_secret(self, org: str) -> str | None:
        """``org``'s current visitor-token secret, or None (no such organisation, or none made)."""


class Authenticator:
    """Resolves ``Authorization`` headers against the store on every request (no cache, so a
    revoked or expired key fails at once). ``clock`` is injectable for tests."""

    def __init__(self, store: CredentialStore, admin_token: str | None, *, max_token_lifetime_s: float = 86400.0,
                 clock: Callable[[], float] = time.time) -> None:
        self.store, self.admin_token = store, admin_token
        self.max_token_lifetime_s, self.clock = max_token_lifetime_s, clock

    def resolve(self, authorization: str | None) -> Identity:
        if not authorization or not authorization.lower().startswith("bearer ") or not authorization[7:].strip():
            raise AuthError("send 'Authorization: Bearer <api key or visitor token>'")
        credential = authorization[7:].strip()
        if self.admin_token and hmac.compare_digest(credential.encode(), self.admin_token.encode()):
            return Identity(Credential.ADMIN_TOKEN, Scope.ADMIN, None)
        now = self.clock()
        if looks_like_token(credential):
            claims = verify_visitor_token(credential, self.store.signing_secret,
                                          max_lifetime_s=self.max_token_lifetime_s, now=now)
            return Identity(Credential.VISITOR, Scope.SEARCH, claims.org, claims.principals, claims.agent,
                            subject=claims.sub)
        record = self.store.api_key(credential)
        if record is None:
            raise AuthError("unknown API key")
        problem = record.problem(now)
        if problem:
            raise AuthError(problem)
        return Identity(Credential.KEY, record.scope, record.org, key_id=record.id, subject=record.prefix)

"""Visitor tokens: principals an organisation's backend proves for one visitor.

A search key lives in page source, so the principals a browser sends cannot be believed. The
organisation's backend, which knows who the visitor is, signs a short-lived JWT (RFC 7519)
with the organisation's signing secret (HS256, RFC 7518 §3.2), and the widget sends it as
``Authorization: Bearer <token>``. Electa verifies it and acts with ``search`` scope and the
token's principals.

Claims: ``org`` (required), ``sub`` (required: who the visitor is, for rate limits and logs),
``exp`` (required, Unix seconds), ``principals`` (list of strings, default none), ``iat``
(optional), ``agent`` (optional: the token is good for that agent only).

Refused, each with a short reason: not three dot-separated parts or not JSON (malformed), any
algorithm but HS256 (``none`` included), a signature that does not match the organisation's
current secret (forged, tampered, or signed before a rotation), an unknown organisation or one
with no secret, a missing or passed ``exp``, an ``iat`` in the future, a lifetime (``exp`` minus
``iat``, or minus now without ``iat``) over ``max_lifetime_s``. ``leeway_s`` forgives clock skew.

Example (the secret is the one ``POST /v1/orgs/{org}/signing-secret`` showed)::

    token = sign_visitor_token(secret, "acme", "user-17", ["team:support"], ttl_s=900)
"""

from __future__ import annotations

import math
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType

from electa.errors import AuthError, ConfigError

ALGORITHM = "HS256"
SECRET_PREFIX = "ess_"
MAX_PRINCIPALS = 100


def _jwt() -> ModuleType:
    try:
        import jwt
    except ImportError as exc:  # pragma: no cover - the server extra brings it
        raise ConfigError("visitor tokens need PyJWT: pip install 'electa[server]' (or pyjwt)") from exc
    return jwt


def new_signing_secret() -> str:
    """A random per-organisation secret: ``ess_`` + 43 URL-safe characters (32 bytes)."""
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def looks_like_token(credential: str) -> bool:
    """A JWT has three dot-separated parts; an API key has no dot."""
    return credential.count(".") == 2


@dataclass(frozen=True)
class VisitorClaims:
    org: str
    sub: str
    principals: frozenset[str]
    exp: float
    iat: float | None = None
    agent: str | None = None


def sign_visitor_token(secret: str, org: str, sub: str, principals: Sequence[str], ttl_s: float,
                       agent: str | None = None, *, now: float | None = None) -> str:
    """A visitor token for ``sub`` of ``org`` holding ``principals``, valid ``ttl_s`` seconds.

    For the organisation's backend (and tests); ``now`` is the issue time, default the clock.
    """
    if isinstance(principals, str):
        raise ConfigError("principals is a list of strings, e.g. ['team:support'], not one string")
    if not (ttl_s > 0):
        raise ConfigError(f"ttl_s must be positive, got {ttl_s}")
    issued = int(time.time() if now is None else now)
    claims: dict[str, object] = {"org": org, "sub": sub, "principals": list(principals),
                                 "iat": issued, "exp": issued + max(1, math.ceil(ttl_s))}
    if agent is not None:
        claims["agent"] = agent
    return str(_jwt().encode(claims, secret, algorithm=ALGORITHM))


def _number(claims: dict[str, object], name: str) -> float | None:
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise AuthError(f"visitor token claim {name!r} is not a number")
    return float(value)


def _text(claims: dict[str, object], name: str, required: bool) -> str | None:
    value = claims.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        raise AuthError(f"visitor token lacks the {name!r} claim" if value is None
                        else f"visitor token claim {name!r} is not a string")
    return value


def verify_visitor_token(token: str, secret_of: Callable[[str], str | None], *, max_lifetime_s: float = 86400.0,
                         now: float | None = None, leeway_s: float = 30.0) -> VisitorClaims:
    """The claims of a valid token, or :class:`AuthError` with a short reason.

    ``secret_of(org)`` returns that organisation's current signing secret, or None when the
    organisation does not exist or has none.
    """
    jwt = _jwt()
    try:
        header = jwt.get_unverified_header(token)
        unverified = jwt.decode(token, options={"verify_signature": False})
    except jwt.InvalidTokenError:
        raise AuthError("malformed visitor token") from None
    if header.get("alg") != ALGORITHM:
        raise AuthError(f"visitor token must be signed with {ALGORITHM}, not {header.get('alg')!r}")
    org = _text(unverified, "org", required=True)
    assert org is not None
    secret = secret_of(org)
    if secret is None:
        raise AuthError(f"visitor token names organisation {org!r}, which does not exist or has no signing secret")
    try:
        claims: dict[str, object] = jwt.decode(token, secret, algorithms=[ALGORITHM], options={
            "verify_exp": False, "verify_iat": False, "verify_nbf": False, "verify_aud": False, "verify_iss": False})
    except jwt.InvalidSignatureError:
        raise AuthError("visitor token signature does not match the organisation's current secret") from None
    except jwt.InvalidTokenError:
        raise AuthError("malformed visitor token") from None
    return _check_claims(claims, org, max_lifetime_s, time.time() if now is None else now, leeway_s)


def _check_claims(claims: dict[str, object], org: str, max_lifetime_s: float, now: float,
                  leeway_s: float) -> VisitorClaims:
    exp = _number(claims, "exp")
    if exp is None:
        raise AuthError("visitor token lacks the 'exp' claim; every token must expire")
    if now >= exp + leeway_s:
        raise AuthError("visitor token expired; ask the site for a new one")
    iat = _number(claims, "iat")
    if iat is not None and iat > now + leeway_s:
        raise AuthError("visitor token is issued in the future")
    nbf = _number(claims, "nbf")
    if nbf is not None and nbf > now + leeway_s:
        raise AuthError("visitor token is not valid yet")
    if exp - (iat if iat is not None else now) > max_lifetime_s + leeway_s:
        raise AuthError(f"visitor token lives longer than the {max_lifetime_s:g} s maximum; sign a shorter one")
    sub = _text(claims, "sub", required=True)
    agent = _text(claims, "agent", required=False)
    raw = claims.get("principals", [])
    if not isinstance(raw, list) or len(raw) > MAX_PRINCIPALS or not all(isinstance(p, str) and p for p in raw):
        raise AuthError(f"visitor token claim 'principals' must be a list of at most {MAX_PRINCIPALS} strings")
    assert sub is not None
    return VisitorClaims(org, sub, frozenset(raw), exp, iat, agent)

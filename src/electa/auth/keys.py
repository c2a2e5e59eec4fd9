"""API keys: the secret, its stored form, and its life (created, expires, revoked).

A key is ``el_`` followed by 43 URL-safe characters (32 random bytes). Only its SHA-256 is
stored, with a 10-character prefix to tell keys apart in listings, so a key is shown once, when
it is created. A key is usable until it is revoked or its expiry passes; the check runs on every
request against the store (no lookup cache), so a revoked key fails on its very next request.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass

from electa.auth.scopes import Scope
from electa.errors import ConfigError

KEY_PREFIX = "el_"


def new_key() -> str:
    """A fresh random key, ``el_`` + 43 URL-safe characters."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_key(key: str) -> str:
    """The stored form of a key: its SHA-256, hex.

    >>> hash_key("el_x")[:12]
    '24f2afa855f7'
    """
    return hashlib.sha256(key.encode()).hexdigest()


def display_prefix(key: str) -> str:
    return key[:10]


@dataclass(frozen=True)
class KeyRecord:
    """What the store keeps of a key (never the key itself)."""

    id: int
    org: str
    prefix: str
    name: str
    scope: Scope
    created_at: float
    expires_at: float | None
    revoked: bool

    def problem(self, now: float) -> str | None:
        """Why this key cannot be used at ``now``, or None when it can."""
        if self.revoked:
            return "this API key was revoked; ask the organisation's admin for a new one"
        if self.expires_at is not None and now >= self.expires_at:
            return "this API key has expired; ask the organisation's admin for a new one"
        return None

    def public(self, now: float) -> dict[str, object]:
        """The listing form: no secret, no hash."""
        status = "revoked" if self.revoked else "expired" if self.problem(now) else "active"
        return {"id": self.id, "org": self.org, "prefix": self.prefix, "name": self.name, "scope": self.scope.value,
                "created_at": self.created_at, "expires_at": self.expires_at, "revoked": self.revoked,
                "status": status}


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> float:
    """``"30d"``, ``"12h"``, ``"15m"``, ``"90s"`` or plain seconds, as seconds.

    >>> parse_duration("30d"), parse_duration("15m"), parse_duration("3600")
    (2592000.0, 900.0, 3600.0)
    """
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*", text.lower())
    if not found or float(found.group(1)) <= 0:
        raise ConfigError(f"{text!r} is not a duration; write e.g. 90s, 15m, 12h, 30d or 2w")
    return float(found.group(1)) * _UNITS[found.group(2) or "s"]

"""Electa's exceptions: one root, a few meaningful branches.

::

    ElectaError
    ├── ConfigError            a setting or a name is wrong (unknown leg, embedder, store…)
    ├── IngestError            a source could not be read; the batch goes on without it
    │   └── UnsupportedFormat  no loader handles this file type
    ├── StoreError             the data directory cannot be opened or written
    │   └── ModelMismatchError the index was built by another embedding model: run reindex
    ├── EmbedderUnavailable    an embedding model cannot be loaded (missing package/extra)
    │   └── ModelIntegrityError downloaded model bytes differ from the published size or SHA-256
    ├── JudgeError             a judge could not score (the previous order stands, and the stage says why)
    ├── NotFoundError          a source, document or agent that does not exist
    └── AuthError              no usable key or visitor token: missing, malformed, revoked, expired (401)
        ├── ScopeError         a valid key whose scope does not allow the request (403)
        └── RateLimited        too many requests for this key or client; ``retry_after`` seconds (429)

Every message says what was wrong and what to do next.
"""

from __future__ import annotations


class ElectaError(Exception):
    """Root of every error Electa raises on purpose."""


class ConfigError(ElectaError):
    """A setting, registry name or request parameter is invalid."""


class IngestError(ElectaError):
    """One source could not be ingested. Carries the offending path or id."""

    def __init__(self, source: str, reason: str) -> None:
        super().__init__(f"{source}: {reason}")
        self.source = source
        self.reason = reason


class UnsupportedFormat(IngestError):
    """No loader is registered for this kind of file."""


class ContentsOnly(IngestError):
    """The page is only a table of contents of other pages (a Sphinx toctree): no text of its
    own. A folder's ingest leaves it out, as it does a page that only redirects."""


class StoreError(ElectaError):
    """The store cannot be opened, read or written."""


class ModelMismatchError(StoreError):
    """The index holds vectors of another embedding model or dimension."""


class EmbedderUnavailable(ElectaError):
    """An embedding model's package or files are missing."""


class ModelIntegrityError(EmbedderUnavailable):
    """Joined model bytes whose size or SHA-256 is not the published one; nothing was installed."""


class JudgeError(ElectaError):
    """A judge's model or server could not score; the funnel keeps the previous order."""


class NotFoundError(ElectaError):
    """The named object does not exist."""


class AuthError(ElectaError):
    """The request carries no usable API key or visitor token (HTTP 401)."""


class ScopeError(AuthError):
    """The key or token is valid, but its scope or organisation does not allow this (HTTP 403)."""


class RateLimited(AuthError):
    """Too many requests for one key or one (key, client address); retry after ``retry_after`` s (HTTP 429)."""

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def unknown_name(family: str, name: str, valid: list[str]) -> ConfigError:
    """The error every registry raises for a name it does not know."""
    return ConfigError(f"unknown {family} {name!r}; valid names: {', '.join(sorted(valid))}")


def new_incident() -> str:
    """A short id that ties a client-facing error to its server log line."""
    import secrets

    return secrets.token_hex(6)

"""Scopes: what a key may do, modelled on Algolia's search-only / admin keys and Typesense's
scoped keys.

=========  ===================================================================================
scope      may
=========  ===================================================================================
admin      manage its organisation's keys and signing secret, and everything ``ingest`` may
ingest     sources (upload, list, delete), agents (GET/PUT), gaps, usage, probe, and search, ask,
           feedback; it is the organisation's trusted backend, so it may assert ``principals``
search     search, ask and feedback only: safe in a browser; it may never assert principals
           (a visitor token signed by the organisation's backend proves them instead)
=========  ===================================================================================

The scopes nest: admin ⊃ ingest ⊃ search.
"""

from __future__ import annotations

from enum import StrEnum


class Scope(StrEnum):
    SEARCH = "search"
    INGEST = "ingest"
    ADMIN = "admin"

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {Scope.SEARCH: 1, Scope.INGEST: 2, Scope.ADMIN: 3}

# The scope a key created before scopes existed is given by the schema migration. Those keys
# could do everything, and the one a widget used sits in page source: it must not keep write
# power. They become ``search`` keys; a backend that uploaded with one gets a 403 naming the
# scope it needs, and an admin creates it an ``ingest`` key (``electa keys create``).
LEGACY_SCOPE = Scope.SEARCH


def allows(held: Scope, needed: Scope) -> bool:
    """Whether a key of scope ``held`` may call a route that needs ``needed``.

    >>> allows(Scope.ADMIN, Scope.SEARCH), allows(Scope.SEARCH, Scope.INGEST)
    (True, False)
    """
    return held.rank >= needed.rank


def may_assert_principals(held: Scope) -> bool:
    """Only a trusted backend (``ingest`` or ``admin``) may name principals in a request body;
    a ``search`` key lives in page source, so anyone could send anything with it.

    >>> may_assert_principals(Scope.INGEST), may_assert_principals(Scope.SEARCH)
    (True, False)
    """
    return allows(held, Scope.INGEST)


def parse_scope(value: str) -> Scope:
    """``"search"`` -> ``Scope.SEARCH``; an unknown name lists the valid ones."""
    from electa.errors import unknown_name

    try:
        return Scope(value)
    except ValueError:
        raise unknown_name("scope", value, [s.value for s in Scope]) from None

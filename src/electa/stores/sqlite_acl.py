"""Access inside the full-text match (SPEC B8): each indexed row of the embedded store carries an
``acl`` column of opaque tokens (organisation, agent, ``public`` or principal tokens), and every
full-text query ANDs :func:`acl_filter` on it, so a row the caller may not see never becomes a
candidate. The PostgreSQL store writes the same tokens into each chunk's tsvector as weight-D
lexemes (:mod:`electa.stores.postgres.analysis`). :func:`access_json` is how both stores record
a source's access.
"""

from __future__ import annotations

import hashlib
import json

from electa.types import Access, Caller


def acl_token(kind: str, value: str) -> str:
    """An opaque FTS token for an access value: a letter and digits, which neither the unicode61
    tokenizer splits nor the Porter stemmer changes."""
    digest = hashlib.sha256(f"{kind}\x00{value}".encode()).hexdigest()[:15]
    return f"{kind}{int(digest, 16)}"


def acl_text(access: Access) -> str:
    parts = [acl_token("o", access.org), acl_token("a", access.agent)]
    if access.public:
        parts.append(acl_token("p", "public"))
    parts.extend(acl_token("m", p) for p in sorted(set(access.principals)))
    return " ".join(parts)


def acl_filter(caller: Caller, column: str = "acl") -> str:
    """The FTS5 expression a caller's query is ANDed with."""
    clause = f"{column}:{acl_token('o', caller.org)}"
    if caller.agent is not None:
        clause += f" AND {column}:{acl_token('a', caller.agent)}"
    readers = [acl_token("p", "public")] + [acl_token("m", p) for p in sorted(caller.principals)]
    return clause + " AND (" + " OR ".join(f"{column}:{t}" for t in readers) + ")"


def access_json(access: Access) -> str:
    """How a source's access is stored: principals sorted, so equal access reads equal."""
    return json.dumps({"org": access.org, "agent": access.agent, "public": bool(access.public),
                       "principals": sorted(set(access.principals))})

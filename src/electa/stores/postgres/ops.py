"""The PostgreSQL backend's operational tables: curated answers and Q&A pairs (read from the
index), feedback, per-agent settings, organisations and API keys, server secrets, content gaps,
usage and conversation turns (tables of ``migrations/0002_operational.sql``).

A mixin whose host provides ``db`` (:class:`PgDatabase`); the PostgreSQL twin of
:class:`electa.stores.sqlite_ops.OperationalTables`, with the same results, order and errors
(its pure helpers are reused, not copied). Text is ordered with ``COLLATE "C"`` (byte order, as
SQLite's BINARY), whatever the database's collation.

**Why each method sets its own wall.** Every statement here keeps its ``org = %s`` filter, and
runs in ``db.tx(org)`` for the organisation it serves, so row-level security is a second wall
behind the filter: a query whose filter were lost still sees one tenant. Only lookups that
cannot know the organisation beforehand say ``*``: a key found by its hash (``api_key``,
``org_for_key``), the list of ``organisations``, and ``server_secret`` (``meta``, no tenant).
None of these tables needs the writers' lock: it only orders the index's unit ids.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from electa.auth.keys import KeyRecord, display_prefix, hash_key, new_key
from electa.auth.scopes import Scope, parse_scope
from electa.auth.tokens import new_signing_secret
from electa.errors import ConfigError, NotFoundError
from electa.stores.postgres.connection import ALL_TENANTS, PgDatabase, holds_nul, matches_nothing_with_nul, nul_replaced
from electa.stores.sqlite_ops import PERSON_URLS, OperationalTables, check_org_name, normalise_trigger

_KEY_COLUMNS = OperationalTables._KEY_COLUMNS
_key_record = OperationalTables._key_record


class PgOperationalTables:
    db: PgDatabase

    # -- read from the index -------------------------------------------------------------------
    @matches_nothing_with_nul(lambda: None, "org")
    def curated_answer(self, question: str, org: str, allowed_ids: np.ndarray) -> tuple[str, str, str] | None:
        """``(trigger, answer, url)`` of a curated answer this caller may see whose trigger is the
        question, or a phrase of two words or more inside it (longest trigger wins; among equal
        lengths, the first stored, as the embedded store scans them)."""
        asked = normalise_trigger(question)
        if not asked:
            return None
        with self.db.tx(org) as con:
            rows = con.execute(
                "SELECT t.trigger, c.id, c.title, c.text,"
                ' (SELECT min(l.url COLLATE "C") FROM locations l WHERE l.document_id=c.document_id)'
                " FROM curated_triggers t JOIN chunks c ON c.id=t.chunk_id JOIN documents d ON d.id=c.document_id"
                " WHERE d.org=%s ORDER BY c.id", (org,)).fetchall()
        if not rows:
            return None
        visible = np.isin(np.array([r[1] for r in rows], dtype=np.int64), np.asarray(allowed_ids, dtype=np.int64))
        best: tuple[int, int, int] | None = None  # (length, -chunk id, -line of the trigger): highest wins
        found: tuple[str, str, str] | None = None
        for (trigger, chunk_id, title, answer, url), ok in zip(rows, visible.tolist(), strict=True):
            if not ok or not (trigger == asked or (" " in trigger and f" {trigger} " in f" {asked} ")):
                continue
            lines = [normalise_trigger(t) for t in title.split("\n") if t.strip()]
            key = (len(trigger), -chunk_id, -(lines.index(trigger) if trigger in lines else len(lines)))
            if best is None or key > best:
                best, found = key, (trigger, answer, url or "")
        return found

    @matches_nothing_with_nul(list, "org", "agent")
    def qa_pairs(self, org: str, agent: str) -> list[tuple[str, str, str]]:
        """``(question, answer, url)`` of the agent's curated pairs."""
        with self.db.tx(org) as con:
            rows = con.execute(
                'SELECT c.title, c.text, (SELECT min(l.url COLLATE "C") FROM locations l WHERE l.document_id=d.id)'
                " FROM chunks c JOIN documents d ON d.id=c.document_id"
                " WHERE d.org=%s AND d.agent=%s AND c.kind='qa' ORDER BY d.id, c.id", (org, agent)).fetchall()
        return [(t, x, u or "") for t, x, u in rows]

    # -- feedback, settings, secrets -------------------------------------------------------------
    @nul_replaced
    def add_feedback(self, org: str, agent: str, query: str, url: str, signal: int, origin: str = "backend",
                     voter: str = "", person: str = "") -> None:
        """Record a thumbs up (+1), a click (+1) or a thumbs down (-1) on ``url`` for ``query``;
        ``origin`` is ``backend`` or ``visitor`` (``voter`` names who, for visitors); ``person``
        the user it teaches personalisation about ('' for none)."""
        if origin not in ("backend", "visitor"):
            raise ConfigError(f"feedback origin {origin!r}; valid: backend, visitor")
        with self.db.tx(org) as con:
            con.execute("INSERT INTO feedback(org, agent, query, url, signal, created_at, origin, voter, person)"
                        " VALUES(%s,%s,%s,%s,%s,%s,%s,%s,%s)",
                        (org, agent, query, url, int(signal), time.time(), origin, voter, person))

    @matches_nothing_with_nul(list, "org", "agent", "person")
    def person_signals(self, org: str, agent: str | None, person: str) -> list[tuple[str, int]] | None:
        """``(url, net signal clipped to ±1)`` of ``person``'s feedback, newest first, at most
        :data:`PERSON_URLS`; None when the person opted out (see the embedded store)."""
        if not person:
            return []
        with self.db.tx(org) as con:
            row = con.execute("SELECT personalise FROM user_settings WHERE org=%s AND person=%s",
                              (org, person)).fetchone()
            if row is not None and not row[0]:
                return None
            agents = "" if agent is None else " AND agent=%s"
            rows = con.execute(
                f"SELECT url, greatest(-1, least(1, sum(signal))) FROM feedback WHERE org=%s AND person=%s{agents}"
                ' GROUP BY url ORDER BY max(created_at) DESC, url COLLATE "C" LIMIT %s',
                (org, person, *(() if agent is None else (agent,)), PERSON_URLS)).fetchall()
        return [(u, int(s)) for u, s in rows]

    def set_personalise(self, org: str, person: str, on: bool) -> None:
        """Opt ``person`` in (the default) or out of personalisation."""
        if holds_nul(person):
            raise ConfigError("a person's name cannot hold a NUL character")
        with self.db.tx(org) as con:
            con.execute("INSERT INTO user_settings VALUES(%s,%s,%s,%s) ON CONFLICT(org, person) DO UPDATE SET"
                        " personalise=excluded.personalise, updated_at=excluded.updated_at",
                        (org, person, bool(on), time.time()))

    @matches_nothing_with_nul(int, "org", "person")
    def forget_person(self, org: str, person: str) -> int:
        """Delete ``person``'s feedback in ``org``; their opt-out stays. Returns the rows deleted."""
        with self.db.tx(org) as con:
            return con.execute("DELETE FROM feedback WHERE org=%s AND person=%s", (org, person)).rowcount

    @matches_nothing_with_nul(list, "org", "agent")
    def feedback(self, org: str, agent: str, visitors: bool = False,
                 urls: Sequence[str] | None = None) -> list[tuple[str, str, int]]:
        """``(query, url, net signal)`` per query and URL (of ``urls`` only, when given), each
        voter counted at most once either way; visitors' feedback only when ``visitors``."""
        origins = ["backend", "visitor"] if visitors else ["backend"]
        # No stored text holds NUL (PostgreSQL refuses it), so such a URL matches nothing.
        wanted = sorted({u for u in urls or () if not holds_nul(u)})
        if urls is not None and not wanted:
            return []
        only = " AND url = ANY(%s)" if urls is not None else ""
        with self.db.tx(org) as con:
            rows = con.execute(
                "SELECT query, url, sum(vote) FROM (SELECT query, url, greatest(-1, least(1, sum(signal))) AS vote"
                f" FROM feedback WHERE org=%s AND agent=%s AND origin = ANY(%s){only} GROUP BY query, url, origin, voter) v"
                ' GROUP BY query, url ORDER BY query COLLATE "C", url COLLATE "C"',
                (org, agent, origins, *((wanted,) if urls is not None else ()))).fetchall()
        return [(q, u, int(s)) for q, u, s in rows]

    @matches_nothing_with_nul(lambda: None, "org", "agent")
    def agent_settings(self, org: str, agent: str) -> dict[str, object] | None:
        with self.db.tx(org) as con:
            row = con.execute("SELECT settings FROM agent_settings WHERE org=%s AND agent=%s", (org, agent)).fetchone()
        return None if row is None else dict(row[0])

    def set_agent_settings(self, org: str, agent: str, settings: dict[str, object]) -> None:
        """Store an agent's settings (cached results are keyed by their digest; ``generation``
        does not move)."""
        with self.db.tx(org) as con:
            con.execute("INSERT INTO agent_settings VALUES(%s,%s,%s::json,%s) ON CONFLICT(org, agent) DO UPDATE SET"
                        " settings=excluded.settings, updated_at=excluded.updated_at",
                        (org, agent, json.dumps(settings), time.time()))

    def org_settings(self) -> dict[str, dict[str, object]]:
        with self.db.tx(ALL_TENANTS) as con:
            return {org: dict(s) for org, s in con.execute("SELECT org, settings FROM org_settings").fetchall()}

    def set_org_settings(self, org: str, settings: dict[str, object]) -> None:
        check_org_name(org)
        if holds_nul(org):
            raise ConfigError("an organisation's name cannot hold a NUL character")
        with self.db.tx(org, write=True) as con:
            con.execute("INSERT INTO org_settings VALUES(%s,%s::json,%s) ON CONFLICT(org) DO UPDATE SET"
                        " settings=excluded.settings, updated_at=excluded.updated_at",
                        (org, json.dumps(settings), time.time()))
            # The generation moves (every cache and image follows it); the removal log is not
            # trimmed here: a settings write removes no unit.
            con.execute("UPDATE meta SET value = (value::bigint + 1)::text WHERE key='generation'")

    def server_secret(self, name: str) -> bytes:
        """A random 32-byte secret of this database, made on first use and kept in ``meta``:
        the first writer's value wins, whichever process it is (INSERT ... ON CONFLICT DO
        NOTHING waits for a concurrent insert of the key, and the next statement sees it)."""
        with self.db.tx(ALL_TENANTS) as con:
            con.execute("INSERT INTO meta VALUES(%s, %s) ON CONFLICT(key) DO NOTHING",
                        (f"secret:{name}", secrets.token_hex(32)))
            value = con.execute("SELECT value FROM meta WHERE key=%s", (f"secret:{name}",)).fetchone()[0]
        return bytes.fromhex(value)

    # -- organisations, API keys ---------------------------------------------------------------
    def add_organisation(self, name: str) -> None:
        check_org_name(name)
        with self.db.tx(name) as con:
            con.execute("INSERT INTO organisations(name, created_at) VALUES(%s, %s) ON CONFLICT(name) DO NOTHING",
                        (name, time.time()))

    def organisations(self) -> list[str]:
        with self.db.tx(ALL_TENANTS) as con:
            return [r[0] for r in con.execute('SELECT name FROM organisations ORDER BY name COLLATE "C"')]

    @staticmethod
    def _no_such_org_if_nul(org: str) -> None:
        """An organisation named with NUL cannot exist here (PostgreSQL text never holds one)."""
        if holds_nul(org):
            raise NotFoundError(f"no organisation {org!r}; create it first (POST /v1/orgs or `electa orgs create`)")

    @staticmethod
    def _require_org(con: Any, org: str) -> None:
        if con.execute("SELECT 1 FROM organisations WHERE name=%s", (org,)).fetchone() is None:
            raise NotFoundError(f"no organisation {org!r}; create it first (POST /v1/orgs or `electa orgs create {org}`)")

    def add_api_key(self, org: str, scope: Scope | str, name: str = "",
                    expires_at: float | None = None) -> tuple[str, KeyRecord]:
        """A new key of ``scope`` for ``org`` and its record; only its SHA-256 is stored, so the key is shown once."""
        self._no_such_org_if_nul(org)
        with self.db.tx(org) as con:
            self._require_org(con, org)
            now = time.time()
            if expires_at is not None and expires_at <= now:
                raise ConfigError("the key's expiry is already past; give a time in the future")
            key, scope = new_key(), parse_scope(scope)
            row = con.execute("INSERT INTO api_keys(org, key_hash, prefix, created_at, scope, name, expires_at)"
                              " VALUES(%s,%s,%s,%s,%s,%s,%s) RETURNING id",
                              (org, hash_key(key), display_prefix(key), now, scope.value, name, expires_at)).fetchone()
        return key, KeyRecord(int(row[0]), org, display_prefix(key), name, scope, now, expires_at, False)

    @matches_nothing_with_nul(lambda: None, "key")
    def api_key(self, key: str) -> KeyRecord | None:
        """The record of ``key``, found by its hash, whatever its state (revoked, expired)."""
        with self.db.tx(ALL_TENANTS) as con:
            row = con.execute(f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE key_hash=%s", (hash_key(key),)).fetchone()
        return None if row is None else _key_record(row)

    def api_keys(self, org: str) -> list[KeyRecord]:
        self._no_such_org_if_nul(org)
        with self.db.tx(org) as con:
            self._require_org(con, org)
            rows = con.execute(f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE org=%s ORDER BY id", (org,)).fetchall()
        return [_key_record(r) for r in rows]

    def revoke_api_key(self, org: str, key_id: int) -> KeyRecord:
        """Revoke a key of ``org`` (for good: a revoked key is never valid again)."""
        self._no_such_org_if_nul(org)
        with self.db.tx(org) as con:
            row = con.execute(f"UPDATE api_keys SET revoked=true WHERE org=%s AND id=%s RETURNING {_KEY_COLUMNS}",
                              (org, key_id)).fetchone()
        if row is None:
            raise NotFoundError(f"organisation {org!r} has no key {key_id}; `electa keys list --org {org}` lists them")
        return _key_record(row)

    @matches_nothing_with_nul(lambda: None, "key")
    def org_for_key(self, key: str) -> str | None:
        """The organisation of a usable key (not revoked, not expired), or None."""
        record = self.api_key(key)
        return None if record is None or record.problem(time.time()) else record.org

    @matches_nothing_with_nul(lambda: None, "org")
    def signing_secret(self, org: str) -> str | None:
        """``org``'s visitor-token secret (kept in clear: HMAC needs it), or None."""
        with self.db.tx(org) as con:
            row = con.execute("SELECT signing_secret FROM organisations WHERE name=%s", (org,)).fetchone()
        return None if row is None or row[0] is None else str(row[0])

    def rotate_signing_secret(self, org: str) -> str:
        """A new random secret for ``org``'s visitor tokens; tokens signed with the old one stop working."""
        secret = new_signing_secret()
        self._no_such_org_if_nul(org)
        with self.db.tx(org) as con:
            self._require_org(con, org)
            con.execute("UPDATE organisations SET signing_secret=%s WHERE name=%s", (secret, org))
        return secret

    # -- gaps, turns, usage --------------------------------------------------------------------
    @nul_replaced
    def add_gap(self, org: str, agent: str, question: str, confidence: float, reason: str) -> None:
        with self.db.tx(org) as con:
            con.execute("INSERT INTO gaps(org, agent, question, confidence, reason, created_at)"
                        " VALUES(%s,%s,%s,%s,%s,%s)", (org, agent, question, confidence, reason, time.time()))

    @matches_nothing_with_nul(list, "org", "agent")
    def gaps(self, org: str, agent: str | None = None) -> list[dict[str, object]]:
        sql = "SELECT agent, question, confidence, reason, created_at FROM gaps WHERE org=%s"
        params: list[object] = [org]
        if agent is not None:
            sql += " AND agent=%s"
            params.append(agent)
        cols = ("agent", "question", "confidence", "reason", "created_at")
        with self.db.tx(org) as con:
            rows = con.execute(sql + " ORDER BY id DESC LIMIT 500", params).fetchall()
        return [dict(zip(cols, r, strict=True)) for r in rows]

    @nul_replaced
    def add_turn(self, org: str, agent: str, conversation: str, question: str, answer: str,
                 citations: list[object], confidence: float) -> None:
        with self.db.tx(org) as con:
            con.execute("INSERT INTO turns(org, agent, conversation, question, answer, citations, confidence, created_at)"
                        " VALUES(%s,%s,%s,%s,%s,%s::jsonb,%s,%s)",
                        (org, agent, conversation, question, answer, json.dumps(citations), confidence, time.time()))

    @matches_nothing_with_nul(list, "org", "agent", "conversation")
    def recent_turns(self, org: str, agent: str, conversation: str, limit: int = 6) -> list[tuple[str, str]]:
        """The last ``limit`` (question, answer) pairs of a conversation, oldest first."""
        with self.db.tx(org) as con:
            rows = con.execute("SELECT question, answer FROM turns WHERE org=%s AND agent=%s AND conversation=%s"
                               " ORDER BY id DESC LIMIT %s", (org, agent, conversation, None if limit < 0 else limit)).fetchall()
        return [(q, a) for q, a in reversed(rows)]

    @nul_replaced
    def count_usage(self, org: str, agent: str, answer_chars: int) -> None:
        day = time.strftime("%Y-%m-%d", time.gmtime())
        with self.db.tx(org) as con:
            con.execute("INSERT INTO usage VALUES(%s,%s,%s,1,%s) ON CONFLICT(org, agent, day) DO UPDATE SET"
                        " questions=usage.questions+1, answer_chars=usage.answer_chars+excluded.answer_chars",
                        (org, agent, day, answer_chars))

    @matches_nothing_with_nul(list, "org")
    def usage(self, org: str) -> list[dict[str, object]]:
        cols = ("agent", "day", "questions", "answer_chars")
        with self.db.tx(org) as con:
            rows = con.execute("SELECT agent, day, questions, answer_chars FROM usage WHERE org=%s"
                               ' ORDER BY day COLLATE "C" DESC, agent COLLATE "C"', (org,)).fetchall()
        return [dict(zip(cols, r, strict=True)) for r in rows]

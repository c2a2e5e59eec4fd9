"""The store's operational tables: curated triggers, feedback, per-agent settings,
organisations and API keys, content gaps, usage and conversation turns.

A mixin of :class:`electa.stores.sqlite.SqliteStore` (:class:`~electa.stores.sqlite_tables.StoreTables`
says what it reads of it); kept apart so the index-keeping half of the store stays readable.
"""

from __future__ import annotations

import json
import sqlite3
import time
import unicodedata
from collections.abc import Sequence
from typing import Any

import numpy as np

from electa.auth.keys import KeyRecord, display_prefix, hash_key, new_key
from electa.auth.scopes import LEGACY_SCOPE, Scope, parse_scope
from electa.auth.tokens import new_signing_secret
from electa.errors import ConfigError, NotFoundError
from electa.stores.sqlite_tables import StoreTables
from electa.text import tokens

# The most URLs of one person's history that personalisation reads (the most recent).
PERSON_URLS = 500

# Columns added after a table first shipped, added in place when a store opens without them
# (SQLite's ALTER TABLE ... ADD COLUMN: cheap, keeps every row). Keys made before scopes existed
# become ``search`` keys (see electa.auth.scopes.LEGACY_SCOPE); new keys always name a scope.
ADDED_COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "api_keys": (("scope", f"TEXT NOT NULL DEFAULT '{LEGACY_SCOPE.value}'"), ("name", "TEXT NOT NULL DEFAULT ''"),
                 ("expires_at", "REAL")),
    "organisations": (("signing_secret", "TEXT"),),
    # Who gave feedback: the organisation's backend, or a visitor through a browser-facing credential.
    "feedback": (("origin", "TEXT NOT NULL DEFAULT 'backend'"), ("voter", "TEXT NOT NULL DEFAULT ''"),
                 # The person it is about, for personalisation (SPEC D3): '' for none.
                 ("person", "TEXT NOT NULL DEFAULT ''")),
    # The language a document is written in (issue 14): '' for none detected, or not yet read.
    "documents": (("lang", "TEXT NOT NULL DEFAULT ''"),),
}


def _missing_columns(con: sqlite3.Connection) -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []
    for table, columns in ADDED_COLUMNS.items():
        present = {row[1] for row in con.execute(f"PRAGMA table_info({table})")}
        out.extend((table, name, decl) for name, decl in columns if name not in present)
    return out


def add_missing_columns(con: sqlite3.Connection) -> None:
    """Bring an older store's operational tables up to date (idempotent; safe when two processes
    open the same store at once: the check is repeated under SQLite's write lock)."""
    if not _missing_columns(con):
        return
    con.execute("BEGIN IMMEDIATE")
    try:
        for table, name, decl in _missing_columns(con):
            con.execute(f"ALTER TABLE {table} ADD COLUMN {name} {decl}")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def check_org_name(name: str) -> None:
    """Refuse names that mean something else to a store: empty, or ``*`` (every tenant); and a
    name with spaces around it, which would be another organisation than the one it shows."""
    if not name.strip() or name.strip() == "*":
        raise ConfigError(f"{name!r} cannot name an organisation: give a non-empty name other than '*'")
    if name != name.strip():
        raise ConfigError(f"{name!r} cannot name an organisation: remove the spaces around it")
    if any(unicodedata.category(c)[0] == "C" for c in name):
        # (a zero-width space makes a second "acme" that reads the same)
        raise ConfigError(f"{name!r} cannot name an organisation: it holds an invisible or control character")


def normalise_trigger(text: str) -> str:
    """Trigger and question compared as folded words: "Opening hours?" == "opening hours"; a
    script written without spaces as its characters, so a trigger is found inside a question."""
    return " ".join(tokens(text, pairs=False))


class OperationalTables(StoreTables):
    def curated_answer(self, question: str, org: str, allowed_ids: np.ndarray) -> tuple[str, str, str] | None:
        """``(trigger, answer, url)`` of a curated answer this caller may see whose trigger is the
        question, or a phrase of two words or more inside it (longest trigger wins)."""
        asked = normalise_trigger(question)
        if not asked:
            return None
        rows = self.con.execute(
            "SELECT t.trigger, c.id, c.text, (SELECT min(l.url) FROM locations l WHERE l.document_id=c.document_id)"
            " FROM curated_triggers t JOIN chunks c ON c.id=t.chunk_id JOIN documents d ON d.id=c.document_id"
            " WHERE d.org=?", (org,)).fetchall()
        allowed = set(allowed_ids.tolist())
        best: tuple[str, str, str] | None = None
        for trigger, chunk_id, answer, url in rows:
            if chunk_id not in allowed:
                continue
            matches = trigger == asked or (" " in trigger and f" {trigger} " in f" {asked} ")
            if matches and (best is None or len(trigger) > len(best[0])):
                best = (trigger, answer, url or "")
        return best

    def add_feedback(self, org: str, agent: str, query: str, url: str, signal: int, origin: str = "backend",
                     voter: str = "", person: str = "") -> None:
        """Record a thumbs up (+1), a click (+1) or a thumbs down (-1) on ``url`` for ``query``.
        ``origin`` is ``backend`` (the organisation: CLI, ingest key) or ``visitor`` (a search key
        or visitor token, i.e. anyone on the web); ``voter`` names who, for visitors; ``person``
        the user it teaches personalisation about (none: '')."""
        if origin not in ("backend", "visitor"):
            raise ConfigError(f"feedback origin {origin!r}; valid: backend, visitor")
        with self.transaction() as con:
            con.execute("INSERT INTO feedback(org, agent, query, url, signal, created_at, origin, voter, person)"
                        " VALUES(?,?,?,?,?,?,?,?,?)",
                        (org, agent, query, url, int(signal), time.time(), origin, voter, person))

    def person_signals(self, org: str, agent: str | None, person: str) -> list[tuple[str, int]] | None:
        """``(url, net signal clipped to ±1)`` of ``person``'s feedback in ``org`` (one agent's, or
        every agent's with None), newest first, at most :data:`PERSON_URLS`; None when the person
        opted out of personalisation."""
        if not person:
            return []
        con = self.con
        row = con.execute("SELECT personalise FROM user_settings WHERE org=? AND person=?", (org, person)).fetchone()
        if row is not None and not row[0]:
            return None
        agents = "" if agent is None else " AND agent=?"
        return [(u, int(s)) for u, s in con.execute(
            f"SELECT url, max(-1, min(1, sum(signal))) FROM feedback WHERE org=? AND person=?{agents}"
            " GROUP BY url ORDER BY max(created_at) DESC, url LIMIT ?",
            (org, person, *(() if agent is None else (agent,)), PERSON_URLS))]

    def set_personalise(self, org: str, person: str, on: bool) -> None:
        """Opt ``person`` in (the default) or out of personalisation."""
        with self.transaction() as con:
            con.execute("INSERT INTO user_settings VALUES(?,?,?,?) ON CONFLICT(org, person) DO UPDATE SET"
                        " personalise=excluded.personalise, updated_at=excluded.updated_at",
                        (org, person, int(on), time.time()))

    def forget_person(self, org: str, person: str) -> int:
        """Delete ``person``'s feedback in ``org`` (what they asked is theirs: it leaves the golden
        sets too). Their opt-out stays. Returns the rows deleted."""
        with self.transaction() as con:
            return con.execute("DELETE FROM feedback WHERE org=? AND person=?", (org, person)).rowcount

    def feedback(self, org: str, agent: str, visitors: bool = False,
                 urls: Sequence[str] | None = None) -> list[tuple[str, str, int]]:
        """``(query, url, net signal)`` per query and URL (of ``urls`` only, when given), each
        voter counted at most once either way. Visitors' feedback (anyone holding the page's
        search key) is left out unless ``visitors``: it would let the public steer what `tune
        --agent` learns."""
        origins = ("backend", "visitor") if visitors else ("backend",)
        marks = ",".join("?" * len(origins))
        wanted = sorted(set(urls or ()))  # a ranker's hits: at most 1,000 (LtrModel.from_dict)
        if urls is not None and not wanted:
            return []
        only = f" AND url IN ({','.join('?' * len(wanted))})" if urls is not None else ""
        return [(q, u, int(s)) for q, u, s in self.con.execute(
            "SELECT query, url, sum(vote) FROM (SELECT query, url, max(-1, min(1, sum(signal))) AS vote FROM feedback"
            f" WHERE org=? AND agent=? AND origin IN ({marks}){only} GROUP BY query, url, origin, voter)"
            " GROUP BY query, url ORDER BY query, url", (org, agent, *origins, *wanted))]

    def qa_pairs(self, org: str, agent: str) -> list[tuple[str, str, str]]:
        """``(question, answer, url)`` of the agent's curated pairs."""
        return [(t, x, u or "") for t, x, u in self.con.execute(
            "SELECT c.title, c.text, (SELECT min(l.url) FROM locations l WHERE l.document_id=d.id)"
            " FROM chunks c JOIN documents d ON d.id=c.document_id WHERE d.org=? AND d.agent=? AND c.kind='qa'",
            (org, agent))]

    def agent_settings(self, org: str, agent: str) -> dict[str, object] | None:
        row = self.con.execute("SELECT settings FROM agent_settings WHERE org=? AND agent=?", (org, agent)).fetchone()
        return None if row is None else dict(json.loads(row[0]))

    def set_agent_settings(self, org: str, agent: str, settings: dict[str, object]) -> None:
        """Store an agent's settings. They change what its searches and answers return; every
        cached result is keyed by a digest of the settings it was made with, so none survives
        a change (the store's generation, which rebuilds the indexes' images, does not move)."""
        with self.transaction() as con:
            con.execute("INSERT INTO agent_settings VALUES(?,?,?,?) ON CONFLICT(org, agent) DO UPDATE SET"
                        " settings=excluded.settings, updated_at=excluded.updated_at",
                        (org, agent, json.dumps(settings), time.time()))

    def org_settings(self) -> dict[str, dict[str, object]]:
        return {org: dict(json.loads(s)) for org, s in self.con.execute("SELECT org, settings FROM org_settings")}

    def set_org_settings(self, org: str, settings: dict[str, object]) -> None:
        check_org_name(org)
        with self.transaction() as con:
            con.execute("INSERT INTO org_settings VALUES(?,?,?) ON CONFLICT(org) DO UPDATE SET"
                        " settings=excluded.settings, updated_at=excluded.updated_at",
                        (org, json.dumps(settings), time.time()))
            self._bump(con)

    def server_secret(self, name: str) -> bytes:
        """A random 32-byte secret of this data directory, made on first use and kept in
        ``meta`` (every process serving the directory shares it)."""
        import secrets

        with self.transaction() as con:
            con.execute("INSERT OR IGNORE INTO meta VALUES(?, ?)", (f"secret:{name}", secrets.token_hex(32)))
            value = con.execute("SELECT value FROM meta WHERE key=?", (f"secret:{name}",)).fetchone()[0]
        return bytes.fromhex(value)

    # -- organisations, API keys, gaps, usage --------------------------------------------------
    def add_organisation(self, name: str) -> None:
        check_org_name(name)
        with self.transaction() as con:
            con.execute("INSERT OR IGNORE INTO organisations(name, created_at) VALUES(?, ?)", (name, time.time()))

    def organisations(self) -> list[str]:
        return [r[0] for r in self.con.execute("SELECT name FROM organisations ORDER BY name")]

    def _require_org(self, org: str) -> None:
        if self.con.execute("SELECT 1 FROM organisations WHERE name=?", (org,)).fetchone() is None:
            raise NotFoundError(f"no organisation {org!r}; create it first (POST /v1/orgs or `electa orgs create {org}`)")

    def add_api_key(self, org: str, scope: Scope | str, name: str = "",
                    expires_at: float | None = None) -> tuple[str, KeyRecord]:
        """A new key of ``scope`` for ``org`` and its record; only its SHA-256 is stored, so the key is shown once."""
        self._require_org(org)
        now = time.time()
        if expires_at is not None and expires_at <= now:
            raise ConfigError("the key's expiry is already past; give a time in the future")
        key, scope = new_key(), parse_scope(scope)
        with self.transaction() as con:
            cur = con.execute("INSERT INTO api_keys(org, key_hash, prefix, created_at, scope, name, expires_at)"
                              " VALUES(?,?,?,?,?,?,?)", (org, hash_key(key), display_prefix(key), now, scope.value, name,
                                                         expires_at))
        return key, KeyRecord(int(cur.lastrowid or 0), org, display_prefix(key), name, scope, now, expires_at, False)

    _KEY_COLUMNS = "id, org, prefix, name, scope, created_at, expires_at, revoked"

    @staticmethod
    def _key_record(row: tuple[Any, ...]) -> KeyRecord:
        id_, org, prefix, name, scope, created, expires, revoked = row
        return KeyRecord(int(id_), str(org), str(prefix), str(name), Scope(scope), float(created),
                         None if expires is None else float(expires), bool(revoked))

    def api_key(self, key: str) -> KeyRecord | None:
        """The record of ``key``, found by its hash, whatever its state (revoked, expired)."""
        row = self.con.execute(f"SELECT {self._KEY_COLUMNS} FROM api_keys WHERE key_hash=?", (hash_key(key),)).fetchone()
        return None if row is None else self._key_record(row)

    def api_keys(self, org: str) -> list[KeyRecord]:
        self._require_org(org)
        return [self._key_record(r) for r in self.con.execute(
            f"SELECT {self._KEY_COLUMNS} FROM api_keys WHERE org=? ORDER BY id", (org,))]

    def revoke_api_key(self, org: str, key_id: int) -> KeyRecord:
        """Revoke a key of ``org`` (for good: a revoked key is never valid again)."""
        with self.transaction() as con:
            if con.execute("UPDATE api_keys SET revoked=1 WHERE org=? AND id=?", (org, key_id)).rowcount == 0:
                raise NotFoundError(f"organisation {org!r} has no key {key_id}; `electa keys list --org {org}` lists them")
        row = self.con.execute(f"SELECT {self._KEY_COLUMNS} FROM api_keys WHERE id=?", (key_id,)).fetchone()
        return self._key_record(row)

    def org_for_key(self, key: str) -> str | None:
        """The organisation of a usable key (not revoked, not expired), or None."""
        record = self.api_key(key)
        return None if record is None or record.problem(time.time()) else record.org

    def signing_secret(self, org: str) -> str | None:
        """``org``'s visitor-token secret (kept in clear: HMAC needs it), or None."""
        row = self.con.execute("SELECT signing_secret FROM organisations WHERE name=?", (org,)).fetchone()
        return None if row is None or row[0] is None else str(row[0])

    def rotate_signing_secret(self, org: str) -> str:
        """A new random secret for ``org``'s visitor tokens; tokens signed with the old one stop working."""
        self._require_org(org)
        secret = new_signing_secret()
        with self.transaction() as con:
            con.execute("UPDATE organisations SET signing_secret=? WHERE name=?", (secret, org))
        return secret

    def add_gap(self, org: str, agent: str, question: str, confidence: float, reason: str) -> None:
        with self.transaction() as con:
            con.execute("INSERT INTO gaps(org, agent, question, confidence, reason, created_at) VALUES(?,?,?,?,?,?)",
                        (org, agent, question, confidence, reason, time.time()))

    def gaps(self, org: str, agent: str | None = None) -> list[dict[str, object]]:
        sql = "SELECT agent, question, confidence, reason, created_at FROM gaps WHERE org=?"
        params: list[object] = [org]
        if agent is not None:
            sql += " AND agent=?"
            params.append(agent)
        cols = ("agent", "question", "confidence", "reason", "created_at")
        return [dict(zip(cols, r, strict=True)) for r in self.con.execute(sql + " ORDER BY id DESC LIMIT 500", params)]

    def add_turn(self, org: str, agent: str, conversation: str, question: str, answer: str,
                 citations: list[object], confidence: float) -> None:
        with self.transaction() as con:
            con.execute("INSERT INTO turns(org, agent, conversation, question, answer, citations, confidence, created_at)"
                        " VALUES(?,?,?,?,?,?,?,?)", (org, agent, conversation, question, answer, json.dumps(citations),
                                                     confidence, time.time()))

    def recent_turns(self, org: str, agent: str, conversation: str, limit: int = 6) -> list[tuple[str, str]]:
        """The last ``limit`` (question, answer) pairs of a conversation, oldest first."""
        rows = self.con.execute("SELECT question, answer FROM turns WHERE org=? AND agent=? AND conversation=?"
                                " ORDER BY id DESC LIMIT ?", (org, agent, conversation, limit)).fetchall()
        return [(q, a) for q, a in reversed(rows)]

    def count_usage(self, org: str, agent: str, answer_chars: int) -> None:
        day = time.strftime("%Y-%m-%d", time.gmtime())
        with self.transaction() as con:
            con.execute("INSERT INTO usage VALUES(?,?,?,1,?) ON CONFLICT(org, agent, day) DO UPDATE SET"
                        " questions=questions+1, answer_chars=answer_chars+excluded.answer_chars",
                        (org, agent, day, answer_chars))

    def usage(self, org: str) -> list[dict[str, object]]:
        cols = ("agent", "day", "questions", "answer_chars")
        return [dict(zip(cols, r, strict=True)) for r in self.con.execute(
            "SELECT agent, day, questions, answer_chars FROM usage WHERE org=? ORDER BY day DESC, agent", (org,))]

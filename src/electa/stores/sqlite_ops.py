"""The store's operational tables: curated triggers, feedback, per-agent settings,
organisations and API keys, content gaps, usage and conversation turns.

A mixin of :class:`electa.stores.sqlite.SqliteStore`, which provides ``con`` and
``transaction()``; kept apart so the index-keeping half of the store stays readable.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from contextlib import AbstractContextManager

import numpy as np

from electa.errors import NotFoundError
from electa.text import tokens


def normalise_trigger(text: str) -> str:
    """Trigger and question compared as folded words: "Opening hours?" == "opening hours"."""
    return " ".join(tokens(text))


class OperationalTables:
    @property
    def con(self) -> sqlite3.Connection:
        raise NotImplementedError

    def transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

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

    def add_feedback(self, org: str, agent: str, query: str, url: str, signal: int) -> None:
        """Record a thumbs up (+1), a click (+1) or a thumbs down (-1) on ``url`` for ``query``."""
        with self.transaction() as con:
            con.execute("INSERT INTO feedback(org, agent, query, url, signal, created_at) VALUES(?,?,?,?,?,?)",
                        (org, agent, query, url, int(signal), time.time()))

    def feedback(self, org: str, agent: str) -> list[tuple[str, str, int]]:
        """``(query, url, net signal)`` per query and URL."""
        return [(q, u, int(s)) for q, u, s in self.con.execute(
            "SELECT query, url, sum(signal) FROM feedback WHERE org=? AND agent=? GROUP BY query, url ORDER BY query, url",
            (org, agent))]

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
        with self.transaction() as con:
            con.execute("INSERT INTO agent_settings VALUES(?,?,?,?) ON CONFLICT(org, agent) DO UPDATE SET"
                        " settings=excluded.settings, updated_at=excluded.updated_at",
                        (org, agent, json.dumps(settings), time.time()))

    # -- organisations, API keys, gaps, usage --------------------------------------------------
    def add_organisation(self, name: str) -> None:
        with self.transaction() as con:
            con.execute("INSERT OR IGNORE INTO organisations VALUES(?, ?)", (name, time.time()))

    def organisations(self) -> list[str]:
        return [r[0] for r in self.con.execute("SELECT name FROM organisations ORDER BY name")]

    def add_api_key(self, org: str) -> str:
        """A new key for ``org``; only its SHA-256 is stored, so it is shown once."""
        import secrets

        if org not in self.organisations():
            raise NotFoundError(f"no organisation {org!r}; create it first")
        key = "el_" + secrets.token_urlsafe(32)
        with self.transaction() as con:
            con.execute("INSERT INTO api_keys(org, key_hash, prefix, created_at) VALUES(?,?,?,?)",
                        (org, hashlib.sha256(key.encode()).hexdigest(), key[:10], time.time()))
        return key

    def org_for_key(self, key: str) -> str | None:
        row = self.con.execute("SELECT org FROM api_keys WHERE key_hash=? AND revoked=0",
                               (hashlib.sha256(key.encode()).hexdigest(),)).fetchone()
        return None if row is None else str(row[0])

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

"""Injected instructions in the embedded store (:mod:`electa.ingest.injection`): every unit is
scanned as it is written and its marks kept in ``chunk_flags``; units stored before the current
rules are scanned again by ``electa reindex``; a person lists them with ``electa sources flagged``.

A mixin of :class:`electa.stores.sqlite.SqliteStore` (:class:`~electa.stores.sqlite_tables.StoreTables`
says what it reads of it); :func:`scan_field` is the PostgreSQL store's too.
"""

from __future__ import annotations

import json
import sqlite3

from electa.ingest import injection
from electa.stores.records import flagged_records, flagged_sql
from electa.stores.sqlite_tables import StoreTables


def scan_field(field: str, value: str) -> list[dict[str, object]]:
    """The marks :func:`electa.ingest.injection.scan` finds in one field of a unit. Should the
    scan itself fail (a bug in a rule), the field gets one mark with rule ``scan_error`` over all
    of it, so the unit is stored, listed by ``electa sources flagged`` for a person to look at,
    and the rest of the source is still ingested (or reindexed)."""
    try:
        return [{"field": field, "rule": f.rule, "start": f.start, "end": f.end, "excerpt": f.excerpt}
                for f in injection.scan(value)]
    except Exception as exc:  # any failure: the unit must not take its whole source down with it
        import logging

        logging.getLogger("electa.ingest").warning("injection scan failed on a unit's %s: %r", field, exc)
        excerpt = f"the injection scan failed ({type(exc).__name__}: {exc}); look at this {field} yourself"
        return [{"field": field, "rule": "scan_error", "start": 0, "end": len(value), "excerpt": excerpt[:200]}]


def flag_unit(con: sqlite3.Connection, chunk_id: int, title: str, text: str) -> None:
    """Record what :func:`electa.ingest.injection.scan` finds in a unit's title and text (nothing
    when it finds nothing), in the caller's transaction: a unit is never stored unmarked. A scan
    that fails is recorded as a ``scan_error`` mark (see :func:`scan_field`), never raised."""
    findings = [mark for field, value in (("title", title), ("text", text)) for mark in scan_field(field, value)]
    if findings:
        rules = sorted({r for f in findings for r in str(f["rule"]).split(",")})
        con.execute("INSERT OR REPLACE INTO chunk_flags VALUES(?,?,?)", (chunk_id, ",".join(rules), json.dumps(findings)))


def note_injection_rules(con: sqlite3.Connection) -> None:
    """Units stored before these injection rules (an older store, or older rules) were never
    scanned with them: ``injection_pending`` records the highest such unit id, and
    :meth:`SqliteStore.rescan_injections` (run by ``electa reindex``) works through them from
    ``injection_cursor``. Units stored from now on are scanned as they are written. Cheap: no
    unit is read here, so opening a large store stays fast."""
    found = con.execute("SELECT value FROM meta WHERE key='injection_rules'").fetchone()
    if found is not None and found[0] == injection.RULES_VERSION:
        return
    top = int(con.execute("SELECT coalesce(max(id), 0) FROM chunks").fetchone()[0])
    con.executemany("INSERT INTO meta VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                    [("injection_rules", injection.RULES_VERSION), ("injection_pending", str(top)), ("injection_cursor", "0")])


class InjectionTables(StoreTables):
    """The marks of injected instructions in the embedded store (see the module's docstring)."""

    def flagged(self, org: str, agent: str | None = None) -> list[dict[str, object]]:
        """Units of ``org`` (and ``agent``) holding injected instructions, for a person to look
        at: see :meth:`electa.stores.IndexStore.flagged`."""
        where, params = "d.org=?", [org]
        if agent is not None:
            where += " AND d.agent=?"
            params.append(agent)
        with self.snapshot() as con:
            flagged, places_of = flagged_sql(where, "?")
            rows = con.execute(flagged, params).fetchall()
            places: dict[int, list[tuple[str, str]]] = {}
            for document_id in {r[1] for r in rows}:
                places[document_id] = sorted((str(uri), str(url)) for uri, url in con.execute(
                    places_of, (document_id,)))
        return flagged_records([(*r[:7], json.loads(r[7])) for r in rows], places)

    def rescan_injections(self, limit: int) -> tuple[int, int]:
        """Scan up to ``limit`` units stored before the current injection rules (see
        :func:`note_injection_rules`), replacing their marks, in one transaction; returns
        ``(scanned, still to scan)``. ``limit`` 0 only counts. The generation does not move:
        marks change no search."""
        with self.transaction() as con:
            pending = int(con.execute("SELECT coalesce((SELECT value FROM meta WHERE key='injection_pending'), 0)"
                                      ).fetchone()[0])
            cursor = int(con.execute("SELECT coalesce((SELECT value FROM meta WHERE key='injection_cursor'), 0)"
                                     ).fetchone()[0])
            rows = con.execute("SELECT id, title, text FROM chunks WHERE id>? AND id<=? ORDER BY id LIMIT ?",
                               (cursor, pending, max(limit, 0))).fetchall() if limit > 0 else []
            for chunk_id, title, text in rows:
                con.execute("DELETE FROM chunk_flags WHERE chunk_id=?", (chunk_id,))
                flag_unit(con, chunk_id, title, text)
            if limit > 0:
                cursor = int(rows[-1][0]) if len(rows) == limit else pending
                self.set_meta(con, "injection_cursor", str(cursor))
            left = int(con.execute("SELECT count(*) FROM chunks WHERE id>? AND id<=?", (cursor, pending)).fetchone()[0])
        return len(rows), left

"""SqliteStore: the embedded store in one data directory (SPEC H4).

SQLite (WAL) is the source of truth for sources, documents, chunks, Q&A pairs, access fields,
lineage and vectors; FTS5 tables serve the full-text legs. A source is written in one
transaction, so a crash or a bad file mid-ingest leaves the previous state intact (SPEC A8;
:mod:`electa.stores.sqlite_sources`).

Access control lives *inside* the FTS5 match (SPEC B8): each indexed row carries an ``acl``
column of opaque tokens (organisation, agent, ``public`` or principal tokens) and every
full-text query ANDs a filter on it, so a row the caller may not see never becomes a candidate
(:mod:`electa.stores.sqlite_acl`).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from electa.errors import StoreError
from electa.stores import allowed_sets
from electa.stores.allowed_sets import AllowedSets
from electa.stores.protocol import (
    AllowedSet,
    Store,
    StoredUnit,
)
from electa.stores.sqlite_acl import acl_filter
from electa.stores.sqlite_analysis import analyse_again
from electa.stores.sqlite_graph import GRAPH_SCHEMA, GraphTables, upgrade_graph
from electa.stores.sqlite_images import LexicalImages
from electa.stores.sqlite_injections import InjectionTables, flag_unit, note_injection_rules
from electa.stores.sqlite_ops import OperationalTables, add_missing_columns
from electa.stores.sqlite_schema import (
    FTS_COLUMNS,
    FTS_TABLES,
    FTS_TOKENIZER,
    RECENT_TABLES,
    SCHEMA,
    SCHEMA_VERSION,
)
from electa.stores.sqlite_sources import SourceTables
from electa.stores.sqlite_vectors import VectorTables, vector_blob
from electa.stores.unit_cache import LeadCache, UnitCache, with_units
from electa.text.analysis import DEFAULT_LANGUAGE, query_terms
from electa.types import Caller, ChunkKind

if TYPE_CHECKING:
    from electa.config import Settings
    from electa.stores.protocol import VectorIndex


def match_expression(query: str, languages: Sequence[str] = (DEFAULT_LANGUAGE,)) -> str:
    """OR of the query's content terms as each of ``languages`` analyses them, each quoted so
    no user text is read as FTS5 syntax."""
    return " OR ".join(f'"{w}"' for w in query_terms(query, languages))


class SqliteStore(SourceTables, OperationalTables, GraphTables, VectorTables, LexicalImages, InjectionTables):
    """The embedded store. ``SqliteStore(Path("data"))`` opens or creates ``data/electa.db``.

    Connections are per thread (legs query in parallel); writes are serialised by a lock.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the data directory {self.directory}: {exc}") from exc
        self.path = self.directory / "electa.db"
        self._local = threading.local()
        self._write_lock = threading.Lock()
        self._allowed = AllowedSets()
        self._units_cache = UnitCache()
        self._leads_cache = LeadCache()
        try:
            with self._write_lock:
                self.con.executescript(SCHEMA)
                self.con.executescript(GRAPH_SCHEMA)
                upgrade_graph(self.con)
                add_missing_columns(self.con)  # older stores: keys gain scope, name, expiry
                # On a column older stores gain above: made after it.
                self.con.execute("CREATE INDEX IF NOT EXISTS feedback_person ON feedback(org, person)")
                self.con.execute("CREATE INDEX IF NOT EXISTS documents_lang ON documents(org, agent, lang)")
            with self.transaction() as con:
                con.execute(
                    "INSERT OR IGNORE INTO meta VALUES('schema_version', ?)", (SCHEMA_VERSION,)
                )
                con.execute("INSERT OR IGNORE INTO meta VALUES('generation', '0')")
                # Removals are logged from here on (a store made before the log starts it now).
                con.execute("INSERT OR IGNORE INTO meta SELECT 'removed_units_from', value FROM meta"
                            " WHERE key='generation'")
                found = con.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0]
                if found not in ("1", SCHEMA_VERSION):  # before any write: a newer store is left as it is
                    raise StoreError(f"{self.path} has schema {found}; this Electa reads {SCHEMA_VERSION}: upgrade Electa")
                note_injection_rules(con)
                stale = analyse_again(con, FTS_TABLES, RECENT_TABLES, FTS_COLUMNS, FTS_TOKENIZER)
                if stale is not None:
                    self._bump(con)
                con.execute("UPDATE meta SET value=? WHERE key='schema_version' AND value='1'", (SCHEMA_VERSION,))
            for name in stale or ():  # images of the terms before, named by nothing now
                shutil.rmtree(self._images_dir() / name, ignore_errors=True)
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc):
                raise StoreError(f"{self.path} is not a readable Electa store ({exc}); point --data at another "
                                 "directory or restore it from a backup") from exc
            raise StoreError(f"{self.path} is held by another process's write (a first open after an upgrade"
                             " analyses every unit again once); try again when it has finished") from exc
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"{self.path} is not a readable Electa store ({exc}); point --data at another "
                "directory or restore it from a backup"
            ) from exc
        found = self.meta("schema_version")
        if found != SCHEMA_VERSION:
            raise StoreError(f"{self.path} has schema {found}; this Electa reads {SCHEMA_VERSION}")

    # -- connections -------------------------------------------------------------------------
    @property
    def con(self) -> sqlite3.Connection:
        con = getattr(self._local, "con", None)
        if con is None:
            con = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")
            con.execute("PRAGMA foreign_keys=ON")
            self._local.con = con
        return con

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        with self._write_lock:
            con = self.con
            con.execute("BEGIN IMMEDIATE")
            try:
                yield con
            except BaseException:
                con.execute("ROLLBACK")
                self._changed()  # nothing read inside may outlive it
                raise
            else:
                con.execute("COMMIT")

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: every read inside sees one committed state (WAL snapshot)."""
        con = self.con
        if con.in_transaction:  # already inside one (a write): it is the snapshot
            yield con
            return
        con.execute("BEGIN")
        try:
            yield con
        finally:
            con.execute("COMMIT")

    def close(self) -> None:
        con = getattr(self._local, "con", None)
        if con is not None:
            con.close()
            self._local.con = None

    def shutdown(self) -> None:
        """Close this thread's connection; other threads' close with their threads."""
        self.close()

    # -- meta --------------------------------------------------------------------------------
    def meta(self, key: str) -> str | None:
        row = self.con.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, con: sqlite3.Connection, key: str, value: str) -> None:
        con.execute("INSERT INTO meta VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value", (key, value))

    @property
    def generation(self) -> int:
        return self._generation(self.con)

    @property
    def backfills(self) -> int:
        """How many times vectors were added to chunks stored earlier (see :meth:`put_vectors`)."""
        return self.state[1]

    @property
    def state(self) -> tuple[int, int]:
        """``(generation, backfills)`` in one read: what the dense index checks before each search."""
        row = self.con.execute("SELECT (SELECT value FROM meta WHERE key='generation'),"
                               " coalesce((SELECT value FROM meta WHERE key='vector_backfills'), '0')").fetchone()
        return int(row[0]), int(row[1])

    @property
    def version(self) -> str:
        """Moves with every change a search can see: sources (``generation``) and backfilled
        vectors. What result caches are keyed by."""
        generation, backfills = self.state
        return f"{generation}.{backfills}"

    def _bump(self, con: sqlite3.Connection) -> None:
        generation = self._generation(con) + 1
        con.execute("UPDATE meta SET value=? WHERE key='generation'", (str(generation),))
        if generation % 64 == 0:  # the removal log keeps the last REMOVALS_KEPT generations
            horizon = generation - allowed_sets.REMOVALS_KEPT
            if con.execute("DELETE FROM removed_units WHERE after_generation < ?", (horizon,)).rowcount:
                con.execute("UPDATE meta SET value=max(CAST(value AS INTEGER), ?) WHERE key='removed_units_from'",
                            (horizon,))

    # -- reading -----------------------------------------------------------------------------
    def allowed(self, caller: Caller) -> AllowedSet:
        cached = self._allowed.cached(self.generation, caller)
        if cached is not None:
            return cached
        # Inside this thread's write, what it reads may yet be rolled back (and its ids handed
        # out again): such a read is neither cached nor kept as a base.
        keep = not self.con.in_transaction
        with self.snapshot() as con:  # the generation and the rows of one committed state
            return self._read_allowed(con, caller, keep)

    def _read_allowed(self, con: sqlite3.Connection, caller: Caller, keep: bool = True) -> AllowedSet:
        """The caller's units at the snapshot's generation, following the last set read through
        the removal log (:mod:`electa.stores.allowed_sets`)."""
        where = "d.org=?"
        params: list[object] = [caller.org]
        if caller.agent is not None:
            where += " AND d.agent=?"
            params.append(caller.agent)
        principals = sorted(caller.principals)
        reader = "d.public=1"
        if principals:
            marks = ",".join("?" * len(principals))
            reader += f" OR d.id IN (SELECT document_id FROM doc_principals WHERE principal IN ({marks}))"
            params.extend(principals)

        def removed_since(generation: int) -> np.ndarray:
            return np.fromiter((r[0] for r in con.execute(
                "SELECT chunk_id FROM removed_units WHERE after_generation >= ?", (generation,))), dtype=np.int64)

        def fresh_above(above: int) -> np.ndarray:
            # Following a set: walk the new ids (CROSS JOIN keeps chunks outermost; the planner
            # would walk the organisation's documents, 259 ms against 0.05 at a million units).
            join = "CROSS JOIN" if above else "JOIN"
            return np.fromiter((r[0] for r in con.execute(
                f"SELECT c.id FROM chunks c {join} documents d ON d.id=c.document_id WHERE c.id > ? AND {where}"
                f" AND ({reader}) ORDER BY c.id", [above, *params])), dtype=np.int64)

        logged_from = int(con.execute("SELECT value FROM meta WHERE key='removed_units_from'").fetchone()[0])
        top = int(con.execute("SELECT coalesce(max(id), 0) FROM chunks").fetchone()[0])
        return self._allowed.read(caller, self._generation(con), logged_from, removed_since, fresh_above, keep, top)

    def fts_search(self, table: str, query: str, caller: Caller, limit: int,
                   weights: tuple[float, ...], ranked: bool = True, column: str = "") -> list[tuple[int, float]]:
        """Full-text search inside the caller's access filter: ``(unit id, bm25)`` best first.

        The score is FTS5's ``bm25()`` negated (FTS5 returns lower-is-better). Its statistics
        span every organisation, so it must not rank what a tenant is shown (the legs rank with
        per-caller statistics, :mod:`electa.stores.bm25_memory`); ``ranked=False`` only finds
        matching rows (score 0), for existence and counting checks. ``column`` limits the match
        to one column (``title``)."""
        weights = tuple(weights) + (0.0,) * (3 - len(weights))  # the acl column never scores
        expr = match_expression(query, self.languages(caller))
        if not expr:
            return []
        if column:
            expr = f"{column} : ({expr})"
        column = "acl"
        match = f"({expr}) AND {acl_filter(caller, column)}"
        if not ranked:
            rows = self.con.execute(f"SELECT rowid, 0.0 FROM {table} WHERE {table} MATCH ? LIMIT ?",
                                    (match, limit)).fetchall()
            return [(int(r[0]), 0.0) for r in rows]
        w = ", ".join(str(x) for x in weights)
        rows = self.con.execute(
            f"SELECT rowid, -bm25({table}, {w}) AS s FROM {table} WHERE {table} MATCH ?"
            f" ORDER BY bm25({table}, {w}) LIMIT ?", (match, limit)).fetchall()
        return [(int(r[0]), float(r[1])) for r in rows]

    def languages(self, caller: Caller) -> tuple[str, ...]:
        agent = "" if caller.agent is None else " AND l.agent=?"  # (none: every agent of the organisation)
        rows = self.con.execute(
            f"SELECT DISTINCT l.lang FROM languages l WHERE l.org=?{agent} AND EXISTS(SELECT 1 FROM documents d"
            " WHERE d.org=l.org AND d.agent=l.agent AND d.lang IN (l.lang, CASE l.lang WHEN ? THEN '' END))"
            " ORDER BY l.lang", (caller.org, *(() if caller.agent is None else (caller.agent,)), DEFAULT_LANGUAGE))
        return tuple(str(r[0]) for r in rows) or (DEFAULT_LANGUAGE,)

    def stored_languages(self) -> tuple[str, ...]:
        return tuple(str(r[0]) for r in self.con.execute("SELECT DISTINCT lang FROM languages ORDER BY lang"))

    def title_matches(self, word: str, caller: Caller, limit: int) -> list[int]:
        return [i for i, _ in self.fts_search("chunk_fts", word, caller, limit, (1.0, 0.0), ranked=False,
                                              column="title")]

    def mentions(self, text: str, caller: Caller) -> bool:
        return bool(self.fts_search("chunk_fts", text, caller, 1, (1.0, 1.0), ranked=False))


    def units(self, ids: Sequence[int]) -> dict[int, StoredUnit]:
        """Stored units by id, read in one snapshot. Units read at the store's current
        generation are kept (a unit's text never changes, but its locations may, and any
        change moves the generation, which empties the cache), so a search over the same
        candidates again costs dictionary lookups, not SQL (``UNITS_KEPT`` at most)."""
        if self.con.in_transaction:  # inside a write: what it reads may yet be rolled back
            return self._read_units(self.con, ids)
        with self.snapshot() as con:
            generation = self._generation(con)
            out = self._units_cache.lookup(generation, ids)
            missing = [i for i in ids if i not in out] if len(out) < len(ids) else []
            fresh = self._read_units(con, missing) if missing else {}
            self._units_cache.keep(generation, fresh)
        return out | fresh

    def leads(self, document_ids: Sequence[int]) -> dict[int, tuple[str, StoredUnit]]:
        ids = sorted({int(d) for d in document_ids})
        writing = self.con.in_transaction  # (inside a write what it reads may yet be rolled back: kept nowhere)

        def query(missing: list[int]) -> list[tuple[int, str, int]]:
            rows: list[tuple[int, str, int]] = []
            for start in range(0, len(missing), 500):
                part = missing[start:start + 500]
                # (by chunks_document: "+c.kind" keeps the planner off chunks_kind, which would read
                # every organisation's title units; the opening must be a unit of the same page)
                rows += con.execute("SELECT c.document_id, c.title, c.parent_id FROM chunks c JOIN chunks p"
                                    " ON p.id = c.parent_id AND p.document_id = c.document_id WHERE +c.kind = 'title'"
                                    f" AND c.document_id IN ({','.join('?' * len(part))})", part).fetchall()
            return rows

        with self.snapshot() as con:
            leads = self._leads_cache.read(-2 if writing else self._generation(con), ids, query)
        return with_units(leads, self.units)

    def unit_languages(self, ids: Sequence[int]) -> dict[int, str]:
        out: dict[int, str] = {}
        for start in range(0, len(ids), 500):
            part = [int(i) for i in ids[start:start + 500]]
            rows = self.con.execute("SELECT c.id, d.lang FROM chunks c JOIN documents d ON d.id = c.document_id"
                                    f" WHERE c.id IN ({','.join('?' * len(part))})", part)
            out.update((int(cid), str(lang)) for cid, lang in rows)
        return out

    def _changed(self) -> None:
        """After a write by this process (or its rollback): forget what was read before it.
        (The allowed sets' bases stay: they follow writes through the removal log.)"""
        self._allowed.forget_cached()
        self._units_cache.forget()
        self._leads_cache.forget()

    def _read_units(self, con: sqlite3.Connection, ids: Sequence[int]) -> dict[int, StoredUnit]:
        out: dict[int, StoredUnit] = {}
        for start in range(0, len(ids), 500):
            part = list(ids[start:start + 500])
            marks = ",".join("?" * len(part))
            rows = con.execute(
                "SELECT c.id, c.document_id, c.kind, c.title, c.text, c.parent_id,"
                " (SELECT json_group_array(json_array(l.source_id, l.url, l.ext_id)) FROM locations l"
                "  WHERE l.document_id=c.document_id), d.lang"
                f" FROM chunks c JOIN documents d ON d.id = c.document_id WHERE c.id IN ({marks})", part).fetchall()
            for cid, did, kind, title, text, parent_id, locs, lang in rows:
                places = sorted(json.loads(locs) or [[0, "", ""]])
                urls = tuple(dict.fromkeys(p[1] for p in places if p[1]))
                out[cid] = StoredUnit(cid, did, places[0][0], ChunkKind(kind), title, text,
                                      urls[0] if urls else "", places[0][2], urls[1:], parent_id, lang)
        return out

    def last_unit_id(self) -> int:
        return int(self.con.execute("SELECT coalesce(max(id), 0) FROM chunks").fetchone()[0])

    def documents_missing_title_units(self, limit: int) -> list[tuple[int, str, int]]:
        """``(document id, title, first parent id)`` of documents chunked before title units
        (chunker hp-1), by the rule of ``chunker.title_unit_parent``: titled, with a parent that
        has text. ``Engine.reindex`` adds their title units."""
        return [(r[0], r[1], r[2]) for r in self.con.execute(
            "SELECT d.id, d.title, (SELECT c.id FROM chunks c WHERE c.document_id=d.id AND c.kind='parent'"
            " AND trim(c.text)<>'' ORDER BY c.ordinal LIMIT 1) AS p FROM documents d"
            " WHERE d.kind='doc' AND trim(d.title)<>'' AND p IS NOT NULL AND NOT EXISTS"
            " (SELECT 1 FROM chunks c WHERE c.document_id=d.id AND c.kind='title') ORDER BY d.id LIMIT ?",
            (limit,))]

    def add_title_units(self, model_id: str, rows: Sequence[tuple[int, str, int]], vecs: np.ndarray) -> None:
        """Add one title unit (and its vector) per ``(document id, title, parent id)``, in one
        transaction; a document that was deleted or upgraded meanwhile is skipped."""
        from electa.ingest.chunker import CHUNKER_VERSION

        with self.transaction() as con:
            for (document_id, title, parent_id), vec in zip(rows, vecs, strict=True):
                row = con.execute(
                    "SELECT max(ordinal), max(source_version), sum(kind='title') FROM chunks WHERE document_id=?",
                    (document_id,)).fetchone()
                if row[0] is None or row[2]:
                    continue
                content_hash = hashlib.sha256(f"{title}\n".encode()).hexdigest()
                cur = con.execute(
                    "INSERT INTO chunks(document_id, kind, ordinal, parent_id, title, text, content_hash,"
                    " source_version, chunker_version) VALUES(?,?,?,?,?,?,?,?,?)",
                    (document_id, ChunkKind.TITLE.value, row[0] + 1, parent_id, title, "", content_hash,
                     row[1], CHUNKER_VERSION))
                con.execute("INSERT INTO vectors VALUES(?,?,?,?)",
                            (int(cur.lastrowid or 0), model_id, int(vec.shape[0]), vector_blob(vec)))
                flag_unit(con, int(cur.lastrowid or 0), title, "")
            self._bump(con)
        self._changed()

    def dense_index(self, model_id: str, dim: int, settings: Settings) -> VectorIndex:
        """faiss HNSW in a file beside the database (see :mod:`electa.stores.faiss_index`)."""
        from electa.stores.faiss_index import FaissHnswIndex

        return FaissHnswIndex(self, model_id, dim, settings.hnsw_m, settings.hnsw_ef_construction,
                              settings.hnsw_ef_search, settings.exact_below)

    def stats(self) -> dict[str, object]:
        con = self.con
        count = lambda sql: int(con.execute(sql).fetchone()[0])
        return {
            "sources": count("SELECT count(*) FROM sources"),
            "documents": count("SELECT count(*) FROM documents WHERE kind='doc'"),
            "qa_pairs": count("SELECT count(*) FROM documents WHERE kind='qa'"),
            "chunks": {k: v for k, v in con.execute("SELECT kind, count(*) FROM chunks GROUP BY kind")},
            "vectors": self.vector_models(),
            "model_id": self.meta("model_id"),
            "generation": self.generation,
            "organisations": [r[0] for r in con.execute("SELECT DISTINCT org FROM sources ORDER BY org")],
            "bytes_on_disk": sum(p.stat().st_size for p in self.directory.iterdir() if p.is_file()),
        }


if TYPE_CHECKING:
    _STORE: Store = SqliteStore(Path())  # mypy proves here that SqliteStore satisfies the Store Protocol

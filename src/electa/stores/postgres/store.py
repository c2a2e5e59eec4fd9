"""PostgresStore: the scale-out backend (``ELECTA_STORE=postgresql://…``), the same contract as
the embedded :class:`electa.stores.sqlite.SqliteStore`.

PostgreSQL is the source of truth for sources, documents, units, access fields, vectors
(pgvector) and full-text vectors (``tsvector``, analysed as FTS5 does:
:mod:`electa.stores.postgres.analysis`). Every write is one transaction under the writers'
lock; the ``generation`` in ``meta`` moves in it, so every worker on the database sees a change
at its next read of the generation (each search reads it once). Row-level security is a second
wall behind the query filters (:mod:`electa.stores.postgres.connection`): a read for a caller
runs behind that caller's organisation, an ingest behind its source's.

What each worker keeps in memory is what the embedded store's processes keep: allowed sets and
units per generation, and the full-text legs' BM25 images (built from the ``tsvector`` rows,
per-caller statistics, segments: a write is read back as the rows above the last image's
highest id, through an index, so its cost follows the rows written, not the corpus). The dense
leg searches pgvector's HNSW index inside the database (:mod:`electa.stores.postgres.vectors`).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from electa.errors import ModelMismatchError
from electa.ingest import injection
from electa.stores import allowed_sets
from electa.stores.allowed_sets import AllowedSets
from electa.stores.bm25_memory import BM25Image, batches
from electa.stores.postgres.analysis import MAX_LEXEME_BYTES, tsquery_any, tsvector_literal
from electa.stores.postgres.connection import ALL_TENANTS, PgDatabase, holds_nul, matches_nothing_with_nul, redact
from electa.stores.postgres.graph import PgGraphTables
from electa.stores.postgres.ops import PgOperationalTables
from electa.stores.postgres.reanalysis import analyse_again
from electa.stores.protocol import (
    AllowedSet,
    PreparedDocument,
    SourceOutcome,
    SourceRecord,
    Store,
    StoredUnit,
    TextIndex,
    document_kind,
    language_of,
    same_access,
    same_documents,
)
from electa.stores.records import flagged_records, flagged_sql, renamed_ext_id
from electa.stores.sqlite_acl import access_json, acl_text
from electa.stores.sqlite_injections import scan_field
from electa.stores.sqlite_ops import check_org_name, normalise_trigger
from electa.stores.sqlite_vectors import VECTOR_KINDS
from electa.stores.unit_cache import LeadCache, UnitCache, with_units
from electa.text.analysis import DEFAULT_LANGUAGE, index_terms, query_terms, same_analysis
from electa.types import Access, Caller, ChunkKind

if TYPE_CHECKING:
    from electa.config import Settings
    from electa.stores.protocol import VectorIndex

ROWS_PER_STATEMENT = 2000  # rows unnested by one INSERT: bounds a statement's parameters


def _draw_ids(con: Any, sequence: str, count: int) -> list[int]:
    """``count`` new ids of ``sequence``, ascending."""
    if not count:
        return []
    return [int(r[0]) for r in con.execute(
        "SELECT nextval(%s::regclass) FROM generate_series(1, %s) ORDER BY 1", (sequence, count)).fetchall()]


def _insert_rows(con: Any, sql: str, fixed: tuple[Any, ...], rows: Sequence[tuple[Any, ...]]) -> None:
    """Run ``sql`` (its ``%s`` parameters: ``fixed``, then one array per column of ``rows``)
    over ``rows``, ``ROWS_PER_STATEMENT`` at a time."""
    for start in range(0, len(rows), ROWS_PER_STATEMENT):
        columns = [list(c) for c in zip(*rows[start:start + ROWS_PER_STATEMENT], strict=True)]
        con.execute(sql, (*fixed, *columns))


_SOURCE_COLUMNS = ("id", "org", "agent", "uri", "kind", "url", "version", "content_hash", "documents", "access",
                   "updated_at")
_SOURCE_SQL = ", ".join(_SOURCE_COLUMNS)
FTS_INDEX = {ChunkKind.PARENT: TextIndex.UNITS.value, ChunkKind.QA: TextIndex.QA.value}


def reader_filter(caller: Caller, alias: str = "c") -> tuple[str, list[object]]:
    """The SQL predicate (and its parameters) of what ``caller`` may read, over a table carrying
    the unit's access fields: its organisation (and agent), public or one of its principals."""
    where = f"{alias}.org = %s"
    params: list[object] = [caller.org]
    if caller.agent is not None:
        where += f" AND {alias}.agent = %s"
        params.append(caller.agent)
    where += f" AND ({alias}.public OR {alias}.principals && %s::text[])"
    params.append(sorted(p for p in caller.principals if "\x00" not in p))  # one holding NUL names no one
    return where, params


def vector_literal(vec: np.ndarray) -> str:
    """pgvector's text form of a vector (exact: 9 significant digits round-trip float32)."""
    return "[" + ",".join(f"{x:.9g}" for x in np.asarray(vec, dtype=np.float32).tolist()) + "]"


def _source_record(row: Sequence[Any]) -> dict[str, Any]:
    rec = dict(zip(_SOURCE_COLUMNS, row, strict=True))
    rec["access"] = dict(rec["access"])
    rec["updated_at"] = float(rec["updated_at"])
    return rec


class PostgresStore(PgOperationalTables, PgGraphTables):
    """``PostgresStore("postgresql://…", Path("cache"))``: ``directory`` is a local folder for
    this worker's caches (none are needed today; the contract asks every store for one)."""

    def __init__(self, dsn: str, directory: Path | None = None, pool_size: int = 8) -> None:
        self.db = PgDatabase(dsn, max_size=pool_size)
        self.dsn = redact(dsn)
        # Without a directory, one of our own, removed by shutdown() (each worker made one before).
        self._own_directory = directory is None
        self.directory = Path(directory) if directory is not None else Path(tempfile.mkdtemp(prefix="electa-pg-cache-"))
        self.directory.mkdir(parents=True, exist_ok=True)
        self._allowed = AllowedSets()
        self._units_cache = UnitCache()
        self._leads_cache = LeadCache()
        with self.db.tx(ALL_TENANTS, write=True) as con:
            found = con.execute("SELECT value FROM meta WHERE key='injection_rules'").fetchone()
            if found is None or found[0] != injection.RULES_VERSION:
                top = con.execute("SELECT coalesce(max(id), 0) FROM chunks").fetchone()[0]
                for key, value in (("injection_rules", injection.RULES_VERSION), ("injection_pending", str(top)),
                                   ("injection_cursor", "0")):
                    self._set_meta(con, key, value)
            if analyse_again(con):
                self._bump(con)

    # -- state -------------------------------------------------------------------------------
    def _scalar(self, sql: str, params: Sequence[object] = (), org: str = ALL_TENANTS) -> Any:
        with self.db.tx(org) as con:
            row = con.execute(sql, params).fetchone()
        return None if row is None else row[0]

    @staticmethod
    def _set_meta(con: Any, key: str, value: str) -> None:
        con.execute("INSERT INTO meta VALUES(%s, %s) ON CONFLICT(key) DO UPDATE SET value=excluded.value", (key, value))

    @staticmethod
    def _bump(con: Any) -> None:
        generation = con.execute("UPDATE meta SET value = (value::bigint + 1)::text WHERE key='generation'"
                                 " RETURNING value::bigint").fetchone()[0]
        if generation % 64 == 0:  # the removal log keeps the last REMOVALS_KEPT generations
            # (of the writing organisation's rows, which are all the wall lets it see; another's
            # older rows wait for its own writes, and cost only their reading)
            horizon = generation - allowed_sets.REMOVALS_KEPT
            if con.execute("DELETE FROM removed_units WHERE after_generation < %s", (horizon,)).rowcount:
                con.execute("UPDATE meta SET value = greatest(value::bigint, %s)::text WHERE key='removed_units_from'",
                            (horizon,))

    def meta(self, key: str) -> str | None:
        found = self._scalar("SELECT value FROM meta WHERE key=%s", (key,))
        return None if found is None else str(found)

    @property
    def generation(self) -> int:
        return self.state[0]

    @property
    def backfills(self) -> int:
        return self.state[1]

    @property
    def state(self) -> tuple[int, int]:
        with self.db.tx(ALL_TENANTS) as con:
            row = con.execute("SELECT (SELECT value FROM meta WHERE key='generation'),"
                              " (SELECT value FROM meta WHERE key='vector_backfills')").fetchone()
        return int(row[0]), int(row[1])

    @property
    def version(self) -> str:
        generation, backfills = self.state
        return f"{generation}.{backfills}"

    def close(self) -> None:
        """Connections are pooled, not per thread: nothing to close for one thread."""

    def shutdown(self) -> None:
        """Close the pool (the process is done with the database), and remove the cache folder
        this store made for itself (none was given)."""
        self.db.close()
        if self._own_directory:
            shutil.rmtree(self.directory, ignore_errors=True)

    def _changed(self) -> None:
        self._allowed.forget_cached()
        self._units_cache.forget()
        self._leads_cache.forget()

    # -- sources and documents ---------------------------------------------------------------
    @matches_nothing_with_nul(lambda: None, "org", "agent", "uri")
    def source(self, org: str, agent: str, uri: str) -> dict[str, Any] | None:
        with self.db.tx(org) as con:
            row = con.execute(f"SELECT {_SOURCE_SQL} FROM sources WHERE org=%s AND agent=%s AND uri=%s",
                              (org, agent, uri)).fetchone()
        return None if row is None else _source_record(row)

    @matches_nothing_with_nul(list, "org", "agent", "uri")
    def source_unit_ids(self, org: str, agent: str, uri: str, kinds: Sequence[ChunkKind],
                        ext_ids: Sequence[str] | None = None) -> list[int]:
        wanted = sorted({str(k) for k in kinds})
        # (PostgreSQL text holds no NUL: no stored name equals one that does)
        names = sorted({n for n in ext_ids if not holds_nul(n)}) if ext_ids is not None else None
        if not wanted or names == []:
            return []
        with self.db.tx(org) as con:
            rows = con.execute(
                "SELECT DISTINCT c.id FROM sources s JOIN locations l ON l.source_id = s.id"
                " JOIN chunks c ON c.document_id = l.document_id"
                " WHERE s.org=%s AND s.agent=%s AND s.uri=%s AND c.kind = ANY(%s)"
                + (" AND l.ext_id = ANY(%s)" if names is not None else "") + " ORDER BY c.id",
                (org, agent, uri, wanted, *([names] if names is not None else []))).fetchall()
        return [int(r[0]) for r in rows]

    @matches_nothing_with_nul(dict, "org")
    def source_updated(self, org: str, ids: Iterable[int]) -> dict[int, float]:
        wanted = sorted({int(i) for i in ids})
        if not wanted:
            return {}
        with self.db.tx(org) as con:
            rows = con.execute("SELECT id, updated_at FROM sources WHERE org=%s AND id = ANY(%s)", (org, wanted)).fetchall()
        return {int(i): float(t) for i, t in rows}

    @matches_nothing_with_nul(list, "org")
    def list_sources(self, org: str | None = None) -> list[dict[str, object]]:
        sql, params = f"SELECT {_SOURCE_SQL} FROM sources", tuple[str, ...]()
        if org is not None:
            sql, params = sql + " WHERE org=%s", (org,)
        with self.db.tx(ALL_TENANTS if org is None else org) as con:
            rows = con.execute(sql + ' ORDER BY org COLLATE "C", agent COLLATE "C", uri COLLATE "C"', params).fetchall()
        return [_source_record(r) for r in rows]

    @matches_nothing_with_nul(lambda: False, "org")
    def has_sources(self, org: str) -> bool:
        with self.db.tx(org) as con:
            return con.execute("SELECT 1 FROM sources WHERE org=%s LIMIT 1", (org,)).fetchone() is not None

    @matches_nothing_with_nul(set, "org", "agent")
    def known_text_hashes(self, org: str, agent: str, access: Access,
                          among: Iterable[str] | None = None) -> set[str]:
        head = "SELECT text_hash FROM documents WHERE org=%s AND agent=%s AND access_sig=%s"
        with self.db.tx(org) as con:
            if among is None:
                rows = con.execute(head, (org, agent, access.signature())).fetchall()
            else:
                rows = con.execute(f"{head} AND text_hash = ANY(%s)",
                                   (org, agent, access.signature(), sorted(set(among)))).fetchall()
        return {r[0] for r in rows}

    def put_source(self, source: SourceRecord, docs: Sequence[PreparedDocument], model_id: str = "") -> SourceOutcome:
        now, access = time.time(), source.access
        check_org_name(source.org)
        try:
            with self.db.tx(source.org, write=True) as con:
                same_analysis(con.execute("SELECT value FROM meta WHERE key='analysis'").fetchone())
                # Pages written under a name make it an organisation, in the same transaction.
                con.execute("INSERT INTO organisations(name, created_at) VALUES(%s, %s) ON CONFLICT(name) DO NOTHING",
                            (source.org, now))
                row = con.execute("SELECT id, version, content_hash, access, url FROM sources WHERE org=%s"
                                  " AND agent=%s AND uri=%s", (source.org, source.agent, source.uri)).fetchone()
                if row is not None and same_access(row[3], access) and (row[4] or "") == source.url:
                    if row[2] == source.content_hash:
                        return SourceOutcome(source.uri, "unchanged", row[1], len(docs))
                    held = con.execute("SELECT d.text_hash, l.url, l.ext_id, d.kind FROM locations l JOIN documents d"
                                       " ON d.id = l.document_id WHERE l.source_id=%s AND d.access_sig=%s",
                                       (row[0], access.signature())).fetchall()
                    if {tuple(h) for h in held} == same_documents(source, docs):
                        # Another hash, the same documents: version and last change stay; hash,
                        # kind and count are recorded (as the embedded store).
                        con.execute("UPDATE sources SET content_hash=%s, kind=%s, documents=%s WHERE id=%s",
                                    (source.content_hash, source.kind, len(docs), row[0]))
                        return SourceOutcome(source.uri, "unchanged", row[1], len(docs))
                removed, kept = 0, set[int]()
                if row is None:
                    source_id = con.execute(
                        "INSERT INTO sources(org, agent, uri, kind, url, version, content_hash, access, documents,"
                        " created_at, updated_at) VALUES(%s,%s,%s,%s,%s,1,%s,%s,%s,%s,%s) RETURNING id",
                        (source.org, source.agent, source.uri, source.kind, source.url, source.content_hash,
                         access_json(access), len(docs), now, now)).fetchone()[0]
                    version, status = 1, "added"
                else:
                    source_id, version, status = row[0], row[1] + 1, "updated"
                    removed, kept = self._detach_source(con, source_id, keep={d.text_hash for d in docs},
                                                        access_sig=access.signature())
                    con.execute("UPDATE sources SET version=%s, content_hash=%s, kind=%s, url=%s, access=%s,"
                                " documents=%s, updated_at=%s WHERE id=%s",
                                (version, source.content_hash, source.kind, source.url, access_json(access),
                                 len(docs), now, source_id))
                # One statement per table for the whole source (arrays unnested server-side), not
                # one per row: PostgreSQL's COPY would be faster still but refuses tables under
                # row-level security.
                found = dict(con.execute(
                    "SELECT text_hash, id FROM documents WHERE org=%s AND agent=%s AND access_sig=%s"
                    " AND text_hash = ANY(%s)", (source.org, source.agent, access.signature(),
                                                 list({d.text_hash for d in docs}))).fetchall())
                duplicates, new, pending = 0, list[PreparedDocument](), set[str]()
                for doc in docs:
                    if doc.text_hash in found:
                        duplicates += found[doc.text_hash] not in kept
                    elif doc.text_hash in pending:
                        duplicates += 1  # the same text twice in this source: stored once
                    else:
                        pending.add(doc.text_hash)
                        new.append(doc)
                found.update(zip((d.text_hash for d in new), self._insert_documents(con, source, new, version, model_id),
                                 strict=True))
                _insert_rows(con, "INSERT INTO locations SELECT u.document_id, %s, %s, u.url, u.ext_id FROM"
                             " unnest(%s::bigint[], %s::text[], %s::text[]) AS u(document_id, url, ext_id)"
                             " ON CONFLICT DO NOTHING", (source_id, source.org),
                             [(found[d.text_hash], d.url or source.url, d.ext_id) for d in docs])
                vectors = [v for d in docs for v in d.vectors if v is not None]
                if model_id and vectors:
                    self._name_model(con, model_id, int(vectors[0].shape[0]))
                self._bump(con)
        finally:
            self._changed()
        return SourceOutcome(source.uri, status, version, len(docs), duplicates, removed)

    def _name_model(self, con: Any, model_id: str, dim: int) -> None:
        """The first vectors name the store's model, in their own transaction (SPEC A4), and
        give it pgvector's HNSW index (M 16, efConstruction 200, as the embedded index; inner
        product over unit vectors is cosine), partial on the model, at its dimension."""
        stored = con.execute("SELECT value FROM meta WHERE key='model_id'").fetchone()
        if stored is not None and stored[0] != model_id:
            raise ModelMismatchError(f"this store holds vectors of {stored[0]}, not {model_id}: run `electa reindex` first")
        if stored is None:
            self._set_meta(con, "model_id", model_id)
        self._ensure_hnsw(con, model_id, dim)

    @staticmethod
    def _ensure_hnsw(con: Any, model_id: str, dim: int) -> None:
        from psycopg import sql

        name = "vectors_hnsw_" + hashlib.sha256(f"{model_id}\x00{dim}".encode()).hexdigest()[:16]
        if con.execute("SELECT to_regclass(%s)", (name,)).fetchone()[0] is not None:
            return  # (CREATE INDEX IF NOT EXISTS would lock the table against writes first, every ingest)
        con.execute(sql.SQL("CREATE INDEX IF NOT EXISTS {} ON vectors USING hnsw ((embedding::vector({})) vector_ip_ops)"
                            " WITH (m = 16, ef_construction = 200) WHERE model_id = {} AND dim = {}").format(
            sql.Identifier(name), sql.Literal(dim), sql.Literal(model_id), sql.Literal(dim)))

    def _insert_documents(self, con: Any, source: SourceRecord, docs: Sequence[PreparedDocument], version: int,
                          model_id: str) -> list[int]:
        """Insert ``docs`` with their units, terms, marks and vectors; their new ids, in order.
        Ids are drawn from the sequences first (ascending, under the writer lock), so every
        row is known before the one statement per table that inserts them."""
        from electa.ingest.chunker import CHUNKER_VERSION

        if not docs:
            return []
        access = source.access
        public, principals = bool(access.public), ([] if access.public else sorted(set(access.principals)))
        tenant = (source.org, source.agent, public, principals)
        acl = acl_text(access).split()
        doc_ids = _draw_ids(con, "documents_id_seq", len(docs))
        chunk_ids = iter(_draw_ids(con, "chunks_id_seq", sum(len(d.chunks) for d in docs)))
        doc_rows: list[tuple[Any, ...]] = []
        chunk_rows: list[tuple[Any, ...]] = []
        term_rows: list[tuple[Any, ...]] = []
        trigger_rows: list[tuple[Any, ...]] = []
        vector_rows: list[tuple[Any, ...]] = []
        for document_id, doc in zip(doc_ids, docs, strict=True):
            found = language_of(doc)
            lang = found or DEFAULT_LANGUAGE
            doc_rows.append((document_id, document_kind(doc), doc.title, doc.text_hash, found))
            ids: dict[int, int] = {}
            for chunk, vec in zip(doc.chunks, doc.vectors, strict=True):
                chunk_id = next(chunk_ids)
                ids[chunk.ordinal] = chunk_id
                fts_index = FTS_INDEX.get(chunk.kind)
                tsv, length = tsvector_literal(chunk.title, chunk.text, acl, lang) if fts_index else (None, None)
                chunk_rows.append((chunk_id, document_id, chunk.kind.value, chunk.ordinal,
                                   None if chunk.parent is None else ids.get(chunk.parent), chunk.title, chunk.text,
                                   hashlib.sha256(f"{chunk.title}\n{chunk.text}".encode()).hexdigest(),
                                   fts_index, tsv, length))
                if chunk.kind is ChunkKind.PARENT:
                    # (a term past a B-tree row's limit is left out, as the tsvector leaves it out)
                    term_rows.extend((chunk_id, t) for t in sorted(set(index_terms(chunk.title, lang)))
                                     if 0 < len(t.encode()) <= MAX_LEXEME_BYTES)
                if chunk.kind is ChunkKind.CURATED:
                    trigger_rows.extend((t, chunk_id) for t in sorted(
                        {normalise_trigger(t) for t in chunk.title.split("\n") if t.strip()}))
                if vec is not None:
                    vector_rows.append((chunk_id, int(vec.shape[0]), vector_literal(vec)))
        _insert_rows(con, "INSERT INTO documents(id, org, agent, kind, title, text_hash, access_sig, public, principals, lang)"
                     " SELECT u.id, %s, %s, u.kind, u.title, u.text_hash, %s, %s, %s::text[], u.lang"
                     " FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::text[], %s::text[])"
                     " AS u(id, kind, title, text_hash, lang)",
                     (source.org, source.agent, access.signature(), public, principals), doc_rows)
        con.execute("INSERT INTO languages SELECT %s, %s, unnest(%s::text[]) ON CONFLICT DO NOTHING",
                    (source.org, source.agent, sorted({r[4] or DEFAULT_LANGUAGE for r in doc_rows})))
        _insert_rows(con, "INSERT INTO chunks(id, document_id, org, agent, public, principals, kind, ordinal, parent_id,"
                     " title, text, content_hash, source_version, chunker_version, fts_index, fts, fts_len)"
                     " SELECT u.id, u.document_id, %s, %s, %s, %s::text[], u.kind, u.ordinal, u.parent_id, u.title,"
                     " u.text, u.content_hash, %s, %s, u.fts_index, u.fts::tsvector, u.fts_len"
                     " FROM unnest(%s::bigint[], %s::bigint[], %s::text[], %s::int[], %s::bigint[], %s::text[],"
                     " %s::text[], %s::text[], %s::text[], %s::text[], %s::int[])"
                     " AS u(id, document_id, kind, ordinal, parent_id, title, text, content_hash, fts_index, fts, fts_len)",
                     (*tenant, version, CHUNKER_VERSION), chunk_rows)
        for chunk_id, _, _, _, _, title, text, *_ in chunk_rows:
            self._flag(con, chunk_id, source.org, title, text)
        _insert_rows(con, "INSERT INTO title_terms SELECT u.chunk_id, %s, %s, %s, %s::text[], u.term"
                     " FROM unnest(%s::bigint[], %s::text[]) AS u(chunk_id, term) ON CONFLICT DO NOTHING",
                     tenant, term_rows)
        _insert_rows(con, "INSERT INTO curated_triggers SELECT u.trigger, u.chunk_id, %s"
                     " FROM unnest(%s::text[], %s::bigint[]) AS u(trigger, chunk_id) ON CONFLICT DO NOTHING",
                     (source.org,), trigger_rows)
        _insert_rows(con, "INSERT INTO vectors(chunk_id, model_id, org, agent, public, principals, dim, embedding)"
                     " SELECT u.chunk_id, %s, %s, %s, %s, %s::text[], u.dim, u.embedding::vector"
                     " FROM unnest(%s::bigint[], %s::int[], %s::text[]) AS u(chunk_id, dim, embedding)"
                     " ON CONFLICT(model_id, chunk_id) DO UPDATE SET embedding=excluded.embedding, dim=excluded.dim",
                     (model_id, *tenant), vector_rows)
        return doc_ids

    @staticmethod
    def _put_vector(con: Any, chunk_id: int, access: tuple[str, str, bool, list[str]], model_id: str,
                    vec: np.ndarray) -> None:
        """``access``: the unit's ``(org, agent, public, principals)``, copied beside its vector."""
        con.execute("INSERT INTO vectors(chunk_id, model_id, org, agent, public, principals, dim, embedding)"
                    " VALUES(%s,%s,%s,%s,%s,%s,%s,%s::vector) ON CONFLICT(model_id, chunk_id) DO UPDATE SET"
                    " embedding=excluded.embedding, dim=excluded.dim",
                    (chunk_id, model_id, *access, int(vec.shape[0]), vector_literal(vec)))

    @staticmethod
    def _flag(con: Any, chunk_id: int, org: str, title: str, text: str) -> None:
        findings = [m for field, value in (("title", title), ("text", text)) for m in scan_field(field, value)]
        if findings:
            rules = sorted({r for f in findings for r in str(f["rule"]).split(",")})
            con.execute("INSERT INTO chunk_flags VALUES(%s,%s,%s,%s) ON CONFLICT(chunk_id) DO UPDATE SET"
                        " rules=excluded.rules, findings=excluded.findings",
                        (chunk_id, org, ",".join(rules), json.dumps(findings)))

    def _detach_source(self, con: Any, source_id: int, keep: set[str] | frozenset[str] = frozenset(),
                       access_sig: str = "") -> tuple[int, set[int]]:
        """As the embedded store's: drop the source's locations and every document no other
        source holds, but those ``keep`` names under ``access_sig``."""
        orphans = con.execute(
            "SELECT l.document_id, d.text_hash, d.access_sig FROM locations l JOIN documents d ON d.id=l.document_id"
            " WHERE l.source_id=%s AND NOT EXISTS (SELECT 1 FROM locations o WHERE o.document_id=l.document_id"
            " AND o.source_id<>%s)", (source_id, source_id)).fetchall()
        con.execute("DELETE FROM locations WHERE source_id=%s", (source_id,))
        kept = {d for d, h, sig in orphans if h in keep and sig == access_sig}
        gone = [d for d, _, _ in orphans if d not in kept]
        removed = 0
        if gone:
            removed = con.execute("SELECT count(*) FROM chunks WHERE document_id = ANY(%s)", (gone,)).fetchone()[0]
            con.execute("DELETE FROM documents WHERE id = ANY(%s)", (gone,))
        return int(removed), kept

    def delete_source(self, org: str, agent: str, uri: str) -> int:
        try:
            with self.db.tx(org, write=True) as con:
                row = con.execute("SELECT id FROM sources WHERE org=%s AND agent=%s AND uri=%s",
                                  (org, agent, uri)).fetchone()
                if row is None:
                    return -1
                removed, _ = self._detach_source(con, row[0])
                con.execute("DELETE FROM sources WHERE id=%s", (row[0],))
                self._bump(con)
        finally:
            self._changed()
        return removed

    # -- source names --------------------------------------------------------------------------
    @matches_nothing_with_nul(dict, "org", "agent")
    def roots(self, org: str, agent: str) -> dict[str, str]:
        with self.db.tx(org) as con:
            return dict(con.execute("SELECT name, path FROM roots WHERE org=%s AND agent=%s", (org, agent)).fetchall())

    def claim_roots(self, org: str, agent: str,
                    decide: Callable[[dict[str, str]], Sequence[tuple[str, str]]]) -> None:
        with self.db.tx(org, write=True) as con:
            con.execute("DELETE FROM roots r WHERE org=%s AND agent=%s AND NOT EXISTS (SELECT 1 FROM sources s WHERE"
                        " s.org=r.org AND s.agent=r.agent AND (s.uri=r.name OR left(s.uri, length(r.name) + 1)"
                        " = r.name || '/'))", (org, agent))
            registered = dict(con.execute("SELECT name, path FROM roots WHERE org=%s AND agent=%s",
                                          (org, agent)).fetchall())
            for name, path in decide(registered):
                con.execute("INSERT INTO roots VALUES(%s,%s,%s,%s) ON CONFLICT(org, agent, name) DO UPDATE SET"
                            " path=excluded.path", (org, agent, name, path))

    def forget_root(self, org: str, agent: str, name: str) -> None:
        with self.db.tx(org, write=True) as con:
            con.execute("DELETE FROM roots WHERE org=%s AND agent=%s AND name=%s", (org, agent, name))

    def rename_source(self, org: str, agent: str, old_uri: str, new_uri: str) -> bool:
        if old_uri == new_uri:
            return False
        try:
            with self.db.tx(org, write=True) as con:
                if con.execute("SELECT 1 FROM sources WHERE org=%s AND agent=%s AND uri=%s",
                               (org, agent, new_uri)).fetchone():
                    return False
                row = con.execute("UPDATE sources SET uri=%s WHERE org=%s AND agent=%s AND uri=%s RETURNING id",
                                  (new_uri, org, agent, old_uri)).fetchone()
                if row is None:
                    return False
                for (ext_id,) in con.execute("SELECT ext_id FROM locations WHERE source_id=%s", (row[0],)).fetchall():
                    renamed = renamed_ext_id(old_uri, new_uri, ext_id)
                    if renamed is not None:
                        con.execute("UPDATE locations SET ext_id=%s WHERE source_id=%s AND ext_id=%s",
                                    (renamed, row[0], ext_id))
                self._bump(con)
        finally:
            self._changed()
        return True

    # -- units and access ----------------------------------------------------------------------
    def allowed(self, caller: Caller) -> AllowedSet:
        """Following the last set read through the removal log (a trigger writes it: migration
        0003), as the embedded store does (:mod:`electa.stores.allowed_sets`)."""
        generation = self.generation
        if holds_nul(caller):  # no stored organisation or agent holds NUL (matches_nothing_with_nul)
            return AllowedSet(np.empty(0, dtype=np.int64), generation, caller)
        cached = self._allowed.cached(generation, caller)
        if cached is not None:
            return cached
        where, params = reader_filter(caller)
        # The table's highest id, read before the caller's snapshot (so every unit up to it is
        # in that snapshot) and outside the wall: under it, max(id) checks each row's tenant.
        with self.db.tx(ALL_TENANTS, snapshot=True) as con:
            top = int(con.execute("SELECT coalesce(max(id), 0) FROM chunks").fetchone()[0])
        with self.db.tx(caller.org, snapshot=True) as con:
            generation, logged_from = con.execute(
                "SELECT (SELECT value::bigint FROM meta WHERE key='generation'),"
                " (SELECT value::bigint FROM meta WHERE key='removed_units_from')").fetchone()

            def removed_since(since: int) -> np.ndarray:
                return np.fromiter((r[0] for r in con.execute(
                    "SELECT chunk_id FROM removed_units WHERE after_generation >= %s", (since,))), dtype=np.int64)

            def fresh_above(above: int) -> np.ndarray:
                return np.fromiter((r[0] for r in con.execute(
                    f"SELECT c.id FROM chunks c WHERE c.id > %s AND {where} ORDER BY c.id", [above, *params])),
                    dtype=np.int64)

            return self._allowed.read(caller, int(generation), int(logged_from), removed_since, fresh_above, top=top)

    def units(self, ids: Sequence[int]) -> dict[int, StoredUnit]:
        with self.db.tx(ALL_TENANTS, snapshot=True) as con:
            generation = int(con.execute("SELECT value FROM meta WHERE key='generation'").fetchone()[0])
            out = self._units_cache.lookup(generation, ids)
            missing = [int(i) for i in ids if i not in out]
            fresh: dict[int, StoredUnit] = {}
            if missing:
                rows = con.execute(
                    "SELECT c.id, c.document_id, c.kind, c.title, c.text, c.parent_id,"
                    " (SELECT coalesce(json_agg(json_build_array(l.source_id, l.url, l.ext_id)), '[]'::json)"
                    "  FROM locations l WHERE l.document_id=c.document_id), d.lang"
                    " FROM chunks c JOIN documents d ON d.id = c.document_id WHERE c.id = ANY(%s)", (missing,)).fetchall()
                for cid, did, kind, title, text, parent_id, locs, lang in rows:
                    places = sorted(locs or [[0, "", ""]])
                    urls = tuple(dict.fromkeys(p[1] for p in places if p[1]))
                    fresh[cid] = StoredUnit(cid, did, places[0][0], ChunkKind(kind), title, text,
                                            urls[0] if urls else "", places[0][2], urls[1:], parent_id, lang)
        self._units_cache.keep(generation, fresh)
        return out | fresh

    def leads(self, document_ids: Sequence[int]) -> dict[int, tuple[str, StoredUnit]]:
        ids = sorted({int(d) for d in document_ids})
        with self.db.tx(ALL_TENANTS, snapshot=True) as con:
            generation = int(con.execute("SELECT value FROM meta WHERE key='generation'").fetchone()[0])
            leads = self._leads_cache.read(generation, ids, lambda missing: con.execute(
                "SELECT c.document_id, c.title, c.parent_id FROM chunks c JOIN chunks p ON p.id = c.parent_id"
                " AND p.document_id = c.document_id WHERE c.kind = 'title' AND c.document_id = ANY(%s)",
                (missing,)).fetchall())
        return with_units(leads, self.units)

    def unit_languages(self, ids: Sequence[int]) -> dict[int, str]:
        with self.db.tx(ALL_TENANTS) as con:
            rows = con.execute("SELECT c.id, d.lang FROM chunks c JOIN documents d ON d.id = c.document_id"
                               " WHERE c.id = ANY(%s)", ([int(i) for i in ids],)).fetchall()
        return {int(cid): str(lang) for cid, lang in rows}

    @matches_nothing_with_nul(lambda: (DEFAULT_LANGUAGE,), "caller")
    def languages(self, caller: Caller) -> tuple[str, ...]:
        agent = "" if caller.agent is None else " AND l.agent=%s"  # (none: every agent of the organisation)
        with self.db.tx(caller.org) as con:
            # Those a document of the agent is still written in (the table is only ever added to:
            # a delete never races a write of the same language; documents_lang answers each).
            rows = con.execute(
                f"SELECT DISTINCT l.lang FROM languages l WHERE l.org=%s{agent} AND EXISTS(SELECT 1 FROM documents d"
                " WHERE d.org=l.org AND d.agent=l.agent AND d.lang IN (l.lang, CASE l.lang WHEN %s THEN '' END))"
                " ORDER BY l.lang", (caller.org, *(() if caller.agent is None else (caller.agent,)), DEFAULT_LANGUAGE))
            return tuple(str(r[0]) for r in rows.fetchall()) or (DEFAULT_LANGUAGE,)

    def stored_languages(self) -> tuple[str, ...]:
        with self.db.tx(ALL_TENANTS) as con:
            return tuple(str(r[0]) for r in con.execute('SELECT DISTINCT lang COLLATE "C" FROM languages ORDER BY 1'))

    def _match(self, caller: Caller, query: str, limit: int) -> list[int]:
        terms = query_terms(query, self.languages(caller))
        if not terms:
            return []
        tsquery = tsquery_any(terms)
        where, params = reader_filter(caller)
        with self.db.tx(caller.org) as con:
            rows = con.execute(f"SELECT c.id FROM chunks c WHERE c.fts_index='units' AND c.fts @@ %s::tsquery AND {where}"
                               " LIMIT %s", (tsquery, *params, limit)).fetchall()
        return [int(r[0]) for r in rows]

    @matches_nothing_with_nul(list, "caller")
    def title_matches(self, word: str, caller: Caller, limit: int) -> list[int]:
        terms = query_terms(word, self.languages(caller))
        if not terms:
            return []
        where, params = reader_filter(caller, alias="t")
        with self.db.tx(caller.org) as con:
            rows = con.execute(f"SELECT DISTINCT t.chunk_id FROM title_terms t WHERE {where} AND t.term = ANY(%s) LIMIT %s",
                               (*params, terms, limit)).fetchall()
        return [int(r[0]) for r in rows]

    @matches_nothing_with_nul(lambda: False, "caller")
    def mentions(self, text: str, caller: Caller) -> bool:
        return bool(self._match(caller, text, 1))

    # -- full text -----------------------------------------------------------------------------
    def lexical_image(self, index: TextIndex, weights: tuple[float, float],
                      recent_above: int | None = None) -> BM25Image | None:
        """Built from the ``tsvector`` rows: each lexeme's positions by weight are the
        occurrences per column (A title, B body, D access tokens, weight 0), as FTS5's
        ``fts5vocab`` gives them. ``recent_above`` reads only the rows above that id, through
        the index on ``(fts_index, id)``."""
        above = recent_above or 0
        with self.db.tx(ALL_TENANTS, snapshot=True) as con:
            generation = int(con.execute("SELECT value FROM meta WHERE key='generation'").fetchone()[0])
            if recent_above is not None:
                trimmed = con.execute("SELECT value FROM meta WHERE key=%s", (f"trimmed:{TextIndex(index).value}",)
                                      ).fetchone()
                if trimmed is not None and int(trimmed[0]) > recent_above:
                    return None
            kind = TextIndex(index).value
            unit_ids = np.fromiter((r[0] for r in con.execute(
                "SELECT id FROM chunks WHERE fts_index=%s AND id > %s ORDER BY id", (kind, above))), dtype=np.int64)
            # A server-side cursor: the postings come a batch at a time, never all as Python rows.
            with con.cursor(name="lexical_image") as cursor:
                cursor.execute(
                    "SELECT x.lexeme, c.id, sum(CASE w WHEN 'A' THEN %s::float8 WHEN 'B' THEN %s::float8 ELSE 0 END),"
                    " count(*) FROM chunks c, unnest(c.fts) x, unnest(x.weights) w WHERE c.fts_index=%s AND c.id > %s"
                    " GROUP BY 1, 2 ORDER BY x.lexeme COLLATE \"C\", 2", (*weights, kind, above))
                return BM25Image.from_batches(unit_ids, batches(cursor), generation)

    def trim_recent(self, index: TextIndex, upto: int) -> None:
        """Rows stay readable above any id here (they are read through an index, not kept apart),
        but the watermark is recorded as the contract asks, so every backend answers alike."""
        with self.db.tx(ALL_TENANTS, write=True) as con:
            con.execute("INSERT INTO meta VALUES(%s, %s) ON CONFLICT(key) DO UPDATE SET value ="
                        " greatest(meta.value::bigint, excluded.value::bigint)::text",
                        (f"trimmed:{TextIndex(index).value}", str(upto)))

    def save_image(self, index: TextIndex, weights: tuple[float, float], image: BM25Image) -> bool:
        """Not kept: workers of one PostgreSQL may run on different machines, with no directory
        in common; each builds its own (streamed, eight bytes a posting)."""
        return False

    def saved_image(self, index: TextIndex, weights: tuple[float, float]) -> BM25Image | None:
        return None

    # -- vectors -------------------------------------------------------------------------------
    @staticmethod
    def _vectors(rows: list[tuple[Any, ...]]) -> tuple[np.ndarray, np.ndarray]:
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        return ids, np.array([r[1] for r in rows], dtype=np.float32)

    def vectors(self, model_id: str, after_id: int = 0) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        last = after_id
        while True:
            with self.db.tx(ALL_TENANTS) as con:
                rows = con.execute("SELECT chunk_id, embedding::real[] FROM vectors WHERE model_id=%s AND chunk_id>%s"
                                   " ORDER BY chunk_id LIMIT 4096", (model_id, last)).fetchall()
            if not rows:
                return
            ids, vecs = self._vectors(rows)
            yield ids, vecs
            last = int(ids[-1])

    def vectors_of(self, model_id: str, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        with self.db.tx(ALL_TENANTS) as con:
            rows = con.execute("SELECT chunk_id, embedding::real[] FROM vectors WHERE model_id=%s AND chunk_id = ANY(%s)"
                               " ORDER BY chunk_id", (model_id, [int(i) for i in ids])).fetchall()
        if not rows:
            return np.empty(0, dtype=np.int64), np.empty((0, 0), dtype=np.float32)
        return self._vectors(rows)

    def vector_ids(self, model_id: str) -> np.ndarray:
        with self.db.tx(ALL_TENANTS) as con:
            rows = con.execute("SELECT chunk_id FROM vectors WHERE model_id=%s ORDER BY chunk_id", (model_id,)).fetchall()
        return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))

    def count_vectors(self, model_id: str) -> int:
        return int(self._scalar("SELECT count(*) FROM vectors WHERE model_id=%s", (model_id,)))

    def count_vector_chunks(self) -> int:
        return int(self._scalar("SELECT count(*) FROM chunks WHERE kind = ANY(%s)", (list(VECTOR_KINDS),)))

    def last_unit_id(self) -> int:
        return int(self._scalar("SELECT coalesce(max(id), 0) FROM chunks"))

    def chunks_missing_vectors(self, model_id: str, limit: int, after_id: int = 0,
                               orgs: Sequence[str] | None = None) -> list[tuple[int, str, str]]:
        only = "" if orgs is None else " AND c.org = ANY(%s)"
        with self.db.tx(ALL_TENANTS) as con:
            rows = con.execute("SELECT c.id, c.title, c.text FROM chunks c WHERE c.id > %s AND c.kind = ANY(%s) AND NOT"
                               f" EXISTS (SELECT 1 FROM vectors v WHERE v.chunk_id=c.id AND v.model_id=%s){only}"
                               " ORDER BY c.id LIMIT %s",
                               (after_id, list(VECTOR_KINDS), model_id, *(() if orgs is None else (list(orgs),)),
                                limit)).fetchall()
        return [(int(r[0]), r[1], r[2]) for r in rows]

    def put_vectors(self, model_id: str, ids: Sequence[int], vecs: np.ndarray) -> None:
        with self.db.tx(ALL_TENANTS, write=True) as con:
            access = {r[0]: tuple(r[1:]) for r in con.execute(
                "SELECT id, org, agent, public, principals FROM chunks WHERE id = ANY(%s)", ([int(i) for i in ids],)).fetchall()}
            for i, vec in zip(ids, vecs, strict=True):
                if int(i) in access:
                    self._put_vector(con, int(i), access[int(i)], model_id, vec)  # type: ignore[arg-type]
            if len(vecs):
                self._ensure_hnsw(con, model_id, int(vecs[0].shape[0]))
            con.execute("UPDATE meta SET value = (value::bigint + 1)::text WHERE key='vector_backfills'")

    def drop_vectors_except(self, model_id: str, also: Sequence[str] = ()) -> None:
        try:
            with self.db.tx(ALL_TENANTS, write=True) as con:
                con.execute("DELETE FROM vectors WHERE model_id <> ALL(%s)", ([model_id, *also],))
                self._set_meta(con, "model_id", model_id)
                self._bump(con)
        finally:
            self._changed()

    # -- learned term weights (SPEC B3; electa.stores.protocol.SparseTermStore) -------------------
    def chunks_missing_sparse(self, model_id: str, limit: int, after_id: int = 0) -> list[tuple[int, str, str]]:
        with self.db.tx(ALL_TENANTS) as con:
            rows = con.execute("SELECT c.id, c.title, c.text FROM chunks c WHERE c.id > %s AND c.kind='parent' AND NOT"
                               " EXISTS (SELECT 1 FROM sparse_terms s WHERE s.chunk_id=c.id AND s.model_id=%s)"
                               " ORDER BY c.id LIMIT %s", (after_id, model_id, limit)).fetchall()
        return [(int(r[0]), r[1], r[2]) for r in rows]

    def put_sparse(self, model_id: str, rows: Sequence[tuple[int, np.ndarray, np.ndarray]]) -> None:
        """Under the writers' lock: sequence numbers are drawn in commit order (see 0006)."""
        from electa.stores.sparse_index import pack

        if not rows:
            return
        with self.db.tx(ALL_TENANTS, write=True) as con:
            org_of = {int(r[0]): r[1] for r in con.execute(
                "SELECT id, org FROM chunks WHERE id = ANY(%s)", ([int(r[0]) for r in rows],)).fetchall()}
            cursor = con.cursor()
            cursor.executemany(
                "INSERT INTO sparse_terms(chunk_id, model_id, org, terms, weights) VALUES(%s,%s,%s,%s,%s)"
                " ON CONFLICT(model_id, chunk_id) DO NOTHING",
                [(int(i), model_id, org_of[int(i)], *pack(t, w)) for i, t, w in rows if int(i) in org_of])
            if cursor.rowcount > 0:  # results cached before a unit had weights are not served after
                self._bump_backfills(con)

    def sparse_rows_after(self, model_id: str, after_seq: int) -> Iterator[tuple[int, int, bytes, bytes]]:
        """A server-side cursor: rows come a batch at a time (an image's first build reads them all)."""
        with self.db.tx(ALL_TENANTS) as con, con.cursor(name="sparse_rows") as cursor:
            cursor.itersize = 4096
            cursor.execute("SELECT seq, chunk_id, terms, weights FROM sparse_terms WHERE model_id=%s AND seq > %s"
                           " ORDER BY seq", (model_id, after_seq))
            for a, b, c, d in cursor:
                yield int(a), int(b), bytes(c), bytes(d)

    def count_sparse(self, model_id: str) -> int:
        return int(self._scalar("SELECT count(*) FROM sparse_terms WHERE model_id=%s", (model_id,)))

    def count_parents(self) -> int:
        return int(self._scalar("SELECT count(*) FROM chunks WHERE kind='parent'"))

    def drop_sparse_except(self, model_id: str) -> int:
        with self.db.tx(ALL_TENANTS, write=True) as con:
            return int(con.execute("DELETE FROM sparse_terms WHERE model_id<>%s", (model_id,)).rowcount)

    def documents_missing_title_units(self, limit: int) -> list[tuple[int, str, int]]:
        with self.db.tx(ALL_TENANTS) as con:
            rows = con.execute(
                "SELECT * FROM (SELECT d.id, d.title, (SELECT c.id FROM chunks c WHERE c.document_id=d.id AND"
                " c.kind='parent' AND btrim(c.text)<>'' ORDER BY c.ordinal LIMIT 1) AS p FROM documents d"
                " WHERE d.kind='doc' AND btrim(d.title)<>'' AND NOT EXISTS (SELECT 1 FROM chunks c WHERE"
                " c.document_id=d.id AND c.kind='title')) t WHERE p IS NOT NULL ORDER BY id LIMIT %s", (limit,)).fetchall()
        return [(int(r[0]), r[1], int(r[2])) for r in rows]

    def add_title_units(self, model_id: str, rows: Sequence[tuple[int, str, int]], vecs: np.ndarray) -> None:
        from electa.ingest.chunker import CHUNKER_VERSION

        try:
            with self.db.tx(ALL_TENANTS, write=True) as con:
                for (document_id, title, parent_id), vec in zip(rows, vecs, strict=True):
                    found = con.execute(
                        "SELECT max(c.ordinal), max(c.source_version), count(*) FILTER (WHERE c.kind='title'),"
                        " min(d.org), min(d.agent), bool_and(d.public), min(d.principals::text)::text[]"
                        " FROM chunks c JOIN documents d ON d.id=c.document_id WHERE c.document_id=%s",
                        (document_id,)).fetchone()
                    if found[0] is None or found[2]:
                        continue
                    chunk_id = con.execute(
                        "INSERT INTO chunks(document_id, org, agent, public, principals, kind, ordinal, parent_id, title,"
                        " text, content_hash, source_version, chunker_version) VALUES(%s,%s,%s,%s,%s,%s,%s,%s,%s,'',%s,%s,%s)"
                        " RETURNING id",
                        (document_id, found[3], found[4], found[5], found[6], ChunkKind.TITLE.value, found[0] + 1,
                         parent_id, title, hashlib.sha256(f"{title}\n".encode()).hexdigest(), found[1],
                         CHUNKER_VERSION)).fetchone()[0]
                    self._put_vector(con, chunk_id, (found[3], found[4], found[5], found[6]), model_id, vec)
                    self._flag(con, chunk_id, found[3], title, "")
                self._bump(con)
        finally:
            self._changed()

    def dense_index(self, model_id: str, dim: int, settings: Settings) -> VectorIndex:
        """pgvector's HNSW index of this database (see :mod:`electa.stores.postgres.vectors`)."""
        from electa.stores.postgres.vectors import PgVectorIndex

        return PgVectorIndex(self, model_id, dim, settings.hnsw_ef_search, settings.exact_below)

    # -- injected instructions -------------------------------------------------------------------
    @matches_nothing_with_nul(list, "org", "agent")
    def flagged(self, org: str, agent: str | None = None) -> list[dict[str, object]]:
        where, params = "d.org=%s", [org]
        if agent is not None:
            where += " AND d.agent=%s"
            params.append(agent)
        with self.db.tx(org, snapshot=True) as con:
            flagged, places_of = flagged_sql(where, "%s")
            rows = con.execute(flagged, params).fetchall()
            places: dict[int, list[tuple[str, str]]] = {}
            for document_id in {r[1] for r in rows}:
                places[document_id] = sorted((str(uri), str(url)) for uri, url in con.execute(
                    places_of, (document_id,)).fetchall())
        return flagged_records(rows, places)

    def rescan_injections(self, limit: int) -> tuple[int, int]:
        with self.db.tx(ALL_TENANTS, write=True) as con:
            pending = int(con.execute("SELECT coalesce((SELECT value FROM meta WHERE key='injection_pending'), '0')"
                                      ).fetchone()[0])
            cursor = int(con.execute("SELECT coalesce((SELECT value FROM meta WHERE key='injection_cursor'), '0')"
                                     ).fetchone()[0])
            rows = con.execute("SELECT id, org, title, text FROM chunks WHERE id>%s AND id<=%s ORDER BY id LIMIT %s",
                               (cursor, pending, limit)).fetchall() if limit > 0 else []
            for chunk_id, org, title, text in rows:
                con.execute("DELETE FROM chunk_flags WHERE chunk_id=%s", (chunk_id,))
                self._flag(con, chunk_id, org, title, text)
            if limit > 0:
                cursor = int(rows[-1][0]) if len(rows) == limit else pending
                self._set_meta(con, "injection_cursor", str(cursor))
            left = int(con.execute("SELECT count(*) FROM chunks WHERE id>%s AND id<=%s", (cursor, pending)).fetchone()[0])
        return len(rows), left

    # -- statistics ------------------------------------------------------------------------------
    def stats(self) -> dict[str, object]:
        with self.db.tx(ALL_TENANTS, snapshot=True) as con:
            count = lambda sql: int(con.execute(sql).fetchone()[0])
            return {
                "sources": count("SELECT count(*) FROM sources"),
                "documents": count("SELECT count(*) FROM documents WHERE kind='doc'"),
                "qa_pairs": count("SELECT count(*) FROM documents WHERE kind='qa'"),
                "chunks": dict(con.execute("SELECT kind, count(*) FROM chunks GROUP BY kind").fetchall()),
                "vectors": dict(con.execute("SELECT model_id, count(*) FROM vectors GROUP BY model_id").fetchall()),
                "model_id": (con.execute("SELECT value FROM meta WHERE key='model_id'").fetchone() or [None])[0],
                "generation": int(con.execute("SELECT value FROM meta WHERE key='generation'").fetchone()[0]),
                "organisations": [r[0] for r in con.execute(
                    'SELECT org FROM (SELECT DISTINCT org FROM sources) o ORDER BY org COLLATE "C"').fetchall()],
                "bytes_on_disk": count("SELECT pg_database_size(current_database())"),
            }


if TYPE_CHECKING:
    _STORE: Store = PostgresStore("")  # mypy proves here that PostgresStore satisfies the Store Protocol

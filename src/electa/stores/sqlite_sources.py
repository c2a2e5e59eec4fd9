"""The embedded store's sources: each written whole in one transaction (a crash or a bad file
mid-ingest leaves the previous state intact, SPEC A8), its documents shared where another source
holds the same text under the same access, renamed, detached and deleted; and the folder roots
a sync names its sources under.

A mixin of :class:`electa.stores.sqlite.SqliteStore` (:class:`~electa.stores.sqlite_tables.StoreTables`
says what it reads of it).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from electa.errors import ModelMismatchError
from electa.stores.protocol import (
    PreparedDocument,
    SourceOutcome,
    SourceRecord,
    document_kind,
    language_of,
    same_access,
    same_documents,
)
from electa.stores.records import renamed_ext_id
from electa.stores.sqlite_acl import access_json, acl_text
from electa.stores.sqlite_injections import flag_unit
from electa.stores.sqlite_ops import check_org_name, normalise_trigger
from electa.stores.sqlite_schema import (
    FTS_COLUMNS,
    FTS_KINDS,
    FTS_TABLES,
    RECENT_TABLES,
)
from electa.stores.sqlite_tables import StoreTables
from electa.stores.sqlite_vectors import vector_blob
from electa.text.analysis import DEFAULT_LANGUAGE, fts_text, same_analysis
from electa.types import Access, ChunkKind

_SOURCE_COLUMNS = ("id", "org", "agent", "uri", "kind", "url", "version", "content_hash", "documents", "access",
                   "updated_at")
_SOURCE_COLUMNS_SQL = ", ".join(_SOURCE_COLUMNS)


def _source_record(row: Sequence[Any]) -> dict[str, Any]:
    rec = dict(zip(_SOURCE_COLUMNS, row, strict=True))
    rec["access"] = json.loads(str(rec["access"]))
    return rec


class SourceTables(StoreTables):
    """The sources, documents and units the embedded store writes, and its reads of sources and
    roots (see the module's docstring)."""

    def source(self, org: str, agent: str, uri: str) -> dict[str, Any] | None:
        row = self.con.execute(f"SELECT {_SOURCE_COLUMNS_SQL} FROM sources WHERE org=? AND agent=? AND uri=?",
                               (org, agent, uri)).fetchone()
        return None if row is None else _source_record(row)

    def source_unit_ids(self, org: str, agent: str, uri: str, kinds: Sequence[ChunkKind],
                        ext_ids: Sequence[str] | None = None) -> list[int]:
        wanted = sorted({str(k) for k in kinds})
        names = sorted(set(ext_ids)) if ext_ids is not None else None
        if not wanted or names == []:
            return []
        head = ("SELECT DISTINCT c.id FROM sources s JOIN locations l ON l.source_id = s.id"
                " JOIN chunks c ON c.document_id = l.document_id"
                f" WHERE s.org=? AND s.agent=? AND s.uri=? AND c.kind IN ({','.join('?' * len(wanted))})")
        if names is None:
            return [int(r[0]) for r in self.con.execute(head + " ORDER BY c.id", (org, agent, uri, *wanted))]
        found: set[int] = set()
        for at in range(0, len(names), 400):  # (under SQLite's limit of bound values)
            part = names[at:at + 400]
            found.update(int(r[0]) for r in self.con.execute(
                head + f" AND l.ext_id IN ({','.join('?' * len(part))})", (org, agent, uri, *wanted, *part)))
        return sorted(found)

    def source_updated(self, org: str, ids: Iterable[int]) -> dict[int, float]:
        wanted = sorted({int(i) for i in ids})
        if not wanted:
            return {}
        return {int(i): float(t) for i, t in self.con.execute(
            f"SELECT id, updated_at FROM sources WHERE org=? AND id IN ({','.join('?' * len(wanted))})",
            (org, *wanted))}

    def known_text_hashes(self, org: str, agent: str, access: Access,
                          among: Iterable[str] | None = None) -> set[str]:
        head = "SELECT text_hash FROM documents WHERE org=? AND agent=? AND access_sig=?"
        if among is None:
            return {r[0] for r in self.con.execute(head, (org, agent, access.signature()))}
        wanted, found = sorted(set(among)), set[str]()
        for at in range(0, len(wanted), 500):  # (under SQLite's limit of bound values)
            part = wanted[at:at + 500]
            found.update(r[0] for r in self.con.execute(f"{head} AND text_hash IN ({','.join('?' * len(part))})",
                                                        (org, agent, access.signature(), *part)))
        return found

    def put_source(self, source: SourceRecord, docs: Sequence[PreparedDocument], model_id: str = "") -> SourceOutcome:
        now = time.time()
        access = source.access
        check_org_name(source.org)
        with self.transaction() as con:
            same_analysis(con.execute("SELECT value FROM meta WHERE key='analysis'").fetchone())
            # Pages written under a name make it an organisation, in the same transaction.
            con.execute("INSERT OR IGNORE INTO organisations(name, created_at) VALUES(?, ?)", (source.org, now))
            row = con.execute(
                "SELECT id, version, content_hash, access, url FROM sources WHERE org=? AND agent=? AND uri=?",
                (source.org, source.agent, source.uri),
            ).fetchone()
            if row is not None and same_access(json.loads(row[3]), access) and (row[4] or "") == source.url:
                if row[2] == source.content_hash:
                    return SourceOutcome(source.uri, "unchanged", row[1], len(docs))
                held = con.execute("SELECT d.text_hash, l.url, l.ext_id, d.kind FROM locations l JOIN documents d"
                                   " ON d.id = l.document_id WHERE l.source_id=? AND d.access_sig=?",
                                   (row[0], access.signature())).fetchall()
                if set(held) == same_documents(source, docs):
                    # Another hash, the same documents (a file read again by another reader that
                    # reads it the same): its version and last change stay (recency reads the
                    # last change), its hash, kind and count are recorded.
                    con.execute("UPDATE sources SET content_hash=?, kind=?, documents=? WHERE id=?",
                                (source.content_hash, source.kind, len(docs), row[0]))
                    return SourceOutcome(source.uri, "unchanged", row[1], len(docs))
            removed, kept = 0, set[int]()
            if row is None:
                cur = con.execute(
                    "INSERT INTO sources(org, agent, uri, kind, url, version, content_hash, access,"
                    " documents, created_at, updated_at) VALUES(?,?,?,?,?,1,?,?,?,?,?)",
                    (source.org, source.agent, source.uri, source.kind, source.url,
                     source.content_hash, access_json(access), len(docs), now, now),
                )
                source_id, version, status = int(cur.lastrowid or 0), 1, "added"
            else:
                source_id, version, status = row[0], row[1] + 1, "updated"
                # Documents the new version still holds (same text, same access) stay as they
                # are, with their chunks and vectors: only what changed is replaced (SPEC A5).
                removed, kept = self._detach_source(con, source_id, keep={d.text_hash for d in docs},
                                                    access_sig=access.signature())
                con.execute(
                    "UPDATE sources SET version=?, content_hash=?, kind=?, url=?, access=?,"
                    " documents=?, updated_at=? WHERE id=?",
                    (version, source.content_hash, source.kind, source.url,
                     access_json(access), len(docs), now, source_id),
                )
            duplicates = 0
            acl = acl_text(access)
            for doc in docs:
                existing = con.execute(
                    "SELECT id FROM documents WHERE org=? AND agent=? AND text_hash=? AND access_sig=?",
                    (source.org, source.agent, doc.text_hash, access.signature()),
                ).fetchone()
                if existing is not None:
                    duplicates += existing[0] not in kept
                    document_id = existing[0]
                else:
                    document_id = self._insert_document(con, source, doc, version, acl, model_id)
                con.execute(
                    "INSERT OR IGNORE INTO locations VALUES(?,?,?,?)",
                    (document_id, source_id, doc.url or source.url, doc.ext_id),
                )
            if model_id and any(v is not None for d in docs for v in d.vectors):
                # The first vectors written name the store's model in the same transaction, so a
                # crash can never leave vectors of an unnamed model behind (SPEC A4).
                stored = con.execute("SELECT value FROM meta WHERE key='model_id'").fetchone()
                if stored is None:
                    self.set_meta(con, "model_id", model_id)
                elif stored[0] != model_id:
                    raise ModelMismatchError(f"this store holds vectors of {stored[0]}, not {model_id}:"
                                             " run `electa reindex` first")
            self._bump(con)
        self._changed()
        return SourceOutcome(source.uri, status, version, len(docs), duplicates, removed)

    def _insert_document(self, con: sqlite3.Connection, source: SourceRecord, doc: PreparedDocument,
                         version: int, acl: str, model_id: str) -> int:
        from electa.ingest.chunker import CHUNKER_VERSION

        access = source.access
        kind = document_kind(doc)
        lang = language_of(doc)
        cur = con.execute(
            "INSERT INTO documents(org, agent, kind, title, text_hash, access_sig, public, lang)"
            " VALUES(?,?,?,?,?,?,?,?)",
            (source.org, source.agent, kind, doc.title, doc.text_hash,
             access.signature(), int(bool(access.public)), lang),
        )
        document_id = int(cur.lastrowid or 0)
        lang = lang or DEFAULT_LANGUAGE
        con.execute("INSERT OR IGNORE INTO languages VALUES(?,?,?)", (source.org, source.agent, lang))
        if not access.public:
            con.executemany(
                "INSERT OR IGNORE INTO doc_principals VALUES(?, ?)",
                [(p, document_id) for p in set(access.principals)],
            )
        ids: dict[int, int] = {}
        for chunk, vec in zip(doc.chunks, doc.vectors, strict=True):
            content_hash = hashlib.sha256(f"{chunk.title}\n{chunk.text}".encode()).hexdigest()
            cur = con.execute(
                "INSERT INTO chunks(document_id, kind, ordinal, parent_id, title, text, content_hash,"
                " source_version, chunker_version) VALUES(?,?,?,?,?,?,?,?,?)",
                (document_id, chunk.kind.value, chunk.ordinal,
                 None if chunk.parent is None else ids.get(chunk.parent), chunk.title, chunk.text,
                 content_hash, version, CHUNKER_VERSION),
            )
            chunk_id = int(cur.lastrowid or 0)
            ids[chunk.ordinal] = chunk_id
            flag_unit(con, chunk_id, chunk.title, chunk.text)
            # Each row also goes to the "recent" table, from which the small segment of rows
            # written since the last merge is read (see lexical_image).
            if chunk.kind in FTS_KINDS:
                index = FTS_KINDS[chunk.kind]
                row = (chunk_id, fts_text(chunk.title, lang), fts_text(chunk.text, lang), acl)
                for table in (FTS_TABLES[index], RECENT_TABLES[index]):
                    con.execute(f"INSERT INTO {table}(rowid, {FTS_COLUMNS[index]}) VALUES(?,?,?,?)", row)
            elif chunk.kind is ChunkKind.CURATED:
                con.executemany("INSERT OR IGNORE INTO curated_triggers VALUES(?, ?)",
                                [(normalise_trigger(t), chunk_id) for t in chunk.title.split("\n") if t.strip()])
            if vec is not None:
                con.execute("INSERT INTO vectors VALUES(?,?,?,?)",
                            (chunk_id, model_id, int(vec.shape[0]), vector_blob(vec)))
        return document_id

    def _detach_source(self, con: sqlite3.Connection, source_id: int, keep: set[str] | frozenset[str] = frozenset(),
                       access_sig: str = "") -> tuple[int, set[int]]:
        """Drop a source's locations and every document no other source still holds, except
        documents whose text hash is in ``keep`` under ``access_sig`` (an update that still
        holds them). Returns the units removed and the ids of the documents kept."""
        orphans = con.execute(
            "SELECT l.document_id, d.text_hash, d.access_sig FROM locations l JOIN documents d ON d.id=l.document_id"
            " WHERE l.source_id=? AND NOT EXISTS ("
            " SELECT 1 FROM locations o WHERE o.document_id=l.document_id AND o.source_id<>?)",
            (source_id, source_id)).fetchall()
        con.execute("DELETE FROM locations WHERE source_id=?", (source_id,))
        removed = 0
        kept = {d for d, h, sig in orphans if h in keep and sig == access_sig}
        generation = self._generation(con)
        for document_id in (d for d, _, _ in orphans if d not in kept):
            chunk_ids = [r[0] for r in con.execute("SELECT id FROM chunks WHERE document_id=?", (document_id,))]
            con.executemany("INSERT INTO removed_units VALUES(?, ?)", [(generation, c) for c in chunk_ids])
            for table in (*FTS_TABLES.values(), *RECENT_TABLES.values()):
                con.executemany(f"DELETE FROM {table} WHERE rowid=?", [(c,) for c in chunk_ids])
            removed += len(chunk_ids)
            con.execute("DELETE FROM documents WHERE id=?", (document_id,))
        return removed, kept

    def roots(self, org: str, agent: str) -> dict[str, str]:
        """Names of ingested folders and files -> the path each stands for (see ``ingest.naming``)."""
        return dict(self.con.execute("SELECT name, path FROM roots WHERE org=? AND agent=?", (org, agent)).fetchall())

    def claim_roots(self, org: str, agent: str,
                    decide: Callable[[dict[str, str]], Sequence[tuple[str, str]]]) -> None:
        """Record the ``(name, path)`` pairs ``decide`` returns when shown the roots as they are
        inside this transaction; whatever it raises leaves them as they were. A root none of
        whose sources is left (all deleted) is forgotten first: its name and path are free."""
        with self.transaction() as con:
            con.execute("DELETE FROM roots WHERE org=? AND agent=? AND NOT EXISTS (SELECT 1 FROM sources s WHERE"
                        " s.org=roots.org AND s.agent=roots.agent AND (s.uri=roots.name OR"
                        " substr(s.uri, 1, length(roots.name) + 1)=roots.name || '/'))", (org, agent))
            registered = dict(con.execute("SELECT name, path FROM roots WHERE org=? AND agent=?", (org, agent)).fetchall())
            for name, path in decide(registered):
                con.execute("INSERT INTO roots VALUES(?,?,?,?) ON CONFLICT(org, agent, name) DO UPDATE SET"
                            " path=excluded.path", (org, agent, name, path))

    def forget_root(self, org: str, agent: str, name: str) -> None:
        with self.transaction() as con:
            con.execute("DELETE FROM roots WHERE org=? AND agent=? AND name=?", (org, agent, name))

    def rename_source(self, org: str, agent: str, old_uri: str, new_uri: str) -> bool:
        """Give a stored source a new name (nothing else changes); False when there is no
        source ``old_uri`` or ``new_uri`` is taken."""
        if old_uri == new_uri or self.source(org, agent, old_uri) is None:
            return False
        with self.transaction() as con:
            done = self._rename(con, org, agent, old_uri, new_uri)
            if done:
                self._bump(con)
        return done

    def _rename(self, con: sqlite3.Connection, org: str, agent: str, old_uri: str, new_uri: str) -> bool:
        taken = con.execute("SELECT 1 FROM sources WHERE org=? AND agent=? AND uri=?", (org, agent, new_uri)).fetchone()
        if taken is not None:
            return False
        cur = con.execute("UPDATE sources SET uri=? WHERE org=? AND agent=? AND uri=?", (new_uri, org, agent, old_uri))
        if not cur.rowcount:
            return False
        source_id = con.execute("SELECT id FROM sources WHERE org=? AND agent=? AND uri=?",
                                (org, agent, new_uri)).fetchone()[0]
        for ext_id, in con.execute("SELECT ext_id FROM locations WHERE source_id=?", (source_id,)).fetchall():
            renamed = renamed_ext_id(old_uri, new_uri, ext_id)
            if renamed is not None:
                con.execute("UPDATE locations SET ext_id=? WHERE source_id=? AND ext_id=?", (renamed, source_id, ext_id))
        return True

    def delete_source(self, org: str, agent: str, uri: str) -> int:
        """Remove a source; returns how many stored units went with it. Unknown -> ``-1``."""
        with self.transaction() as con:
            row = con.execute("SELECT id FROM sources WHERE org=? AND agent=? AND uri=?",
                              (org, agent, uri)).fetchone()
            if row is None:
                return -1
            removed, _ = self._detach_source(con, row[0])
            con.execute("DELETE FROM sources WHERE id=?", (row[0],))
            self._bump(con)
        self._changed()
        return removed

    def list_sources(self, org: str | None = None) -> list[dict[str, object]]:
        sql = f"SELECT {_SOURCE_COLUMNS_SQL} FROM sources"
        params: tuple[object, ...] = ()
        if org is not None:
            sql += " WHERE org=?"
            params = (org,)
        return [_source_record(row) for row in self.con.execute(sql + " ORDER BY org, agent, uri", params)]

    def has_sources(self, org: str) -> bool:
        return self.con.execute("SELECT 1 FROM sources WHERE org=? LIMIT 1", (org,)).fetchone() is not None

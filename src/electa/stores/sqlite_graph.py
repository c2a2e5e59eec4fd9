"""The embedded store's knowledge graph (SPEC A6; :class:`electa.stores.protocol.GraphStore`).

A mixin of :class:`electa.stores.sqlite.SqliteStore` (:class:`~electa.stores.sqlite_tables.StoreTables`
says what it reads of it), kept apart so the index-keeping half of the store stays readable. The
model is :mod:`electa.graph.rows`': nodes per organisation, mentions and edges per unit.
Deletion needs no code of its own: a unit deleted cascades to its ``graph_units`` row, that to
its mentions and edges, and the trigger removes a node whose last mention went.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from electa.graph.extract import Extracted
from electa.graph.rows import OrgGraph, unit_graph
from electa.stores.sqlite_tables import StoreTables

GRAPH_SCHEMA = """
CREATE TABLE IF NOT EXISTS graph_nodes(
  id INTEGER PRIMARY KEY AUTOINCREMENT, org TEXT NOT NULL, key TEXT NOT NULL, kind TEXT NOT NULL, UNIQUE(org, key));
-- Each unit the extractor has read (with nothing found, too), so that it is not read again.
CREATE TABLE IF NOT EXISTS graph_units(
  chunk_id INTEGER PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE, org TEXT NOT NULL, extractor TEXT NOT NULL);
-- Each organisation's graph moves this when a unit's reading is stored or goes, however it goes
-- (a reader caches an organisation's graph by it: another tenant's write leaves it as it is).
CREATE TABLE IF NOT EXISTS graph_versions(org TEXT PRIMARY KEY, version INTEGER NOT NULL);

CREATE TABLE IF NOT EXISTS graph_mentions(
  node_id INTEGER NOT NULL REFERENCES graph_nodes(id) ON DELETE CASCADE,
  chunk_id INTEGER NOT NULL REFERENCES graph_units(chunk_id) ON DELETE CASCADE,
  name TEXT NOT NULL, PRIMARY KEY(node_id, chunk_id));
CREATE INDEX IF NOT EXISTS graph_mentions_chunk ON graph_mentions(chunk_id);
CREATE TABLE IF NOT EXISTS graph_edges(
  source_id INTEGER NOT NULL REFERENCES graph_nodes(id) ON DELETE CASCADE,
  target_id INTEGER NOT NULL REFERENCES graph_nodes(id) ON DELETE CASCADE,
  kind TEXT NOT NULL, chunk_id INTEGER NOT NULL REFERENCES graph_units(chunk_id) ON DELETE CASCADE,
  weight REAL NOT NULL, evidence TEXT NOT NULL, PRIMARY KEY(source_id, target_id, kind, chunk_id));
CREATE INDEX IF NOT EXISTS graph_edges_target ON graph_edges(target_id);
CREATE INDEX IF NOT EXISTS graph_edges_chunk ON graph_edges(chunk_id);
-- A node lives while a unit mentions it (every edge's unit mentions both its ends).
CREATE TRIGGER IF NOT EXISTS graph_node_orphaned AFTER DELETE ON graph_mentions
  WHEN NOT EXISTS (SELECT 1 FROM graph_mentions WHERE node_id = OLD.node_id)
  BEGIN DELETE FROM graph_nodes WHERE id = OLD.node_id; END;
"""
# Made once graph_units has its org column (a store of the first graph schema gains it on open).
GRAPH_VERSIONS = """
CREATE INDEX IF NOT EXISTS graph_units_org ON graph_units(org, extractor);
CREATE TRIGGER IF NOT EXISTS graph_unit_gone AFTER DELETE ON graph_units BEGIN
  INSERT INTO graph_versions VALUES(OLD.org, 1) ON CONFLICT(org) DO UPDATE SET version = version + 1; END;
"""


def upgrade_graph(con: sqlite3.Connection) -> None:
    """Bring a store made with the first graph schema (no ``org`` on ``graph_units``) to this one:
    the column is added and filled from each unit's document, then the index and trigger that
    read it are made."""
    columns = {row[1] for row in con.execute("PRAGMA table_info(graph_units)")}
    if "org" not in columns:
        con.execute("ALTER TABLE graph_units ADD COLUMN org TEXT NOT NULL DEFAULT ''")
        con.execute("UPDATE graph_units SET org = (SELECT d.org FROM chunks c JOIN documents d ON d.id=c.document_id"
                    " WHERE c.id=graph_units.chunk_id)")
    con.executescript(GRAPH_VERSIONS)


# The units the graph is read from: sections of pages and Q&A pairs (children and title units
# repeat their parent's words; curated answers are matched by trigger, never searched).
GRAPH_KINDS_SQL = "'parent','qa'"


class GraphTables(StoreTables):
    """The graph tables of the embedded store (see the module's docstring)."""

    def units_missing_graph(self, extractor: str, limit: int, after_id: int = 0) -> list[tuple[int, str, str]]:
        return [(int(r[0]), r[1], r[2]) for r in self.con.execute(
            f"SELECT c.id, c.title, c.text FROM chunks c WHERE c.id > ? AND c.kind IN ({GRAPH_KINDS_SQL}) AND NOT EXISTS"
            " (SELECT 1 FROM graph_units g WHERE g.chunk_id=c.id AND g.extractor=?) ORDER BY c.id LIMIT ?",
            (after_id, extractor, limit))]

    def put_graph(self, extractor: str, rows: Sequence[tuple[int, Extracted]]) -> int:
        if not rows:
            return 0
        stored = 0
        touched: set[str] = set()
        with self.transaction() as con:
            ids = [int(r[0]) for r in rows]
            org_of = dict(con.execute(
                f"SELECT c.id, d.org FROM chunks c JOIN documents d ON d.id=c.document_id WHERE c.id IN"
                f" ({','.join('?' * len(ids))})", ids).fetchall())
            for chunk_id, found in rows:
                org = org_of.get(int(chunk_id))
                if org is None:
                    continue  # deleted meanwhile: its graph would outlive it
                graph = unit_graph(found)
                # An earlier extractor's reading goes whole (its mentions and edges cascade).
                con.execute("DELETE FROM graph_units WHERE chunk_id=?", (chunk_id,))
                con.execute("INSERT INTO graph_units VALUES(?, ?, ?)", (chunk_id, org, extractor))
                node_of: dict[str, int] = {}
                for key, kind in graph.nodes:
                    con.execute("INSERT OR IGNORE INTO graph_nodes(org, key, kind) VALUES(?,?,?)", (org, key, kind))
                    node_of[key] = int(con.execute("SELECT id FROM graph_nodes WHERE org=? AND key=?",
                                                   (org, key)).fetchone()[0])
                con.executemany("INSERT INTO graph_mentions VALUES(?,?,?)",
                                [(node_of[key], chunk_id, name) for key, name in graph.mentions])
                con.executemany("INSERT INTO graph_edges VALUES(?,?,?,?,?,?)",
                                [(node_of[s], node_of[t], kind, chunk_id, w, ev) for s, t, kind, w, ev in graph.edges])
                stored += 1
                touched.add(org)
            con.executemany("INSERT INTO graph_versions VALUES(?, 1) ON CONFLICT(org) DO UPDATE SET version = version + 1",
                            [(o,) for o in sorted(touched)])
            if stored:
                self._bump_backfills(con)
        return stored

    def org_graph(self, org: str) -> OrgGraph:
        with self.snapshot() as con:
            nodes = {int(i): (k, kind) for i, k, kind in con.execute(
                "SELECT id, key, kind FROM graph_nodes WHERE org=?", (org,))}
            mentions = tuple((int(n), int(c), name) for n, c, name in con.execute(
                "SELECT m.node_id, m.chunk_id, m.name FROM graph_mentions m JOIN graph_nodes n ON n.id=m.node_id"
                " WHERE n.org=? ORDER BY m.chunk_id, m.node_id", (org,)))
            edges = tuple((int(s), int(t), kind, int(c), float(w)) for s, t, kind, c, w in con.execute(
                "SELECT e.source_id, e.target_id, e.kind, e.chunk_id, e.weight FROM graph_edges e JOIN graph_nodes n"
                " ON n.id=e.source_id WHERE n.org=? ORDER BY e.chunk_id, e.source_id, e.target_id, e.kind", (org,)))
        return OrgGraph(nodes, mentions, edges)

    def graph_version(self, org: str) -> int:
        row = self.con.execute("SELECT version FROM graph_versions WHERE org=?", (org,)).fetchone()
        return int(row[0]) if row else 0

    def count_graph(self, extractor: str | None = None) -> dict[str, int]:
        row = self.con.execute("SELECT (SELECT count(*) FROM graph_units WHERE ? IS NULL OR extractor=?),"
                               " (SELECT count(*) FROM graph_nodes), (SELECT count(*) FROM graph_mentions),"
                               " (SELECT count(*) FROM graph_edges)", (extractor, extractor)).fetchone()
        return {"units": int(row[0]), "nodes": int(row[1]), "mentions": int(row[2]), "edges": int(row[3])}

    def count_graph_units(self) -> int:
        return int(self.con.execute(f"SELECT count(*) FROM chunks WHERE kind IN ({GRAPH_KINDS_SQL})").fetchone()[0])

    def drop_graph_except(self, extractor: str) -> int:
        with self.transaction() as con:
            gone = con.execute("DELETE FROM graph_units WHERE extractor<>?", (extractor,)).rowcount
            if gone:
                self._bump_backfills(con)
            return gone

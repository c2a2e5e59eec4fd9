"""The PostgreSQL backend's knowledge graph (SPEC A6; :class:`electa.stores.protocol.GraphStore`):
the embedded store's model (:mod:`electa.stores.sqlite_graph`) behind the tenant wall
(migration 0011). A mixin of :class:`electa.stores.postgres.store.PostgresStore`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from electa.graph.extract import Extracted
from electa.graph.rows import OrgGraph, unit_graph
from electa.stores.postgres.connection import ALL_TENANTS, PgDatabase, matches_nothing_with_nul

GRAPH_KINDS = ["parent", "qa"]  # as the embedded store's GRAPH_KINDS_SQL


def _empty_graph() -> OrgGraph:
    return OrgGraph({}, (), ())


class PgGraphTables:
    db: PgDatabase

    @staticmethod
    def _bump_backfills(con: Any) -> None:
        """Move ``version`` (every cached result) for data added to units stored earlier that is
        no dense vector: no vector index refetches anything."""
        con.execute("UPDATE meta SET value = (value::bigint + 1)::text WHERE key='vector_backfills'")

    def units_missing_graph(self, extractor: str, limit: int, after_id: int = 0) -> list[tuple[int, str, str]]:
        with self.db.tx(ALL_TENANTS) as con:
            rows = con.execute(
                "SELECT c.id, c.title, c.text FROM chunks c WHERE c.id > %s AND c.kind = ANY(%s) AND NOT EXISTS"
                " (SELECT 1 FROM graph_units g WHERE g.chunk_id=c.id AND g.extractor=%s) ORDER BY c.id LIMIT %s",
                (after_id, GRAPH_KINDS, extractor, limit)).fetchall()
        return [(int(r[0]), r[1], r[2]) for r in rows]

    def put_graph(self, extractor: str, rows: Sequence[tuple[int, Extracted]]) -> int:
        if not rows:
            return 0
        stored = 0
        touched: set[str] = set()
        with self.db.tx(ALL_TENANTS, write=True) as con:
            org_of = dict(con.execute("SELECT id, org FROM chunks WHERE id = ANY(%s)",
                                      ([int(r[0]) for r in rows],)).fetchall())
            cur = con.cursor()
            for chunk_id, found in rows:
                org = org_of.get(int(chunk_id))
                if org is None:
                    continue  # deleted meanwhile: its graph would outlive it
                graph = unit_graph(found)
                con.execute("DELETE FROM graph_units WHERE chunk_id=%s", (chunk_id,))
                con.execute("INSERT INTO graph_units VALUES(%s, %s, %s)", (chunk_id, org, extractor))
                node_of: dict[str, int] = {}
                for key, kind in graph.nodes:
                    node_of[key] = int(con.execute(
                        "INSERT INTO graph_nodes(org, key, kind) VALUES(%s,%s,%s) ON CONFLICT(org, key)"
                        " DO UPDATE SET kind=graph_nodes.kind RETURNING id", (org, key, kind)).fetchone()[0])
                cur.executemany("INSERT INTO graph_mentions VALUES(%s,%s,%s,%s)",
                                [(node_of[key], chunk_id, org, name) for key, name in graph.mentions])
                cur.executemany("INSERT INTO graph_edges VALUES(%s,%s,%s,%s,%s,%s,%s)",
                                [(node_of[s], node_of[t], kind, chunk_id, org, w, ev) for s, t, kind, w, ev in graph.edges])
                stored += 1
                touched.add(org)
            cur.executemany("INSERT INTO graph_versions VALUES(%s, 1) ON CONFLICT(org) DO UPDATE SET"
                            " version = graph_versions.version + 1", [(o,) for o in sorted(touched)])
            if stored:
                self._bump_backfills(con)
        return stored

    @matches_nothing_with_nul(_empty_graph, "org")
    def org_graph(self, org: str) -> OrgGraph:
        with self.db.tx(org, snapshot=True) as con:
            nodes = {int(i): (k, kind) for i, k, kind in con.execute(
                "SELECT id, key, kind FROM graph_nodes WHERE org=%s", (org,)).fetchall()}
            mentions = tuple((int(n), int(c), name) for n, c, name in con.execute(
                "SELECT node_id, chunk_id, name FROM graph_mentions WHERE org=%s ORDER BY chunk_id, node_id",
                (org,)).fetchall())
            edges = tuple((int(s), int(t), kind, int(c), float(w)) for s, t, kind, c, w in con.execute(
                "SELECT source_id, target_id, kind, chunk_id, weight FROM graph_edges WHERE org=%s"
                " ORDER BY chunk_id, source_id, target_id, kind", (org,)).fetchall())
        return OrgGraph(nodes, mentions, edges)

    @matches_nothing_with_nul(int, "org")
    def graph_version(self, org: str) -> int:
        with self.db.tx(org) as con:
            row = con.execute("SELECT version FROM graph_versions WHERE org=%s", (org,)).fetchone()
        return int(row[0]) if row else 0

    def count_graph(self, extractor: str | None = None) -> dict[str, int]:
        with self.db.tx(ALL_TENANTS) as con:
            row = con.execute("SELECT (SELECT count(*) FROM graph_units WHERE %s::text IS NULL OR extractor=%s),"
                              " (SELECT count(*) FROM graph_nodes), (SELECT count(*) FROM graph_mentions),"
                              " (SELECT count(*) FROM graph_edges)", (extractor, extractor)).fetchone()
        return {"units": int(row[0]), "nodes": int(row[1]), "mentions": int(row[2]), "edges": int(row[3])}

    def count_graph_units(self) -> int:
        with self.db.tx(ALL_TENANTS) as con:
            return int(con.execute("SELECT count(*) FROM chunks WHERE kind = ANY(%s)", (GRAPH_KINDS,)).fetchone()[0])

    def drop_graph_except(self, extractor: str) -> int:
        with self.db.tx(ALL_TENANTS, write=True) as con:
            gone = int(con.execute("DELETE FROM graph_units WHERE extractor<>%s", (extractor,)).rowcount)
            if gone:
                self._bump_backfills(con)
            return gone

"""PgVectorIndex: the dense leg's index inside PostgreSQL (pgvector HNSW), SPEC B2 and B8.

The vectors never leave the database: a search is one query ordered by inner product (cosine
over unit vectors) through the model's partial HNSW index, with the caller's access filter in
the same ``WHERE``. A filter applied after an HNSW walk can starve the result (the walk's
``ef_search`` candidates may all be filtered out); pgvector 0.8's *iterative index scans*
(``hnsw.iterative_scan``) keep walking until ``LIMIT`` rows pass the filter, so the filter
stays inside the search as the embedded faiss index's ``IDSelector`` keeps it. When the
caller may read few vectors (under ``exact_below``), the search is exact instead: PostgreSQL
ranks just the allowed rows, found by key, as vector databases do for a selective filter.

``relaxed_order`` lets an iterative scan return rows slightly out of order; they are re-sorted
here. Every id returned is also checked against the caller's allowed set (belt and braces: the
SQL filter and the allowed set are two readings of one rule).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from electa.stores.postgres.connection import ALL_TENANTS
from electa.stores.protocol import AllowedSet

MAX_SCAN_TUPLES = 2_000_000

if TYPE_CHECKING:
    from electa.stores.postgres.store import PostgresStore


class PgVectorIndex:
    def __init__(self, store: PostgresStore, model_id: str, dim: int, ef_search: int = 128,
                 exact_below: int = 20_000) -> None:
        self.store, self.model_id, self.dim = store, model_id, int(dim)
        self.ef_search, self.exact_below = int(ef_search), int(exact_below)
        self._counted = (-1, 0)  # (store generation, vectors of the model then)

    def _total(self, generation: int) -> int:
        """Vectors of the model in the graph, counted once per store generation."""
        if self._counted[0] != generation:
            self._counted = (generation, self.store.count_vectors(self.model_id))
        return self._counted[1]

    def search(self, vec: np.ndarray, k: int, allowed: AllowedSet) -> list[tuple[int, float]]:
        from psycopg import sql

        from electa.stores.postgres.store import reader_filter, vector_literal

        if k <= 0 or not len(allowed):
            return []
        query = vector_literal(np.asarray(vec, dtype=np.float32).reshape(-1))
        exact = len(allowed) < self.exact_below
        cast = f"vector({self.dim})"
        if allowed.caller is not None:
            where, params = reader_filter(allowed.caller, alias="v")
            org = allowed.caller.org
            if exact:  # found by key (review: the tenant index read a whole large organisation),
                # and never a unit committed after the allowed set was read, taking a LIMIT slot
                where, params = f"v.chunk_id = ANY(%s) AND {where}", [allowed.ids.tolist(), *params]
        else:
            where, params, org = "v.chunk_id = ANY(%s)", [allowed.ids.tolist()], ALL_TENANTS
        # (counted before the query's own connection is taken: one connection per search)
        share = 1.0 if exact else len(allowed) / max(self._total(allowed.generation), len(allowed))
        with self.store.db.tx(org) as con:
            if not exact:
                # The walk, never a scan of every vector (the planner misjudges filtered walks).
                # An iterative scan gives up after max_scan_tuples rows (pgvector's default
                # 20,000); a caller holding a small share of the graph meets k of its own rows
                # only after about k / share, so the limit follows the share.
                budget = min(MAX_SCAN_TUPLES, max(20_000, int(8 * k / share)))
                con.execute("SELECT set_config('hnsw.ef_search', %s, true), set_config('hnsw.iterative_scan',"
                            " 'relaxed_order', true), set_config('hnsw.max_scan_tuples', %s, true),"
                            " set_config('enable_seqscan', 'off', true)", (str(max(self.ef_search, k)), str(budget)))
            # The model and dimension are literals, not parameters: the HNSW index is partial on
            # them, and a prepared (generic) plan could not prove a parameter matches.
            model = sql.Literal(self.model_id).as_string(con)
            # Exact: an order the graph cannot serve ("+ 0"), so PostgreSQL ranks just the allowed
            # rows, found by key (review: a seq scan read every tenant's vectors; and with index
            # scans merely disabled, PostgreSQL 18 still walked the graph and returned 2 of 20).
            order = f"(v.embedding::{cast} <#> %s::{cast}){' + 0' if exact else ''}"
            rows = con.execute(
                f"SELECT v.chunk_id, -(v.embedding::{cast} <#> %s::{cast}) FROM vectors v"
                f" WHERE v.model_id={model} AND v.dim={self.dim} AND {where} ORDER BY {order} LIMIT %s",
                (query, *params, query, k)).fetchall()
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        keep = np.isin(ids, allowed.ids)
        found = [(int(r[0]), float(r[1])) for r, ok in zip(rows, keep, strict=True) if ok]
        found.sort(key=lambda x: (-x[1], x[0]))
        return found

    def sync(self) -> None:
        """Nothing to catch up: the index lives with the vectors, in every transaction."""

    def save(self, force: bool = True) -> None:
        """Nothing to save: PostgreSQL persists the index."""

    def __len__(self) -> int:
        return self.store.count_vectors(self.model_id)

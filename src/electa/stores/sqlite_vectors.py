"""The embedded store's vectors and learned term weights (SPEC A4, B3;
:class:`electa.stores.protocol.SparseTermStore`): the ``vectors`` and ``sparse_terms`` tables,
read in batches and written in transactions.

A mixin of :class:`electa.stores.sqlite.SqliteStore` (:class:`~electa.stores.sqlite_tables.StoreTables`
says what it reads of it), kept apart as :mod:`electa.stores.sqlite_graph` is.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from electa.stores.sqlite_tables import StoreTables
from electa.types import ChunkKind

# Every unit kind but curated answers (matched by trigger, never searched) carries a vector.
VECTOR_KINDS = tuple(k.value for k in ChunkKind if k is not ChunkKind.CURATED)
VECTOR_KINDS_SQL = ",".join(f"'{k}'" for k in VECTOR_KINDS)


def vector_blob(vec: np.ndarray) -> bytes:
    return np.asarray(vec, dtype="<f4").tobytes()


class VectorTables(StoreTables):
    """The vector and term-weight tables of the embedded store (see the module's docstring)."""

    def vectors_of(self, model_id: str, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, vectors)`` of ``model_id`` for the given chunk ids that have one, sorted."""
        found_ids: list[int] = []
        blobs: list[bytes] = []
        dim = 0
        for start in range(0, ids.size, 500):
            part = [int(i) for i in ids[start:start + 500]]
            for cid, d, blob in self.con.execute(
                    f"SELECT chunk_id, dim, vector FROM vectors WHERE model_id=? AND chunk_id IN ({','.join('?' * len(part))})"
                    " ORDER BY chunk_id", (model_id, *part)):
                found_ids.append(int(cid))
                blobs.append(blob)
                dim = int(d)
        if not found_ids:
            return np.empty(0, dtype=np.int64), np.empty((0, 0), dtype=np.float32)
        vecs = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(found_ids), dim).astype(np.float32)
        return np.array(found_ids, dtype=np.int64), vecs

    def vector_ids(self, model_id: str) -> np.ndarray:
        """Every chunk id with a vector of ``model_id``, sorted."""
        rows = self.con.execute("SELECT chunk_id FROM vectors WHERE model_id=? ORDER BY chunk_id", (model_id,)).fetchall()
        return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))

    def vectors(self, model_id: str, after_id: int = 0) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Stored vectors of ``model_id`` with chunk id > ``after_id``, in batches ``(ids, vecs)``."""
        last = after_id
        while True:
            rows = self.con.execute(
                "SELECT chunk_id, dim, vector FROM vectors WHERE model_id=? AND chunk_id>?"
                " ORDER BY chunk_id LIMIT 4096", (model_id, last)).fetchall()
            if not rows:
                return
            dim = rows[0][1]
            ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
            vecs = np.frombuffer(b"".join(r[2] for r in rows), dtype="<f4").reshape(len(rows), dim)
            yield ids, vecs.astype(np.float32)
            last = int(ids[-1])

    def count_vectors(self, model_id: str) -> int:
        return int(self.con.execute("SELECT count(*) FROM vectors WHERE model_id=?", (model_id,)).fetchone()[0])

    def vector_models(self) -> dict[str, int]:
        return {r[0]: r[1] for r in self.con.execute("SELECT model_id, count(*) FROM vectors GROUP BY model_id")}

    def chunks_missing_vectors(self, model_id: str, limit: int, after_id: int = 0,
                               orgs: Sequence[str] | None = None) -> list[tuple[int, str, str]]:
        """Chunks that should have a vector (every kind but curated answers, which are matched
        by trigger) and have none of ``model_id``: what reindex still has to embed, whether the
        store switches model or the chunks were stored while no model was available."""
        only, params = "", [after_id, model_id]
        if orgs is not None:
            only = (f" AND c.document_id IN (SELECT id FROM documents WHERE org IN ({','.join('?' * len(orgs))}))"
                    if orgs else " AND 0")
            params += list(orgs)
        return [(r[0], r[1], r[2]) for r in self.con.execute(
            f"SELECT c.id, c.title, c.text FROM chunks c WHERE c.id > ? AND c.kind IN ({VECTOR_KINDS_SQL}) AND NOT EXISTS"
            f" (SELECT 1 FROM vectors v WHERE v.chunk_id=c.id AND v.model_id=?){only} ORDER BY c.id LIMIT ?",
            (*params, limit))]

    def count_vector_chunks(self) -> int:
        """How many chunks should carry a vector (see :meth:`chunks_missing_vectors`)."""
        return int(self.con.execute(f"SELECT count(*) FROM chunks WHERE kind IN ({VECTOR_KINDS_SQL})").fetchone()[0])

    def put_vectors(self, model_id: str, ids: Sequence[int], vecs: np.ndarray) -> None:
        """Add vectors to chunks stored earlier (reindex, or chunks stored while no model was
        available). Their ids lie below vectors already indexed, so the dense index cannot catch
        up by appending: the ``vector_backfills`` counter tells it to fetch the vectors it lacks.
        The generation does not move (nothing the full-text images hold changed); cached results
        are keyed by :attr:`version`, which does."""
        with self.transaction() as con:
            con.executemany("INSERT OR REPLACE INTO vectors VALUES(?,?,?,?)",
                            [(int(i), model_id, int(v.shape[0]), vector_blob(v)) for i, v in zip(ids, vecs, strict=True)])
            # The store's count moves every cache; the model's own tells only that model's index to
            # fetch what it lacks (review: an organisation's multilingual vectors, made at each of
            # its writes, made the main index scan every id of the store at the next search).
            con.executemany("INSERT INTO meta VALUES(?, '1') ON CONFLICT(key) DO UPDATE SET"
                            " value = CAST(value AS INTEGER) + 1", [("vector_backfills",), (f"vector_backfills:{model_id}",)])

    def drop_vectors_except(self, model_id: str, also: Sequence[str] = ()) -> None:
        with self.transaction() as con:
            kept = (model_id, *also)
            con.execute(f"DELETE FROM vectors WHERE model_id NOT IN ({','.join('?' * len(kept))})", kept)
            self.set_meta(con, "model_id", model_id)
            self._bump(con)

    # -- learned term weights (SPEC B3; electa.stores.protocol.SparseTermStore) -------------------
    def chunks_missing_sparse(self, model_id: str, limit: int, after_id: int = 0) -> list[tuple[int, str, str]]:
        """Parent units above ``after_id`` without term weights of ``model_id``, ascending."""
        return [(r[0], r[1], r[2]) for r in self.con.execute(
            "SELECT c.id, c.title, c.text FROM chunks c WHERE c.id > ? AND c.kind='parent' AND NOT EXISTS"
            " (SELECT 1 FROM sparse_terms s WHERE s.chunk_id=c.id AND s.model_id=?) ORDER BY c.id LIMIT ?",
            (after_id, model_id, limit))]

    def put_sparse(self, model_id: str, rows: Sequence[tuple[int, np.ndarray, np.ndarray]]) -> None:
        """Store units' term weights; a unit deleted meanwhile is skipped (its weights would
        outlive it). The generation does not move: the index image catches up by id. The
        backfill count does when a weight was added, so results cached before it are not served."""
        from electa.stores.sparse_index import pack

        with self.transaction() as con:
            live = {r[0] for r in con.execute(
                f"SELECT id FROM chunks WHERE id IN ({','.join('?' * len(rows))})", [int(r[0]) for r in rows])} \
                if rows else set()
            before = con.total_changes
            con.executemany("INSERT OR IGNORE INTO sparse_terms(chunk_id, model_id, terms, weights) VALUES(?,?,?,?)",
                            [(int(i), model_id, *pack(t, w)) for i, t, w in rows if int(i) in live])
            if con.total_changes != before:
                self._bump_backfills(con)

    def sparse_rows_after(self, model_id: str, after_seq: int) -> Iterator[tuple[int, int, bytes, bytes]]:
        """``(seq, unit id, terms, weights)`` of ``model_id`` stored after ``after_seq``, in
        the order they were stored."""
        cur = self.con.execute("SELECT seq, chunk_id, terms, weights FROM sparse_terms WHERE model_id=? AND seq > ?"
                               " ORDER BY seq", (model_id, after_seq))
        while batch := cur.fetchmany(4096):
            yield from ((int(a), int(b), bytes(c), bytes(d)) for a, b, c, d in batch)

    def count_parents(self) -> int:
        return int(self.con.execute("SELECT count(*) FROM chunks WHERE kind='parent'").fetchone()[0])

    def count_sparse(self, model_id: str) -> int:
        return int(self.con.execute("SELECT count(*) FROM sparse_terms WHERE model_id=?", (model_id,)).fetchone()[0])

    def drop_sparse_except(self, model_id: str) -> int:
        """Drop every other model's term weights (after a reindex made this model's); returns how many."""
        with self.transaction() as con:
            return con.execute("DELETE FROM sparse_terms WHERE model_id<>?", (model_id,)).rowcount

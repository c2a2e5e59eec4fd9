"""What the embedded store's table mixins (:class:`~electa.stores.sqlite_ops.OperationalTables`,
:class:`~electa.stores.sqlite_graph.GraphTables`, :class:`~electa.stores.sqlite_vectors.VectorTables`,
:class:`~electa.stores.sqlite_images.LexicalImages`, :class:`~electa.stores.sqlite_injections.InjectionTables`,
:class:`~electa.stores.sqlite_sources.SourceTables`)
read of the store they are mixed into (:class:`electa.stores.sqlite.SqliteStore` provides each
connection and write), and how the graph's and the term weights' tables count data they add to
units stored earlier.
"""

from __future__ import annotations

import sqlite3
from contextlib import AbstractContextManager


class StoreTables:
    """The base of the embedded store's table mixins (see the module's docstring)."""

    @property
    def con(self) -> sqlite3.Connection:
        raise NotImplementedError

    def transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def snapshot(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def set_meta(self, con: sqlite3.Connection, key: str, value: str) -> None:
        raise NotImplementedError

    def _bump(self, con: sqlite3.Connection) -> None:
        raise NotImplementedError

    def _changed(self) -> None:
        raise NotImplementedError

    @staticmethod
    def _generation(con: sqlite3.Connection) -> int:
        """The store's generation as ``con`` reads it: moved by every write of sources."""
        return int(con.execute("SELECT value FROM meta WHERE key='generation'").fetchone()[0])

    @staticmethod
    def _bump_backfills(con: sqlite3.Connection) -> None:
        """Move the store's ``version`` (:attr:`electa.stores.sqlite.SqliteStore.version`, and so
        every cached result) for data added to units stored earlier that is no dense vector (their
        graph, their term weights): no vector index refetches anything."""
        con.execute("INSERT INTO meta VALUES('vector_backfills', '1') ON CONFLICT(key) DO UPDATE SET"
                    " value = CAST(value AS INTEGER) + 1")

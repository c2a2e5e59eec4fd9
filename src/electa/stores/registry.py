"""Which backend a setting names (``ELECTA_STORE``): the embedded store or PostgreSQL."""

from __future__ import annotations

from pathlib import Path

from electa.config import Settings
from electa.errors import ConfigError
from electa.stores.protocol import Store

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def open_store(settings: Settings, path: str | Path | None = None) -> Store:
    """The store ``settings.store`` names: empty or ``sqlite`` for the embedded one in ``path``
    (default ``settings.data_dir``), a ``postgresql://`` DSN for PostgreSQL (``path`` then holds
    this process's local caches)."""
    directory = Path(path) if path is not None else settings.data_dir
    target = settings.store.strip()
    if target in ("", "sqlite"):
        from electa.stores.sqlite import SqliteStore

        return SqliteStore(directory)
    if target.startswith(POSTGRES_SCHEMES):
        from electa.stores.postgres.store import PostgresStore

        return PostgresStore(target, directory)
    raise ConfigError("ELECTA_STORE must be empty (the embedded store), 'sqlite', or a PostgreSQL DSN"
                      " (postgresql://user:password@host:port/database)")

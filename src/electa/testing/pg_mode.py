"""Run the test suite on PostgreSQL: ``ELECTA_TEST_BACKEND=postgres pytest`` (``make test``
runs it after the embedded pass).

Every store the code opens without naming one (``Engine.open(path)``, ``electa … --data
path``) opens on PostgreSQL instead, in a schema of its own named after the data directory
(:func:`electa.testing.pg_server.schema_dsn`), so tests keep one store per directory and a
subprocess given the same ``--data`` reaches the same store. Subprocesses are switched by
``tests/pg_mode/sitecustomize.py`` (on their ``PYTHONPATH``), which calls :func:`install`.
"""

from __future__ import annotations

from pathlib import Path

ENV_DSN = "ELECTA_TEST_PG_DSN"


def install(dsn: str) -> None:
    """Route stores opened without ``ELECTA_STORE`` to a schema of ``dsn`` per directory."""
    import electa.stores.registry as registry
    from electa.testing.pg_server import schema_dsn

    embedded = registry.open_store
    if getattr(embedded, "pg_mode", False):
        return

    def open_store(settings, path=None):  # type: ignore[no-untyped-def]
        if settings.store.strip():
            return embedded(settings, path)
        directory = Path(path) if path is not None else settings.data_dir
        directory.mkdir(parents=True, exist_ok=True)
        return embedded(settings.model_copy(update={"store": schema_dsn(dsn, directory)}), directory)

    open_store.pg_mode = True  # type: ignore[attr-defined]
    registry.open_store = open_store

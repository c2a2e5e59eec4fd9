"""One worker of ``electa serve --workers N``: uvicorn starts N processes, each calls
:func:`create_worker_app` and opens its own engine on the same store.

What the workers share is the store (PostgreSQL, or one embedded data directory: SQLite in WAL
mode takes one writer at a time and any number of readers) and, with ``ELECTA_REDIS_URL``, the
result cache and rate limits. A write through one worker is seen by every other at its next
request: each search reads the store's generation first (one indexed read), rebuilds what it
keeps in memory for an older one (the full-text segment of rows written since, the allowed
sets, the dense index's new vectors) and keys cached results by the store's version, so no
worker answers from what it read before the write. Without Redis each worker keeps its own
cache and its own rate-limit buckets (a visitor's budget is then per worker).
"""

from __future__ import annotations

import atexit
from typing import Any

from electa.config import Settings
from electa.engine import Engine


def create_worker_app() -> Any:
    """The app of one worker: the store and model ``Settings()`` name (``ELECTA_DATA_DIR``,
    ``ELECTA_STORE``, ``ELECTA_EMBEDDER``, set by ``electa serve`` from its options)."""
    from electa.api.app import create_app

    settings = Settings()
    # The model as `Engine.open` resolves it (review: naming `settings.embedder` here made a store
    # of an earlier default, which keeps its model when none is set, a mismatch in every worker).
    engine = Engine.open(settings.data_dir, settings)
    atexit.register(engine.close)
    return create_app(engine, settings.admin_token, settings.cache_ttl_s)

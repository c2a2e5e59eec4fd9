"""Full-text legs over SQLite FTS5 (SPEC B1, B4)."""

from __future__ import annotations

import logging
import threading

from electa.stores.bm25_memory import BM25Image
from electa.stores.protocol import AllowedSet
from electa.stores.sqlite import SqliteStore
from electa.types import Caller

log = logging.getLogger(__name__)

# Title weighted twice the body (reference/three-lane-company-search.txt); the acl column
# never scores. FTS5 applies column weights to term frequencies inside one BM25 (the BM25F
# form of Robertson, Zaragoza & Taylor 2004), not as bm25(title)*2 + bm25(body): summing two
# saturated BM25s rewards a word in the title twice over, which BM25F was designed to avoid.
CHUNK_WEIGHTS = (2.0, 1.0, 0.0)
QA_WEIGHTS = (2.0, 1.0, 0.0)


class SqliteFtsLeg:
    """BM25 over parent chunks (title = heading path), English Porter stemming.

    Ranks with an in-memory image of the FTS5 index when it is current (same formula, measured
    equal in tests), and with FTS5's own ``bm25()`` while the image is being rebuilt.
    """

    name = "fulltext"
    table = "chunk_fts"
    weights = CHUNK_WEIGHTS

    def __init__(self, store: SqliteStore, use_image: bool = True) -> None:
        self.store = store
        self.use_image = use_image
        self._image: BM25Image | None = None
        self._building = threading.Lock()
        self._thread: threading.Thread | None = None

    def available(self) -> bool:
        return True

    @property
    def why(self) -> str:
        return ""

    def warm(self) -> None:
        """Build the in-memory image now (after an ingest, before timing queries)."""
        with self._building:
            generation = self.store.generation
            if self._image is None or self._image.generation != generation:
                self._image = BM25Image.build(self.store.con, self.table, self.weights, generation)

    def refresh(self) -> None:
        """Rebuild the image in the background after a write; until it is current, queries are
        ranked by FTS5 itself (same results, slower), so no write waits for the rebuild."""
        if self._building.locked() or not self.use_image:
            return
        self._thread = threading.Thread(target=self._warm_and_close, name=f"{self.name}-image", daemon=True)
        self._thread.start()

    def _warm_and_close(self) -> None:
        try:
            self.warm()
        except Exception:
            log.warning("rebuilding the %s BM25 image failed; FTS5 ranks meanwhile", self.name, exc_info=True)
        finally:
            self.store.close()  # this thread's own connection

    def close(self, timeout: float = 60.0) -> None:
        """Wait for a background rebuild, so no thread outlives the engine."""
        thread = self._thread
        if thread is not None and thread.is_alive():
            thread.join(timeout)

    def search(self, query: str, caller: Caller, allowed: AllowedSet, depth: int) -> list[tuple[int, float]]:
        image = self._image
        if self.use_image:
            if image is not None and image.generation == allowed.generation:
                return image.search(query, allowed.ids, depth)
            self.refresh()
        return self.store.fts_search(self.table, query, caller, depth, self.weights)


class SqliteQaLeg(SqliteFtsLeg):
    """BM25 over curated Q&A pairs: question weighted twice the answer (SPEC B4)."""

    name = "qa"
    table = "qa_fts"
    weights = QA_WEIGHTS

    def __init__(self, store: SqliteStore) -> None:
        # Q&A sets are small; FTS5's own ranking is fast enough and needs no image.
        super().__init__(store, use_image=False)

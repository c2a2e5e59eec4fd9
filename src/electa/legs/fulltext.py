"""Full-text legs over the store's full-text indexes (SPEC B1, B4)."""

from __future__ import annotations

import logging
import threading

from electa.stores.bm25_memory import BM25Image
from electa.stores.protocol import AllowedSet, IndexStore, TextIndex
from electa.types import Caller

log = logging.getLogger(__name__)

# Title weighted twice the body (reference/three-lane-company-search.txt). The weights apply
# to term frequencies inside one BM25, as FTS5 applies column weights (the BM25F form of
# Robertson, Zaragoza & Taylor 2004), not as bm25(title)*2 + bm25(body): summing two saturated
# BM25s rewards a word in the title twice over, which BM25F was designed to avoid.
CHUNK_WEIGHTS = (2.0, 1.0)
QA_WEIGHTS = (2.0, 1.0)


class FullTextLeg:
    """BM25 over parent chunks (title = heading path), English Porter stemming.

    Ranks with an in-memory image of the store's full-text index (``store.lexical_image``), with
    collection statistics taken over the caller's allowed set only (see
    :mod:`electa.stores.bm25_memory`), so one tenant's writes never move another tenant's
    scores. The index's own BM25 (FTS5's ``bm25()``) is never used for ranking: its
    statistics span every tenant. After a write the image is rebuilt in the background; a
    query that arrives before it is current waits for it (within the leg's time budget).
    """

    name = "fulltext"
    index = TextIndex.UNITS
    weights: tuple[float, float] = CHUNK_WEIGHTS

    def __init__(self, store: IndexStore) -> None:
        self.store = store
        self._image: BM25Image | None = None
        self._building = threading.Lock()
        self._thread: threading.Thread | None = None

    def available(self) -> bool:
        return True

    @property
    def why(self) -> str:
        return ""

    def warm(self, generation: int | None = None) -> BM25Image:
        """The image for ``generation`` (default: the store's current one), built if needed.
        Concurrent callers wait for one build instead of building twice."""
        image = self._image
        wanted = self.store.generation if generation is None else generation
        if image is not None and image.generation >= wanted:
            return image
        with self._building:
            image = self._image
            if image is None or image.generation < wanted:
                image = self.store.lexical_image(self.index, self.weights)
                self._image = image
            return image

    def refresh(self) -> None:
        """Rebuild the image in the background after a write, so the next query finds it ready."""
        if self._building.locked():
            return
        self._thread = threading.Thread(target=self._warm_and_close, name=f"{self.name}-image", daemon=True)
        self._thread.start()

    def _warm_and_close(self) -> None:
        try:
            self.warm()
        except Exception:
            log.warning("rebuilding the %s BM25 image failed; the next query retries", self.name, exc_info=True)
        finally:
            self.store.close()  # this thread's own connection

    def close(self, timeout: float = 60.0) -> None:
        """Wait for a background rebuild, so no thread outlives the engine."""
        thread = self._thread
        if thread is not None and thread.is_alive():
            thread.join(timeout)

    def search(self, query: str, caller: Caller, allowed: AllowedSet, depth: int) -> list[tuple[int, float]]:
        # The allowed set was read at ``allowed.generation``; an image at least that new holds
        # every row the caller may see (rows deleted since are simply not in ``allowed``).
        image = self.warm(allowed.generation)
        return image.search(query, allowed.ids, depth, key=(allowed.generation, caller.cache_key()))


class QaLeg(FullTextLeg):
    """BM25 over curated Q&A pairs: question weighted twice the answer (SPEC B4)."""

    name = "qa"
    index = TextIndex.QA
    weights = QA_WEIGHTS


SqliteFtsLeg, SqliteQaLeg = FullTextLeg, QaLeg  # the names before the legs left SQLite behind

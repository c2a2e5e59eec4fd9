"""Full-text legs over the store's full-text indexes (SPEC B1, B4)."""

from __future__ import annotations

import logging
import threading
import time

from electa.stores.bm25_memory import BM25Image, mentioned_in, search_segments
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
    """BM25 over parent chunks (title = heading path), each analysed in its document's language
    (:mod:`electa.text.analysis`), the question in each language of the caller's units.

    Ranks with an in-memory image of the store's full-text index (``store.lexical_image``), with
    collection statistics taken over the caller's allowed set only (see
    :mod:`electa.stores.bm25_memory`), so one tenant's writes never move another tenant's
    scores. The index's own BM25 (FTS5's ``bm25()``) is never used for ranking: its
    statistics span every tenant.

    The image is two segments: ``main`` over every row up to some id and ``recent`` over the
    rows written since. A write rebuilds only ``recent`` (a query that arrives first waits for
    it, within the leg's budget); once ``recent`` holds more than ``MERGE_SHARE`` of ``main``'s
    rows (and at least ``MERGE_MIN``), ``main`` is rebuilt in the background while queries go
    on with the old pair, then both are swapped at once. Deleted rows need no segment change:
    no allowed set names them.

    A merged ``main`` is saved by the store where it can (``store.save_image``: the embedded
    store's data directory) and used memory-mapped from then on; a new worker opens the saved
    one (``store.saved_image``) instead of rebuilding it, and reads only the rows above it.
    """

    name = "fulltext"
    index = TextIndex.UNITS
    weights: tuple[float, float] = CHUNK_WEIGHTS
    MERGE_SHARE = 0.05
    MERGE_MIN = 2000

    def __init__(self, store: IndexStore) -> None:
        self.store = store
        self._segments: tuple[BM25Image, BM25Image] | None = None  # (main, recent)
        self._building = threading.Lock()
        self._merging = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._threads_lock = threading.Lock()
        self.merges = 0
        self._languages: dict[tuple[int, str, str | None], tuple[str, ...]] = {}

    def available(self) -> bool:
        return True

    @property
    def why(self) -> str:
        return ""

    def _whole(self) -> tuple[BM25Image, BM25Image]:
        """Both segments from scratch: ``main`` over every row, ``recent`` above it."""
        main = None
        for attempt in range(3):
            # A saved image opens in milliseconds (memory-mapped); only the first try uses it,
            # so a saved image trimmed past meanwhile costs one retry, not three.
            saved = self.store.saved_image(self.index, self.weights) if attempt == 0 else None
            main = saved or self.store.lexical_image(self.index, self.weights)
            assert main is not None  # a whole image is always there
            if saved is None and main.unit_ids.size >= self.MERGE_MIN:
                # None saved (or one this code cannot read): save this one, so the next worker
                # opens it instead of building it again. Failing to save costs nothing here.
                self._start(threading.Thread(target=self._save_and_close, args=(main,), name=f"{self.name}-save",
                                             daemon=True))
            recent = self.store.lexical_image(self.index, self.weights, recent_above=main.max_row)
            if recent is not None:
                return main, recent
        assert main is not None
        # Trimmed past us three times running (another process merging fast): rows above
        # main are in no table we can read apart, so main alone is this instant's truth.
        return main, BM25Image.empty(main.generation)

    def warm(self, generation: int | None = None, merge: bool = False) -> tuple[BM25Image, BM25Image]:
        """Segments for ``generation`` (default: the store's current one), built if needed:
        both on first use or when another process trimmed the recent rows past ``main``,
        ``recent`` alone after a write. Concurrent callers wait for one build. ``merge`` (after
        this process's own writes) lets a large ``recent`` start a background merge; a reader
        never writes to the store."""
        segments = self._segments
        wanted = self.store.generation if generation is None else generation
        if segments is None or segments[1].generation < wanted:
            with self._building:
                segments = self._segments
                if segments is None:
                    segments = self._whole()
                elif segments[1].generation < wanted:
                    recent = self.store.lexical_image(self.index, self.weights, recent_above=segments[0].max_row)
                    segments = (segments[0], recent) if recent is not None else self._whole()
                self._segments = segments
        main, recent = segments
        if merge and recent.scanned > max(self.MERGE_MIN, self.MERGE_SHARE * main.unit_ids.size):
            self._merge_in_background()
        return segments

    def _merge_in_background(self) -> None:
        if not self._merging.locked():
            self._start(threading.Thread(target=self._merge, name=f"{self.name}-merge", daemon=True))

    def _merge(self) -> None:
        """Rebuild ``main`` over every row, swap it in with a ``recent`` above it, then trim."""
        if not self._merging.acquire(blocking=False):
            return
        try:
            main = self.store.lexical_image(self.index, self.weights)  # the long part: queries go on meanwhile
            assert main is not None
            main = self._saved_copy(main)
            with self._building:
                recent = self.store.lexical_image(self.index, self.weights, recent_above=main.max_row)
                self._segments = (main, recent) if recent is not None else self._whole()
                main = self._segments[0]
                self.merges += 1
            self.store.trim_recent(self.index, main.max_row)
        except Exception:
            log.warning("merging the %s BM25 segments failed; queries go on with the old ones", self.name, exc_info=True)
        finally:
            self._merging.release()
            self.store.close()  # this thread's own connection

    def _save_and_close(self, main: BM25Image) -> None:
        try:
            self._saved_copy(main)
        finally:
            self.store.close()  # this thread's own connection

    def _saved_copy(self, main: BM25Image) -> BM25Image:
        """``main`` saved by the store and read back memory-mapped (the page cache holds it once
        for every worker; this process's heap gives its copy back), or ``main`` itself when the
        store keeps none or saving fails (a full disk costs memory, never the merge)."""
        try:
            self.store.save_image(self.index, self.weights, main)  # (False: one as new is saved already)
            saved = self.store.saved_image(self.index, self.weights)
            if saved is not None and saved.max_row == main.max_row:
                return saved
        except Exception:
            log.warning("saving the %s BM25 image failed; this worker keeps it in memory", self.name, exc_info=True)
        return main

    def _start(self, thread: threading.Thread) -> None:
        # Started inside the lock: a thread listed before it started is not alive yet, and
        # another _start pruning dead threads meanwhile dropped it, so close() did not wait
        # for it (a merge outlived the engine; found by a flaky test).
        with self._threads_lock:
            self._threads = [t for t in self._threads if t.is_alive()]
            thread.start()
            self._threads.append(thread)

    def refresh(self) -> None:
        """After this process wrote: bring the segments up to date in the background (so the
        next query finds them ready), merging when ``recent`` has grown large."""
        if self._building.locked():
            return
        self._start(threading.Thread(target=self._warm_and_close, name=f"{self.name}-image", daemon=True))

    def _warm_and_close(self) -> None:
        try:
            self.warm(merge=True)
        except Exception:
            log.warning("rebuilding the %s BM25 image failed; the next query retries", self.name, exc_info=True)
        finally:
            self.store.close()  # this thread's own connection

    def close(self, timeout: float = 60.0) -> None:
        """Wait (at most ``timeout`` in all) for background builds and merges, so none outlives
        the engine; one still running then is logged (they are daemons: they never block exit)."""
        deadline = time.monotonic() + timeout
        while True:
            with self._threads_lock:
                alive = [t for t in self._threads if t.is_alive()]
            if not alive:
                return
            left = deadline - time.monotonic()
            if left <= 0:
                log.warning("%d background %s image builds still running at close", len(alive), self.name)
                return
            alive[0].join(left)

    def search(self, query: str, caller: Caller, allowed: AllowedSet, depth: int) -> list[tuple[int, float]]:
        # The allowed set was read at ``allowed.generation``; segments at least that new hold
        # every row the caller may see (rows deleted since are simply not in ``allowed``).
        if not allowed.ids.size:
            return []
        segments = self.warm(allowed.generation)
        return search_segments(segments, query, allowed.ids, depth, key=(allowed.generation, caller.cache_key()),
                               languages=self.languages(caller, allowed.generation))

    def languages(self, caller: Caller, generation: int) -> tuple[str, ...]:
        """The languages the caller's units are analysed in (a question is analysed in each),
        read once per generation."""
        key = (generation, caller.org, caller.agent)
        found = self._languages.get(key)
        if found is None:
            found = self.store.languages(caller)
            if len(self._languages) > 1024:
                self._languages.clear()
            self._languages[key] = found
        return found


    def mentions(self, text: str, caller: Caller, allowed: AllowedSet) -> bool | None:
        """Whether a unit the caller may see holds a content word of ``text`` in its title or
        body (a word only in the access tokens does not count), read from the segments when
        they are built for ``allowed.generation``; ``None`` when they are not (this never
        waits for a build: the caller asks the store). ``store.mentions`` asks the index
        instead; on PostgreSQL, where ``@@`` is not leakproof, that reads every row of the
        tenant behind the wall."""
        segments = self._segments
        if segments is None or segments[1].generation < allowed.generation:
            return None
        if not allowed.ids.size:
            return False
        return mentioned_in(segments, text, allowed.ids, key=(allowed.generation, caller.cache_key()),
                            languages=self.languages(caller, allowed.generation))


class QaLeg(FullTextLeg):
    """BM25 over curated Q&A pairs: question weighted twice the answer (SPEC B4)."""

    name = "qa"
    index = TextIndex.QA
    weights = QA_WEIGHTS


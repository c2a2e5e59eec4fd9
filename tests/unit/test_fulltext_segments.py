"""A write rebuilds only the segment of recent rows; the big one is merged in the background,
and segments never change a score (issue 12, item 5)."""

from __future__ import annotations

import pytest

from electa import Access, Caller, Engine
from electa.ingest.page import Loaded
from electa.stores.protocol import TextIndex
from electa.types import Document, Section


def page(n: int) -> Loaded:
    text = f"Article {n} explains refunds, invoices and exports; token t{n}x."
    return Loaded([Document(str(n), f"Article {n}", text, sections=(Section((), text),))])


def test_a_write_rebuilds_only_the_recent_segment_and_scores_stay_whole(engine: Engine) -> None:
    leg = engine.fulltext
    leg.MERGE_MIN, leg.MERGE_SHARE = 5, 0.0  # merge once five rows are recent
    for n in range(20):
        engine.ingest_loaded(f"s{n}", page(n), Access("acme"))
    leg.close()
    main, _ = leg.warm()
    engine.ingest_loaded("new", page(100), Access("acme"))
    after_main, recent = leg.warm()
    assert after_main is main and recent.max_row > main.max_row  # one row rebuilt, not twenty
    hits = engine.search("t100x", Caller("acme"), legs=["fulltext"]).hits
    assert [h.title for h in hits] == ["Article 100"]
    for n in range(101, 110):
        engine.ingest_loaded(f"s{n}", page(n), Access("acme"))
    leg.close()
    assert leg.merges >= 1
    caller = Caller("acme")
    allowed = engine.store.allowed(caller)
    split = leg.search("refunds invoices t105x", caller, allowed, 50)
    image = engine.store.lexical_image(TextIndex.UNITS, leg.weights)
    assert image is not None
    whole = image.search("refunds invoices t105x", allowed.ids, 50)
    assert [u for u, _ in split] == [u for u, _ in whole]
    assert [round(s, 9) for _, s in split] == [round(s, 9) for _, s in whole]
    engine.delete_source("acme", "default", "s105")
    assert "Article 105" not in [h.title for h in engine.search("t105x", caller, legs=["fulltext"]).hits]


@pytest.mark.embedded
def test_another_process_trimming_the_recent_rows_never_hides_a_row(engine: Engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Found by review: a second process (a CLI search beside the server) trimmed the shared
    table of recent rows past the first process's large segment, which then lost them."""
    from electa import Settings
    from electa.embedders.hashing import HashEmbedder

    for n in range(20):
        engine.ingest_loaded(f"s{n}", page(n), Access("acme"))
    engine.fulltext.close()
    engine.fulltext.warm()
    reader = Engine.open(engine.store.directory, Settings(), HashEmbedder(dim=64))
    try:
        assert reader.search("t3x", Caller("acme"), legs=["fulltext"]).hits  # a reader never writes
        assert reader.store.meta("trimmed:chunk_fts_recent") is None
        for n in range(100, 103):
            engine.ingest_loaded(f"s{n}", page(n), Access("acme"))
        other = reader.fulltext
        other.MERGE_MIN, other.MERGE_SHARE = 1, 0.0
        reader.ingest_loaded("s200", page(200), Access("acme"))  # the other process writes, merges, trims
        other.close()
        assert other.merges >= 1 and reader.store.meta("trimmed:chunk_fts_recent") is not None
        engine.ingest_loaded("s300", page(300), Access("acme"))
        for n in (100, 101, 102, 200, 300):
            assert [h.title for h in engine.search(f"t{n}x", Caller("acme"), legs=["fulltext"]).hits] == [f"Article {n}"]
    finally:
        reader.close()


def test_close_waits_for_a_thread_started_while_another_starts(engine: Engine) -> None:
    """Found by a flaky test: a thread was listed before it started; another start pruning
    threads that were not alive dropped it meanwhile, and close() returned while it ran."""
    import threading
    import time

    leg = engine.fulltext
    finished = threading.Event()

    class SlowToStart(threading.Thread):
        def start(self) -> None:
            time.sleep(0.3)  # the window between being listed and being alive, made wide
            super().start()

    slow = SlowToStart(target=lambda: (time.sleep(0.5), finished.set()), daemon=True)
    starter = threading.Thread(target=leg._start, args=(slow,))
    starter.start()
    time.sleep(0.1)
    leg._start(threading.Thread(target=lambda: None, daemon=True))  # prunes the list meanwhile
    starter.join()
    leg.close()
    assert finished.is_set()


def test_the_engine_answers_mentions_as_the_store_does(engine: Engine) -> None:
    """The answer pipeline asks whether the knowledge mentions a business name on every ask;
    it now reads the leg's segments (PostgreSQL's ``@@`` under the tenant wall read every row
    of the tenant). Same answers as the store's index, callers and teams included, from a
    freshly built main segment, a merged (saved, memory-mapped) one and a recent one."""
    leg = engine.fulltext
    leg.MERGE_MIN, leg.MERGE_SHARE = 3, 0.0
    callers = [Caller("acme"), Caller("acme", principals=frozenset({"team:x"})), Caller("other")]
    words = ["refunds", "Article", "Zephyrine", "Quillon", "t1x", "t7x", "nothing here", "the", "acme", ""]

    def same() -> None:
        for text in words:
            for caller in callers:
                found = leg.mentions(text, caller, engine.store.allowed(caller))
                assert found is not None and found == engine.store.mentions(text, caller), (text, caller)
                assert engine.mentions(text, caller) == found

    engine.ingest_loaded("a", page(1), Access("acme"))
    engine.ingest_loaded("t", Loaded([Document("t", "Quillon notes", "internal Zephyrine plans",
                                               sections=(Section((), "internal Zephyrine plans"),))]),
                         Access("acme", principals=("team:x",)))
    leg.close()
    leg.warm()
    same()
    for n in range(2, 8):
        engine.ingest_loaded(f"s{n}", page(n), Access("acme"))
    leg.close()
    leg._merge_in_background()
    leg.close()
    engine.ingest_loaded("s9", page(9), Access("acme"))
    leg.close()
    _, recent = leg.warm()
    assert recent.unit_ids.size and leg.merges >= 1  # (saved and memory-mapped where the store keeps images)
    words.append("t9x")
    same()
    assert engine.mentions("Zephyrine", callers[1]) and not engine.mentions("Zephyrine", callers[0])

"""A merged full-text segment is saved in the data directory and opened memory-mapped by every
worker instead of being rebuilt (issue 12: bounded embedded memory, cold start); a saved image
that does not belong to the database beside it is never used."""

from __future__ import annotations

import os
import shutil
import time

import numpy as np
import pytest

from electa import Access, Caller, Engine, Settings
from electa.embedders.hashing import HashEmbedder
from electa.ingest.page import Loaded
from electa.stores.protocol import TextIndex
from electa.stores.sqlite import SqliteStore
from electa.stores.sqlite_images import PARTIAL_KEPT_S
from electa.types import Document, Section

pytestmark = pytest.mark.embedded
WEIGHTS = (2.0, 1.0)


def page(n: int) -> Loaded:
    text = f"Article {n} explains refunds, invoices and exports; token t{n}x."
    return Loaded([Document(str(n), f"Article {n}", text, sections=(Section((), text),))])


def merged(engine: Engine, pages: range) -> None:
    leg = engine.fulltext
    leg.MERGE_MIN, leg.MERGE_SHARE = 3, 0.0
    for n in pages:
        engine.ingest_loaded(f"s{n}", page(n), Access("acme"))
    leg.close()
    leg._merge_in_background()  # (whatever the background did meanwhile: one merge now, waited for)
    leg.close()


def test_a_merge_saves_main_and_a_new_worker_opens_it_without_rebuilding(engine: Engine, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    merged(engine, range(12))
    main, _ = engine.fulltext.warm()
    assert engine.fulltext.merges >= 1
    assert isinstance(main.rows, np.memmap)  # the heap copy was swapped for the saved one
    expected = engine.search("refunds t7x", Caller("acme"), legs=["fulltext"]).hits
    builds: list[object] = []
    real = SqliteStore.lexical_image

    def counted(self, index, weights, recent_above=None):  # type: ignore[no-untyped-def]
        builds.append(recent_above)
        return real(self, index, weights, recent_above)

    monkeypatch.setattr(SqliteStore, "lexical_image", counted)
    worker = Engine.open(engine.store.directory, Settings(), HashEmbedder(dim=64))
    try:
        got = worker.search("refunds t7x", Caller("acme"), legs=["fulltext"]).hits
        assert [(h.unit_id, h.score) for h in got] == [(h.unit_id, h.score) for h in expected]
        assert None not in builds  # only the rows above the saved image were read
        engine.ingest_loaded("later", page(500), Access("acme"))
        assert [h.title for h in worker.search("t500x", Caller("acme"), legs=["fulltext"]).hits] == ["Article 500"]
    finally:
        worker.close()


def test_a_database_restored_from_a_copy_never_reads_an_image_saved_after_it(engine: Engine) -> None:
    """The copy's rows above its last id were never in it: a new row there gets an id the saved
    image holds other text for. The image is named inside the database, so the copy names only
    an image saved before it (here one a later save has removed): it is not read, the leg rebuilds."""
    directory = engine.store.directory
    merged(engine, range(6))
    named_by_copy = engine.store.meta("saved:chunk_fts")
    copy = directory.parent / "copy.db"
    engine.store.con.execute("VACUUM INTO ?", (str(copy),))
    merged(engine, range(6, 12))
    assert named_by_copy is not None and engine.store.meta("saved:chunk_fts") not in (None, named_by_copy)
    engine.close()
    for suffix in ("", "-wal", "-shm"):
        (directory / f"electa.db{suffix}").unlink(missing_ok=True)
    shutil.copy(copy, directory / "electa.db")
    restored = Engine.open(directory, Settings(), HashEmbedder(dim=64))
    try:
        assert restored.store.saved_image(TextIndex.UNITS, WEIGHTS) is None
        restored.ingest_loaded("again", page(900), Access("acme"))
        hits = restored.search("t900x", Caller("acme"), legs=["fulltext"]).hits
        assert [h.title for h in hits] == ["Article 900"]
        assert not restored.search("t8x", Caller("acme"), legs=["fulltext"]).hits  # not in the copy
    finally:
        restored.close()


def test_a_damaged_saved_image_is_rebuilt_not_read(engine: Engine) -> None:
    merged(engine, range(12))
    saved = engine.store.directory / "lexical" / str(engine.store.meta("saved:chunk_fts")).rsplit(":", 1)[0]
    with open(saved / "rows.npy", "r+b") as f:
        f.truncate(os.path.getsize(saved / "rows.npy") - 8)
    assert engine.store.saved_image(TextIndex.UNITS, WEIGHTS) is None
    worker = Engine.open(engine.store.directory, Settings(), HashEmbedder(dim=64))
    try:
        assert [h.title for h in worker.search("t4x", Caller("acme"), legs=["fulltext"]).hits] == ["Article 4"]
    finally:
        worker.close()


def test_a_save_removes_older_images_and_crashed_partials_but_not_one_being_written(engine: Engine) -> None:
    images = engine.store.directory / "lexical"
    merged(engine, range(6))
    images.mkdir(exist_ok=True)
    crashed, writing = images / "chunk_fts-1-dead.partial", images / "chunk_fts-2-live.partial"
    crashed.mkdir()
    writing.mkdir()
    old = time.time() - PARTIAL_KEPT_S - 10
    os.utime(crashed, (old, old))
    merged(engine, range(6, 14))
    named = str(engine.store.meta("saved:chunk_fts")).rsplit(":", 1)[0]
    assert sorted(p.name for p in images.glob("chunk_fts-*")) == sorted([named, writing.name])


def test_an_unreadable_saved_image_is_replaced_and_a_worker_saves_what_it_built(engine: Engine) -> None:
    """Found by review: an image of an older format (or damaged) stayed named until the rows
    grew past it, so every worker rebuilt; and a worker that built a whole image never saved it."""
    leg = engine.fulltext
    leg.MERGE_MIN = 3
    merged(engine, range(8))
    named = str(engine.store.meta("saved:chunk_fts"))
    directory = engine.store.directory / "lexical" / named.rsplit(":", 1)[0]
    meta = directory / "segment.json"
    meta.write_text(meta.read_text().replace('"format": 2', '"format": 1'))
    assert engine.store.saved_image(TextIndex.UNITS, WEIGHTS) is None
    worker = Engine.open(engine.store.directory, Settings(), HashEmbedder(dim=64))
    try:
        worker.fulltext.MERGE_MIN = 3
        assert [h.title for h in worker.search("t5x", Caller("acme"), legs=["fulltext"]).hits] == ["Article 5"]
        worker.fulltext.close()  # its background save of the image it built
        assert engine.store.meta("saved:chunk_fts") != named
        again = engine.store.saved_image(TextIndex.UNITS, WEIGHTS)
        assert again is not None and again.max_row == int(named.rsplit(":", 1)[1])
    finally:
        worker.close()

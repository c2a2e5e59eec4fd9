"""A write rebuilds only the segment of recent rows; the big one is merged in the background,
and segments never change a score (issue 12, item 5)."""

from __future__ import annotations

import time

from electa import Access, Caller, Engine
from electa.ingest.loaders import Loaded
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
    deadline = time.time() + 10
    while leg.merges == 0 and time.time() < deadline:
        leg.warm()
        time.sleep(0.02)
    leg.close()
    assert leg.merges >= 1
    caller = Caller("acme")
    allowed = engine.store.allowed(caller)
    split = leg.search("refunds invoices t105x", caller, allowed, 50)
    whole = engine.store.lexical_image(TextIndex.UNITS, leg.weights).search("refunds invoices t105x", allowed.ids, 50)
    assert [u for u, _ in split] == [u for u, _ in whole]
    assert [round(s, 9) for _, s in split] == [round(s, 9) for _, s in whole]
    engine.delete_source("acme", "default", "s105")
    assert "Article 105" not in [h.title for h in engine.search("t105x", caller, legs=["fulltext"]).hits]

"""Searches and asks on many threads while sources are added, updated and deleted, with a
tenant above the exact-search cut-off so the HNSW graph itself is mutated (issue 8)."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

from electa import Access, Caller, Engine, LegStatus, Settings
from electa.embedders.hashing import HashEmbedder
from electa.ingest.page import Loaded
from electa.types import Document, Section

WORDS = [f"w{i:03d}" for i in range(60)]


def page(org: str, n: int, word: str) -> Document:
    text = f"{org} page {n} about {word} and the {word} setting, explained for {org} customers."
    return Document(f"{org}-{n}", f"{org} {word} {n}", text, sections=(Section((), text),))


def test_reads_during_writes_stay_whole_and_isolated(tmp_path: Path) -> None:
    # "big" holds hundreds of units: its searches walk HNSW. Budgets are wide: this test is about
    # errors and isolation under concurrent writes, not speed on a loaded 2-core machine.
    settings = Settings(exact_below=40, budgets_ms={"fulltext": 30_000.0, "dense": 30_000.0, "qa": 30_000.0})
    engine = Engine.open(tmp_path / "data", settings, HashEmbedder(dim=32))
    rng = random.Random(7)
    titles_of: dict[str, set[str]] = {}

    def put_big(uri: str, pages: list[Document]) -> None:
        engine.ingest_loaded(uri, Loaded(pages), Access("big"))
        titles_of[uri] = {p.title for p in pages}

    for s in range(6):
        put_big(f"big-{s}", [page("big", s * 40 + i, rng.choice(WORDS)) for i in range(40)])
    engine.ingest_loaded("small-0", Loaded([page("small", i, rng.choice(WORDS)) for i in range(10)]), Access("small"))
    errors: list[str] = []
    stop = threading.Event()
    reads = [0]

    def reader(seed: int) -> None:
        r = random.Random(seed)
        while not stop.is_set():
            org = r.choice(["big", "small"])
            try:
                result = engine.search(f"{r.choice(WORDS)} setting", Caller(org), top=20)
                for leg in result.legs:
                    if leg.status is not LegStatus.OK:
                        errors.append(f"{leg.leg} {leg.status.value}: {leg.detail}")
                for hit in result.hits:
                    if not hit.title.startswith(org + " "):
                        errors.append(f"{org} saw {hit.title!r}")
                if seed == 0:
                    events = list(engine.ask(f"what is the {r.choice(WORDS)} setting?", Caller(org)))
                    if events[-1].kind != "done":
                        errors.append(f"ask ended with {events[-1].kind}")
                reads[0] += 1
            except Exception as exc:  # any exception is a failure of the engine
                errors.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    live = {f"big-{s}" for s in range(6)}
    try:
        for step in range(30):
            uri = f"big-new-{step}"
            put_big(uri, [page("big", 1000 + step * 10 + i, rng.choice(WORDS)) for i in range(10)])
            live.add(uri)
            victim = rng.choice(sorted(live))
            engine.delete_source("big", "default", victim)
            live.discard(victim)
            engine.ingest_loaded("small-0", Loaded([page("small", step * 10 + i, rng.choice(WORDS)) for i in range(10)]),
                                 Access("small"))
    finally:
        time.sleep(0.2)
        stop.set()
        for t in threads:
            t.join(60)
    assert not errors, errors[:5]
    assert reads[0] > 5
    # Afterwards every leg agrees with the last committed state: each live page is found by its
    # own title in the full-text and the dense leg, and no deleted page by anyone.
    live_titles = {u.title for u in engine.store.units(engine.store.allowed(Caller("big")).ids.tolist()).values()}
    assert live_titles == set().union(*(titles_of[uri] for uri in live))
    deleted = set().union(*(t for uri, t in titles_of.items() if uri not in live))
    assert deleted and not deleted & live_titles
    for title in sorted(live_titles)[::7]:
        for leg in ("fulltext", "dense"):
            hits = engine.search(title, Caller("big"), legs=[leg], top=50).hits
            assert title in {h.title for h in hits}, f"{leg} lost {title!r}"
    for r in engine.retrieve("setting explained customers", Caller("big"), depths={"fulltext": 2000, "dense": 2000})[0]:
        found = {u.title for u in engine.store.units([h.unit_id for h in r.hits]).values()}
        assert found <= live_titles, f"{r.leg} returned deleted pages {sorted(found - live_titles)[:3]}"
    engine.close()

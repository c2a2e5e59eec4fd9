"""A hung leg never takes the others down (issue 8, defect 8)."""

from __future__ import annotations

import threading
import time

import pytest

from electa import Access, Caller, Engine, LegStatus
from electa.ingest.page import Loaded
from electa.stores.protocol import AllowedSet
from electa.types import Document, Section


class HangingLeg:
    """A leg that blocks until released, as a stuck network call or lock would."""

    name = "hanging"
    why = ""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls = 0

    def available(self) -> bool:
        return True

    def search(self, query: str, caller: Caller, allowed: AllowedSet, depth: int) -> list[tuple[int, float]]:
        self.calls += 1
        self.release.wait(30)
        return []


def test_hung_leg_calls_never_starve_the_other_legs(engine: Engine) -> None:
    text = "Annual plans are refunded within 30 days."
    engine.ingest_loaded("a", Loaded([Document("1", "Refunds", text, sections=(Section((), text),))]), Access("acme"))
    hanging = HangingLeg()
    engine.legs[hanging.name] = hanging
    engine.settings.budgets_ms[hanging.name] = 30.0
    try:
        for _ in range(25):  # more than any fixed pool of workers
            start = time.perf_counter()
            result = engine.search("refunded", Caller("acme"), legs=["fulltext", "hanging"])
            status = {r.leg: r.status for r in result.legs}
            assert status == {"fulltext": LegStatus.OK, "hanging": LegStatus.TIMEOUT}
            assert result.hits and (time.perf_counter() - start) < 1.0
        # Once it has enough calls hung, it is not even started: those workers stay free.
        assert hanging.calls < 25
        assert "still running" in next(r.detail for r in result.legs if r.leg == "hanging")
    finally:
        hanging.release.set()
    deadline = time.time() + 5
    while engine._runner.overdue("hanging") and time.time() < deadline:
        time.sleep(0.01)
    assert engine._runner.overdue("hanging") == 0


def test_a_burst_of_concurrent_queries_on_a_hung_leg_never_starves_a_healthy_one() -> None:
    """Found by review: with one shared pool, a burst filled every worker with the hung leg's
    calls and the healthy leg then timed out waiting in the queue."""
    import numpy as np

    from electa.legs.runner import LegRunner

    class Healthy:
        name, why = "fulltext", ""

        def available(self) -> bool:
            return True

        def search(self, *args: object) -> list[tuple[int, float]]:
            return [(1, 1.0)]

    hanging = HangingLeg()
    runner = LegRunner()
    allowed = AllowedSet(np.array([1], dtype=np.int64), 0)
    budgets = {"hanging": 200.0, "fulltext": 2000.0}
    statuses: list[LegStatus] = []
    try:
        def query() -> None:
            results = runner.run([hanging, Healthy()], "q", Caller("o"), allowed, {}, budgets)
            statuses.append(next(r.status for r in results if r.leg == "fulltext"))

        threads = [threading.Thread(target=query) for _ in range(40)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert statuses == [LegStatus.OK] * 40
        assert runner.overdue("hanging") <= runner.workers_per_leg
        later = runner.run([hanging, Healthy()], "q", Caller("o"), allowed, {}, budgets)
        assert [r.status for r in later] == [LegStatus.TIMEOUT, LegStatus.OK]
        assert "not started" in later[0].detail
    finally:
        hanging.release.set()
        runner.close()


class WatchedGraph:
    """Wraps the faiss graph: a search lasts a while, and an add during one is recorded."""

    def __init__(self, inner: object) -> None:
        self.inner = inner
        self.searching = 0
        self.overlaps = 0
        self.lock = threading.Lock()

    def search(self, *args: object, **kwargs: object) -> object:
        with self.lock:
            self.searching += 1
        try:
            time.sleep(0.02)
            return self.inner.search(*args, **kwargs)  # type: ignore[attr-defined]
        finally:
            with self.lock:
                self.searching -= 1

    def add_with_ids(self, *args: object) -> object:
        with self.lock:
            self.overlaps += self.searching > 0
        return self.inner.add_with_ids(*args)  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


@pytest.mark.embedded
def test_the_hnsw_graph_is_never_mutated_during_a_search(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from electa import Settings
    from electa.embedders.hashing import HashEmbedder

    engine = Engine.open(tmp_path / "data", Settings(exact_below=1), HashEmbedder(dim=16))
    try:
        def add(n: int) -> None:
            docs = [Document(f"{n}-{i}", f"Page {n} {i}", f"word{i} text {n}", sections=(Section((), f"word{i} text {n}"),))
                    for i in range(5)]
            engine.ingest_loaded(f"s{n}", Loaded(docs), Access("acme"))

        add(0)
        assert engine.index is not None
        watched = WatchedGraph(engine.index._index)
        engine.index._index = watched  # type: ignore[assignment]
        stop = threading.Event()

        def searcher() -> None:
            while not stop.is_set():
                engine.search("word1 text", Caller("acme"), legs=["dense"])

        threads = [threading.Thread(target=searcher) for _ in range(3)]
        for t in threads:
            t.start()
        try:
            for n in range(1, 15):
                engine.store.put_source(  # a write by another process: the graph syncs on the next search
                    *_prepared_source(engine, n))
                time.sleep(0.01)
        finally:
            stop.set()
            for t in threads:
                t.join(10)
        assert engine.index._index is watched and watched.overlaps == 0
    finally:
        engine.close()


def _prepared_source(engine: Engine, n: int):  # type: ignore[no-untyped-def]
    import hashlib

    import numpy as np

    from electa.stores.protocol import PreparedDocument, SourceRecord
    from electa.types import Chunk, ChunkKind

    assert engine.embedder is not None
    text = f"word{n} text {n}"
    vec = engine.embedder.embed([text])[0].astype(np.float32)
    doc = PreparedDocument(str(n), f"Page {n}", "", hashlib.sha256(text.encode()).hexdigest(),
                           (Chunk(ChunkKind.PARENT, 0, f"Page {n}", text),), (vec,))
    record = SourceRecord("acme", "default", f"p{n}", "md", "", f"h{n}", Access("acme"))
    return record, [doc], engine.embedder.model_id


def test_a_process_with_a_hung_leg_still_exits() -> None:
    """Found by review: pool workers were joined at interpreter exit, so `electa search` or a
    stopping server hung for as long as a leg did."""
    import subprocess
    import sys

    script = """
import time, numpy as np
from electa.legs.runner import LegRunner
from electa.stores.protocol import AllowedSet
from electa.types import Caller
class Hang:
    name, why = "dense", ""
    def available(self): return True
    def search(self, *a): time.sleep(3600)
r = LegRunner()
print([x.status.value for x in r.run([Hang()], "q", Caller("o"), AllowedSet(np.array([1]), 0), {}, {"dense": 50.0})])
r.close()
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "timeout" in done.stdout

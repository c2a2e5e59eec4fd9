"""What the compact full-text image layout costs per search, side by side with the old one.

    python bench/image_layout.py /tmp/electa-scale-…/embedded     # a store bench/scale.py grew

Builds the store's full-text image three ways and runs the same 300 synthetic queries (as
``bench/scale.py`` draws them) over every unit, top 100, three passes, alternating which goes
first: the layout of commit 037fce4 (its module read from git, verbatim: a dict of int64 and
float64 arrays per term), the compressed-sparse-row image in the heap, and the same image
saved and memory-mapped. Prints p50 and p95 per layout and how many searches gave identical
results (they must all). The store gains a saved image (``lexical/``) as a side effect.
"""

from __future__ import annotations

import subprocess
import sys
import time
import types
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import scale

from electa import Caller
from electa.config import Settings
from electa.stores.bm25_memory import BM25Image
from electa.stores.protocol import TextIndex
from electa.stores.registry import open_store
from electa.stores.sqlite import SqliteStore


def legacy_image_module(commit: str = "037fce4") -> types.ModuleType:
    """``electa.stores.bm25_memory`` as it was at ``commit`` (needs the git history)."""
    source = subprocess.run(["git", "show", f"{commit}:src/electa/stores/bm25_memory.py"], check=True,
                            capture_output=True, text=True, cwd=Path(__file__).parent).stdout
    module = types.ModuleType("legacy_bm25_image")
    sys.modules[module.__name__] = module  # (its dataclasses look their module up)
    exec(compile(source, f"{commit}:bm25_memory.py", "exec"), module.__dict__)
    return module


def main() -> None:
    legacy_bm25_image = legacy_image_module()
    store = open_store(Settings(), Path(sys.argv[1]))
    assert isinstance(store, SqliteStore)
    generation = store.generation
    old = legacy_bm25_image.BM25Image.build(store.con, "chunk_fts", (2.0, 1.0, 0.0), generation)
    heap = BM25Image.build(store.con, "chunk_fts", (2.0, 1.0, 0.0), generation)
    store.save_image(TextIndex.UNITS, (2.0, 1.0), heap)
    mapped = store.saved_image(TextIndex.UNITS, (2.0, 1.0))
    assert mapped is not None
    ids = store.allowed(Caller(scale.ORG)).ids
    rng = np.random.default_rng(11)
    queries = [" ".join(scale.words(rng, int(rng.integers(2, 5)))) for _ in range(300)]
    images = {"037fce4 (dict of int64/float64 arrays)": old, "now, heap": heap, "now, memory-mapped": mapped}
    times: dict[str, list[float]] = {name: [] for name in images}
    for image in images.values():  # warm-up, discarded
        for q in queries[:30]:
            image.search(q, ids, 100, key=1)
    same = 0
    for n in range(3):
        for i, q in enumerate(queries):
            results = {}
            for name in (list(images) if (i + n) % 2 == 0 else list(reversed(images))):
                start = time.perf_counter()
                results[name] = images[name].search(q, ids, 100, key=1)
                times[name].append((time.perf_counter() - start) * 1000)
            same += len({tuple(r) for r in results.values()}) == 1
    print(f"{ids.size:,} units, {heap.rows.size:,} postings, {len(queries)} queries x 3 passes, top 100")
    for name, ms in times.items():
        print(f"{name}: p50 {np.median(ms):.3f} ms, p95 {np.percentile(ms, 95):.3f} ms")
    print(f"identical results in {same} of {3 * len(queries)} searches")


if __name__ == "__main__":
    main()

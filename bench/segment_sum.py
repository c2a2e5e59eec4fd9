"""How the full-text leg adds up a query's terms per row, before and after, side by side.

    python bench/segment_sum.py /tmp/electa-scale-…/embedded     # a store bench/scale.py grew

Opens the store's full-text segments as a worker does (the saved image, memory-mapped, and the
rows above it) and runs the same 300 synthetic queries (as ``bench/scale.py`` draws them) over
every unit, top 100, three passes, alternating which goes first:

- **f838827**: ``search_segments`` of that commit (read from git, verbatim), which sums a
  multi-term query's contributions by sorting the matched rows (``np.unique``);
- **now**: the same scores summed in a dense array the size of the segment (``np.bincount``).

Prints p50 and p95 of each and how many searches gave identical results (they must all). On
bench/scale.py's synthetic vocabulary (Zipf 1.1) a query's terms match about a million postings
at 1M units, the worst case of a real one (stop words are dropped from real questions).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import scale
from image_layout import legacy_image_module

from electa import Caller
from electa.config import Settings
from electa.legs.fulltext import FullTextLeg
from electa.stores.bm25_memory import search_segments
from electa.stores.registry import open_store


def main() -> None:
    before = legacy_image_module("f838827").search_segments
    store = open_store(Settings(), Path(sys.argv[1]))
    leg = FullTextLeg(store)  # type: ignore[arg-type]
    leg.warm()
    segments = leg._segments
    assert segments is not None
    ids = store.allowed(Caller(scale.ORG)).ids
    rng = np.random.default_rng(11)
    queries = [" ".join(scale.words(rng, int(rng.integers(2, 5)))) for _ in range(300)]
    variants = {"f838827 (np.unique)": before, "now (np.bincount)": search_segments}
    for run in variants.values():  # warm-up, discarded: pages of the mapped image come in here
        for q in queries[:30]:
            run(segments, q, ids, 100, "bench")
    times: dict[str, list[float]] = {name: [] for name in variants}
    same = total = 0
    for n in range(3):
        for i, q in enumerate(queries):
            order = list(variants.items()) if (n + i) % 2 == 0 else list(reversed(variants.items()))
            out = []
            for name, run in order:
                t = time.perf_counter()
                out.append(run(segments, q, ids, 100, "bench"))
                times[name].append((time.perf_counter() - t) * 1000)
            same += out[0] == out[1]
            total += 1
    print(f"{ids.size:,} units, {len(queries)} queries x 3 passes, top 100")
    print("| code | p50 ms | p95 ms |\n|---|---|---|")
    for name, t in times.items():
        print(f"| {name} | {np.percentile(t, 50):.2f} | {np.percentile(t, 95):.2f} |")
    print(f"identical results in {same} of {total} searches")
    leg.close()
    store.close()


if __name__ == "__main__":
    main()

"""What fusion and scoring cost per search, before and after issue 12 item 8, side by side in one run.

    python bench/fusion_cost.py ../shared/data/scifact --split train --queries 300

Stores the set's corpus with the seeded hash embedder (the dense leg then returns candidates at
no model cost: this measures fusion, not embedding) and runs each query at depth 100 per leg
(full text, dense, Q&A), top 10, through ``Engine.search`` twice:

- **now**: the engine as it is (one pass over the fused rows, hits built only for the top);
- **before**: the same engine and leg results, fused, scored and rescued by the code of commit
  aeddaf2 (``bench/legacy_fusion.py``, verbatim): every candidate built as a ``Hit``, coverage
  by a generator per candidate, a title lookup in the store per distinctive word.

Reported: the ``fusion`` stage of ``SearchResult.timings_ms`` (everything after the legs:
fusion, scoring, calibration, title rescue) and the whole search, p50 and p95 in milliseconds,
and how many queries got identical hits from both (they must all). One warm-up pass is
discarded; the variants then alternate query by query, and which goes first alternates too, so
both see the same machine load and the same cache state after their legs.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

from electa import Caller, Engine, Settings
from electa.embedders.hashing import HashEmbedder
from electa.eval.beir import load_beir
from electa.ingest.page import Loaded
from electa.types import Access, Hit

sys.path.insert(0, str(Path(__file__).parent))
import legacy_fusion


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--split", default="test")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--passes", type=int, default=3)
    args = parser.parse_args()
    beir = load_beir(args.dataset, args.split)
    with tempfile.TemporaryDirectory(prefix="electa-bench-") as tmp:
        engine = Engine.open(Path(tmp), Settings(), HashEmbedder(dim=64))
        engine.ingest_loaded("corpus", Loaded(documents=beir.corpus), Access("bench"), kind="beir",
                             content_hash=beir.corpus_hash)
        caller, depths = Caller("bench"), {"fulltext": 100, "dense": 100, "qa": 100}
        queries = list(beir.queries.values())[: args.queries]

        def now(q: str, floor: float | None = None) -> tuple[list[Hit], float, float]:
            r = engine.search(q, caller, depths=depths, top=10, floor=floor)
            return list(r.hits), r.timings_ms["fusion"], r.timings_ms["total"]

        def before(q: str, floor: float | None = None) -> tuple[list[Hit], float, float]:
            if floor is not None:
                engine.settings.floor, kept = floor, engine.settings.floor
                try:
                    return legacy_fusion.search(engine, q, caller, depths, 10)
                finally:
                    engine.settings.floor = kept
            return legacy_fusion.search(engine, q, caller, depths, 10)

        variants = {"before (aeddaf2)": before, "now": now}
        figures: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in variants}
        for q in queries:  # warm-up, discarded: stems, units and SQLite pages fill here
            for run in variants.values():
                run(q)
        same = 0
        for n in range(args.passes):
            for i, q in enumerate(queries):
                order = list(variants.items()) if (n + i) % 2 == 0 else list(reversed(variants.items()))
                out = {}
                for name, run in order:
                    hits, fusion_ms, total_ms = run(q)
                    figures[name][0].append(fusion_ms)
                    figures[name][1].append(total_ms)
                    out[name] = hits
                same += out["now"] == out["before (aeddaf2)"]
        # Questions never seen before (the title counts the rescue keeps per word not yet
        # filled for them), each variant once, alternating.
        unseen = list(beir.queries.values())[args.queries: 2 * args.queries]
        first: dict[str, list[float]] = {name: [] for name in variants}
        for i, q in enumerate(unseen):
            order = list(variants.items()) if i % 2 == 0 else list(reversed(variants.items()))
            for name, run in order:
                first[name].append(run(q)[1])
        # The worst case: a worker that has kept nothing yet (no unit's stems, no title counts),
        # for every question. Only the engine as it is: the old code kept no stems.
        cold = []
        for q in unseen:
            engine.ordering._stems.clear()
            engine.rescue._title_counts.clear()
            cold.append(now(q)[1])
        # The title rescue acts on hits the floor rejects: compare there too, untimed.
        rescued_same = sum(now(q, 0.9)[0] == before(q, 0.9)[0] for q in queries)
        print(f"{beir.name} ({args.split}): {len(beir.corpus):,} documents, {len(queries)} queries x {args.passes}"
              " passes, depth 100 per leg, top 10")
        print("| code | fusion p50 ms | fusion p95 ms | search p50 ms | search p95 ms |")
        print("|---|---|---|---|---|")
        p50 = {}
        for name, (fusion, total) in figures.items():
            f50, f95 = np.percentile(fusion, [50, 95])
            t50, t95 = np.percentile(total, [50, 95])
            p50[name] = (f50, t50)
            print(f"| {name} | {f50:.2f} | {f95:.2f} | {t50:.2f} | {t95:.2f} |")
        b, a = p50["before (aeddaf2)"], p50["now"]
        if unseen:
            print(f"{len(unseen)} questions not asked before, once each: fusion p50 "
                  + ", ".join(f"{name} {np.percentile(v, 50):.2f} ms" for name, v in first.items())
                  + f"; now with nothing kept (stems and title counts cleared before each) {np.percentile(cold, 50):.2f}"
                  f" ms p50, {np.percentile(cold, 95):.2f} ms p95")
        print(f"fusion stage {b[0] / a[0]:.1f}x faster at p50, whole search {b[1] / a[1]:.2f}x;"
              f" identical hits for {same} of {len(queries) * args.passes} searches, and for {rescued_same} of"
              f" {len(queries)} at floor 0.9 (most hits fail it: the title rescue at work)")
        engine.close()


if __name__ == "__main__":
    main()

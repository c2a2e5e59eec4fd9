"""What the fusion and scoring stage costs, with and without the store's unit cache, in one run.

    python bench/fusion_cost.py ../shared/data/scifact --split train --queries 300

Stores the set's corpus with the seeded hash embedder (the dense leg then returns candidates
at no model cost: this measures fusion, not embedding), runs each query at depth 100 per leg,
and reports the "fusion" stage of ``SearchResult.timings_ms`` (fusion, scoring, calibration,
title rescue: everything after the legs) and the whole search, p50 and p95 in milliseconds:

- units cached (served): units read at the store's current generation are kept between searches;
- units read every time (before): the cache bypassed, every candidate read from SQLite.

One warm-up pass is discarded; then passes alternate, and so does which variant goes first, so
both see the same machine load and neither pays for the process's cold start.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

from electa import Caller, Engine, Settings
from electa.embedders.hashing import HashEmbedder
from electa.eval.beir import load_beir
from electa.ingest.loaders import Loaded
from electa.types import Access


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
        engine.fulltext.close()
        queries = list(beir.queries.values())[: args.queries]
        caller, depths = Caller("bench"), {"fulltext": 100, "dense": 100, "qa": 100}
        store = engine.store
        figures: dict[str, tuple[list[float], list[float]]] = {"units cached (served)": ([], []),
                                                               "units read every time (before)": ([], [])}
        for q in queries:  # warm-up, discarded: the process's own caches (stems, SQLite pages) fill here
            engine.search(q, caller, depths=depths)
        for n in range(args.passes):
            order = list(figures.items()) if n % 2 == 0 else list(reversed(figures.items()))
            for name, (fusion, total) in order:
                # Bypass: a cache "newer" than every read is never used nor filled.
                with store._units_lock:
                    store._forget_units(-1 if name.startswith("units cached") else 10**18)
                for q in queries:
                    r = engine.search(q, caller, depths=depths)
                    fusion.append(r.timings_ms["fusion"])
                    total.append(r.timings_ms["total"])
        print(f"{beir.name} ({args.split}): {len(beir.corpus):,} documents, {len(queries)} queries x {args.passes}"
              " passes, depth 100 per leg")
        print("| units | fusion p50 ms | fusion p95 ms | search p50 ms | search p95 ms |")
        print("|---|---|---|---|---|")
        for name, (fusion, total) in figures.items():
            f50, f95 = np.percentile(fusion, [50, 95])
            t50, t95 = np.percentile(total, [50, 95])
            print(f"| {name} | {f50:.2f} | {f95:.2f} | {t50:.2f} | {t95:.2f} |")
        engine.close()


if __name__ == "__main__":
    main()

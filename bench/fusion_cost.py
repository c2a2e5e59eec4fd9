"""What fusion and scoring cost per search, before and after issue 12 item 8, side by side in one run.

    python bench/fusion_cost.py ../shared/data/scifact --split train --queries 300

Stores the set's corpus with the seeded hash embedder (the dense leg then returns candidates at
no model cost: this measures fusion, not embedding) and runs each query at depth 100 per leg
(full text, dense, Q&A), top 10, through ``Engine.search`` twice:

- **now**: the engine as it is (one pass over the fused rows, hits built only for the top);
- **before**: the same engine with its fusion, scoring and title rescue replaced by the code of
  commit aeddaf2 (``bench/legacy_fusion.py``, verbatim): every candidate built as a ``Hit``,
  coverage by a generator per candidate, a title lookup in the store per distinctive word.

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
from types import MethodType

import numpy as np

from electa import Caller, Engine, Settings
from electa.embedders.hashing import HashEmbedder
from electa.eval.beir import load_beir
from electa.ingest.loaders import Loaded
from electa.types import Access

sys.path.insert(0, str(Path(__file__).parent))
import legacy_fusion


def install_legacy(engine: Engine) -> None:
    """The search path of commit aeddaf2: rank every candidate, rescue over all, then cut."""

    def rank(self: Engine, text, results, *, weights=None, k=None, floor=None, order=None, page_url=None,
             lift=None, top=None):  # type: ignore[no-untyped-def]
        s = self.settings
        hits = legacy_fusion._fuse_and_score(self, text, results, {**s.weights, **(weights or {})},
                                             s.rrf_k if k is None else k, s.floor if floor is None else floor,
                                             order, page_url, legacy_fusion.LIFT if lift is None else lift)
        return legacy_fusion._title_rescue(self, text, hits, self._legacy_caller)[:top]

    engine.rank = MethodType(rank, engine)  # type: ignore[method-assign]
    engine._title_rescue = lambda text, hits, caller: hits  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--split", default="test")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--passes", type=int, default=3)
    args = parser.parse_args()
    beir = load_beir(args.dataset, args.split)
    with tempfile.TemporaryDirectory(prefix="electa-bench-") as tmp:
        now = Engine.open(Path(tmp), Settings(), HashEmbedder(dim=64))
        now.ingest_loaded("corpus", Loaded(documents=beir.corpus), Access("bench"), kind="beir",
                          content_hash=beir.corpus_hash)
        before = Engine.open(Path(tmp), Settings(), HashEmbedder(dim=64))
        caller, depths = Caller("bench"), {"fulltext": 100, "dense": 100, "qa": 100}
        before._legacy_caller = caller  # type: ignore[attr-defined]
        install_legacy(before)
        queries = list(beir.queries.values())[: args.queries]
        engines = {"before (aeddaf2)": before, "now": now}
        figures: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in engines}
        for q in queries:  # warm-up, discarded: stems, units and SQLite pages fill here
            for engine in engines.values():
                engine.search(q, caller, depths=depths)
        same = 0
        for n in range(args.passes):
            for i, q in enumerate(queries):
                order = list(engines.items()) if (n + i) % 2 == 0 else list(reversed(engines.items()))
                out = {}
                for name, engine in order:
                    r = engine.search(q, caller, depths=depths, top=10)
                    figures[name][0].append(r.timings_ms["fusion"])
                    figures[name][1].append(r.timings_ms["total"])
                    out[name] = r.hits
                same += out["now"] == out["before (aeddaf2)"]
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
        print(f"fusion stage {b[0] / a[0]:.1f}x faster at p50, whole search {b[1] / a[1]:.2f}x;"
              f" identical hits for {same} of {len(queries) * args.passes} searches")
        for engine in engines.values():
            engine.close()


if __name__ == "__main__":
    main()

"""What the knowledge graph costs: ingest with it on and off, side by side, its size, and the
graph leg's search time (SPEC A6, B5; issue 11).

    python bench/graph_cost.py ../shared/data/scifact --docs 2000
    python bench/graph_cost.py ../shared/data/stackfaq --split dev --docs 2000
    python bench/graph_cost.py ../shared/data/stackfaq --split dev --extractor spacy   # pip install 'electa[ner]'

The first ``--docs`` documents of the set are ingested twice into fresh embedded stores with the
seeded hash embedder (so the model's time does not hide the graph's), once with the graph off
(``ELECTA_GRAPH=''``) and once with ``--extractor`` (default ``patterns``), alternately, best of
``--repeat`` runs each. Printed: seconds
for each and their ratio, what the graph holds (units read, nodes, mentions, edges) and the
database's bytes with and without it; then each question of the set searched by the graph leg
alone: how many the leg links to something, and its p50 and p95 in milliseconds.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from electa.config import Settings
from electa.embedders.hashing import HashEmbedder
from electa.engine import Engine
from electa.eval.beir import load_beir
from electa.ingest.page import Loaded
from electa.types import Access, Caller


def ingest(docs: list, graph: str, where: Path) -> tuple[float, Engine]:  # type: ignore[type-arg]
    engine = Engine.open(where, Settings(graph=graph), HashEmbedder(dim=64))
    start = time.perf_counter()
    engine.ingest_loaded("bench", Loaded(docs), Access("bench"))
    return time.perf_counter() - start, engine


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dataset", type=Path)
    ap.add_argument("--split", default="train")
    ap.add_argument("--docs", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--questions", type=int, default=300)
    ap.add_argument("--extractor", default="patterns", help="patterns, or spacy (pip install 'electa[ner]')")
    args = ap.parse_args()
    beir = load_beir(args.dataset, args.split)
    docs = beir.corpus[: args.docs]
    times: dict[str, list[float]] = {"off": [], "on": []}
    sizes: dict[str, int] = {}
    engine: Engine | None = None
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(args.repeat):
            for label, graph in (("off", ""), ("on", args.extractor)):
                where = Path(tmp) / f"{label}{run}"
                seconds, eng = ingest(docs, graph, where)
                times[label].append(seconds)
                con = eng.store.con  # type: ignore[attr-defined]  # (the embedded store's)
                con.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # (pages still in the log are the database's too)
                sizes[label] = int(con.execute("SELECT page_size * (page_count - freelist_count) FROM"
                                               " pragma_page_size, pragma_page_count, pragma_freelist_count").fetchone()[0])
                if label == "on":
                    engine = eng
                else:
                    eng.close()
        assert engine is not None
        off, on = min(times["off"]), min(times["on"])
        counts = engine.stats()["graph"]
        print(f"{len(docs)} documents of {beir.name}; ingest (hash embedder), best of {args.repeat}:")
        print("| graph | seconds | ratio |\n|---|---|---|")
        print(f"| off | {off:.2f} | 1.00 |\n| on ({args.extractor}) | {on:.2f} | {on / off:.2f} |")
        print(f"\ngraph: {counts}; database {sizes['on']:,} bytes with it, {sizes['off']:,} without")
        questions = list(beir.queries.values())[: args.questions]
        caller = Caller("bench")
        engine.search(questions[0], caller, legs=["graph"])  # (the organisation's graph read once)
        ms, linked = [], 0
        for question in questions:
            start = time.perf_counter()
            result = engine.search(question, caller, legs=["graph"])
            ms.append((time.perf_counter() - start) * 1000)
            linked += bool(result.hits)
        print(f"{len(questions)} questions, graph leg alone: {linked} found something;"
              f" p50 {np.median(ms):.2f} ms, p95 {np.percentile(ms, 95):.2f} ms (whole search: leg, fusion, scoring)")
        engine.close()


if __name__ == "__main__":
    main()

"""Electa's legs and fusion next to bm25s and rank_bm25, on one BEIR-layout set, in one run.

    python bench/bm25_compare.py ../shared/data/scifact --split train

Prints nDCG@10 and queries per second for each system, and ratios to bm25s. Every system
answers the same queries one at a time (as a live service does), tokenisation included;
each timing pass is repeated and the median pass is reported. bm25s and rank_bm25 get the
same analysis Electa's full-text leg uses: English stop words, Porter stemming, title + text.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from electa.embedders.registry import create_embedder
from electa.engine import Engine
from electa.eval.beir import load_beir
from electa.eval.metrics import mean_metrics
from electa.eval.runner import EVAL_ORG, default_data_dir, ingest_corpus
from electa.text import STOPWORDS, stem, tokens
from electa.types import Caller


def analyse(text: str) -> list[str]:
    return [stem(t) for t in tokens(text) if t not in STOPWORDS]


def timed(name: str, queries: dict[str, str], fn: Callable[[str], list[str]], passes: int) -> tuple[dict[str, list[str]], float]:
    runs: dict[str, list[str]] = {}
    rates = []
    for _ in range(passes):
        start = time.perf_counter()
        for qid, text in queries.items():
            runs[qid] = fn(text)
        rates.append(len(queries) / (time.perf_counter() - start))
    print(f"  timed {name}: passes q/s {[round(r) for r in rates]}", file=sys.stderr)
    return runs, statistics.median(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--split", default="test")
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--skip-rank-bm25", action="store_true", help="rank_bm25 is slow on large corpora")
    args = parser.parse_args()

    import bm25s
    from rank_bm25 import BM25Okapi

    beir = load_beir(args.dataset, args.split)
    embedder = create_embedder("minilm")
    engine = Engine.open(default_data_dir(beir, embedder.model_id), embedder=embedder)
    ingest_corpus(engine, beir, progress=sys.stderr.isatty())
    engine.fulltext.warm()
    caller = Caller(EVAL_ORG)
    allowed = engine.store.allowed(caller)
    ext = {}

    def doc_ids(unit_hits: list[tuple[int, float]]) -> list[str]:
        missing = [u for u, _ in unit_hits if u not in ext]
        if missing:
            ext.update({u: s.ext_id for u, s in engine.store.units(missing).items()})
        return list(dict.fromkeys(ext[u] for u, _ in unit_hits))

    ids = [d.ext_id for d in beir.corpus]
    texts = [f"{d.title} {d.text}" for d in beir.corpus]
    retriever = bm25s.BM25()
    retriever.index([analyse(t) for t in texts], show_progress=False)
    okapi = None if args.skip_rank_bm25 else BM25Okapi([analyse(t) for t in texts])

    def bm25s_search(q: str) -> list[str]:
        found, _ = retriever.retrieve([analyse(q)], k=min(args.depth, len(ids)), show_progress=False, n_threads=1)
        return [ids[i] for i in found[0]]

    def okapi_search(q: str) -> list[str]:
        scores = okapi.get_scores(analyse(q))  # type: ignore[union-attr]
        top = np.argpartition(-scores, args.depth)[: args.depth]
        return [ids[i] for i in top[np.argsort(-scores[top])]]

    systems: list[tuple[str, Callable[[str], list[str]]]] = [
        ("electa fulltext leg (FTS5, BM25 image)",
         lambda q: doc_ids(engine.fulltext.search(q, caller, allowed, args.depth))),
        ("electa fulltext leg (FTS5 bm25() in SQLite)",
         lambda q: doc_ids(engine.store.fts_search("chunk_fts", q, caller, args.depth, engine.fulltext.weights))),
        ("bm25s 0.x (numpy backend)", bm25s_search),
    ]
    if okapi is not None:
        systems.append(("rank_bm25 BM25Okapi", okapi_search))
    systems += [
        ("electa dense leg (MiniLM int8 + HNSW)",
         lambda q: doc_ids(engine.dense.search(q, caller, allowed, args.depth))),
        ("electa fused search (all legs, RRF + scoring)",
         lambda q: [h.ext_id for h in engine.search(q, caller, top=args.depth,
                                                    depths=dict.fromkeys(engine.legs, args.depth)).hits]),
    ]
    rows = []
    for name, fn in systems:
        passes = 1 if name.startswith("rank_bm25") else args.passes
        runs, qps = timed(name, beir.queries, fn, passes)
        rows.append((name, mean_metrics(runs, beir.qrels)["ndcg@10"], qps))
    base = next(r for r in rows if r[0].startswith("bm25s"))
    print(f"\n{beir.name} ({args.split}): {len(beir.queries)} queries, {len(beir.corpus)} documents, one query at a time")
    print(f"{'system':48} {'nDCG@10':>8} {'q/s':>9} {'q/s vs bm25s':>13} {'nDCG - bm25s':>13}")
    for name, ndcg, qps in rows:
        print(f"{name:48} {ndcg:8.4f} {qps:9.1f} {qps / base[2]:12.2f}x {ndcg - base[1]:+13.4f}")
    engine.close()


if __name__ == "__main__":
    main()

"""The PostgreSQL backend against the embedded one, side by side in one run: same corpus, same
queries, same engine code; nDCG@10 per leg and fused, ingest time and search latency.

    python bench/pg_parity.py ../shared/data/scifact --split train --other ../shared/data/stackfaq
    python bench/pg_parity.py ../shared/data/stackfaq --split dev --other ../shared/data/scifact

The issue's bar: full-text nDCG@10 within 0.01 of the embedded leg. The PostgreSQL server is a
real one started here (``electa.testing.pg_server``: PostgreSQL 18, pgvector 0.8, an ordinary
role so row-level security is on). ``--other`` ingests a second corpus as another tenant in both
stores first: per-tenant BM25 statistics mean it must change no score of the measured tenant.
The dense leg uses the seeded hash embedder (``--dim``) so the run measures the stores, not a
model: faiss HNSW beside SQLite against pgvector HNSW inside PostgreSQL, both M 16,
efConstruction 200, ef_search 128.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from electa.config import Settings
from electa.embedders.hashing import HashEmbedder
from electa.engine import Engine
from electa.eval.beir import load_beir
from electa.eval.runner import evaluate
from electa.ingest.page import Loaded
from electa.stores.registry import open_store
from electa.testing.pg_server import shared_server
from electa.types import Access


def run(name: str, settings: Settings, data: Path, beir, split: str, other, dim: int, limit: int | None) -> dict[str, object]:  # type: ignore[no-untyped-def]
    engine = Engine(open_store(settings, data), settings, HashEmbedder(dim=dim), "")
    try:
        t0 = time.perf_counter()
        if other is not None:
            engine.ingest_loaded(f"beir:{other.name}", Loaded(documents=other.corpus), Access("other"), kind="beir",
                                 content_hash=other.corpus_hash)
        other_s = time.perf_counter() - t0
        report = evaluate(engine, beir, split, limit=limit,
                          legs=["fulltext", "dense"])
        out = {"backend": name, "ingest_s": round(report.ingest_seconds + other_s, 1),
               "docs": len(beir.corpus) + (len(other.corpus) if other is not None else 0),
               "ndcg@10": {k: v.get("ndcg@10") for k, v in report.metrics.items()
                           if k in ("fulltext", "dense", "fused")},
               "latency_ms": {k: v for k, v in report.latency_ms.items()}}
        return out
    finally:
        engine.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dataset", type=Path)
    ap.add_argument("--split", default="test")
    ap.add_argument("--other", type=Path, help="a second corpus, ingested first as another tenant")
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--json", type=Path, help="write the figures here too")
    args = ap.parse_args()
    beir = load_beir(args.dataset, args.split)
    other = None
    if args.other:  # its corpus is what counts; any labelled split loads it
        other = load_beir(args.other, sorted(p.stem for p in (args.other / "qrels").glob("*.tsv"))[0])
    work = Path(tempfile.mkdtemp(prefix="electa-parity-"))
    server = shared_server()
    rows = [run("embedded (SQLite + faiss)", Settings(), work / "sqlite", beir, args.split, other, args.dim, args.limit),
            run("PostgreSQL 18 + pgvector 0.8", Settings(store=server.database("parity")), work / "pg", beir, args.split, other,
                args.dim, args.limit)]
    print(f"{beir.name} ({args.split}), {len(beir.queries) if args.limit is None else args.limit} queries;"
          f" other tenant: {other.name if other else 'none'}")
    print(f"{'backend':32} {'ingest s':>9} {'fulltext':>9} {'dense':>7} {'fused':>7} {'search p50':>11} {'p95':>7}"
          f" {'fulltext p50':>13} {'dense p50':>10}")
    for r in rows:
        n, lat = r["ndcg@10"], r["latency_ms"]
        print(f"{r['backend']:32} {r['ingest_s']:>9} {n.get('fulltext', 0):>9.4f} {n.get('dense', 0):>7.4f}"  # type: ignore[union-attr]
              f" {n.get('fused', 0):>7.4f} {lat['search']['p50']:>11.2f} {lat['search']['p95']:>7.2f}"  # type: ignore[index]
              f" {lat.get('leg:fulltext', {}).get('p50', 0):>13.2f} {lat.get('leg:dense', {}).get('p50', 0):>10.2f}")  # type: ignore[union-attr]
    gap = {k: round(rows[1]["ndcg@10"][k] - rows[0]["ndcg@10"][k], 4) for k in rows[0]["ndcg@10"]}  # type: ignore[index]
    print("PostgreSQL minus embedded, nDCG@10:", json.dumps(gap))
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "gap": gap}, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()

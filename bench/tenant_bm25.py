"""What per-caller BM25 statistics cost, next to the global statistics they replace, in one run.

    python bench/tenant_bm25.py ../shared/data/scifact --split train --other ../shared/data/stackfaq

One store holds the set's corpus as tenant "bench" and, with ``--other``, a second corpus as
tenant "other". The full-text leg answers every query of the split one at a time, two ways,
from the same in-memory image:

- per caller (what Electa serves): N, n_t and avg|row| over the rows the caller may read,
  computed at query time from the query terms' postings;
- global (what it served before): every term's BM25 contribution precomputed over the whole
  table, all tenants included, then summed (FTS5's own statistics).

Prints nDCG@10 of each on the set's qrels, the median of three timing passes (queries per
second) and per-query p50/p95 latency. With a second tenant the two rankings differ: only the
per-caller one is independent of what the other tenant holds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from electa.config import Settings
from electa.engine import Engine
from electa.eval.beir import load_beir
from electa.eval.metrics import mean_metrics
from electa.ingest.page import Loaded
from electa.stores.bm25_memory import K1, B, BM25Image, top_units
from electa.stores.sqlite import SqliteStore
from electa.text.analysis import query_terms
from electa.types import Access, Caller


def global_scores(image: BM25Image) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Every posting's BM25 contribution with whole-table statistics (the previous design)."""
    n_rows = image.unit_ids.size
    avg = image.lengths.sum() / max(n_rows, 1)
    out = {}
    assert isinstance(image.terms, dict)  # (built in memory)
    for term in image.terms:
        found = image.postings(term)
        assert found is not None
        rows, f = found[0], found[1].astype(np.float64)
        n_t = rows.size
        idf = max(float(np.log((n_rows - n_t + 0.5) / (n_t + 0.5))), 1e-6)
        hit = f > 0
        rows, f = rows[hit], f[hit]
        out[term] = (rows, idf * f * (K1 + 1.0) / (f + K1 * (1.0 - B + B * image.lengths[rows] / avg)))
    return out


def global_search(image: BM25Image, table: dict[str, tuple[np.ndarray, np.ndarray]], query: str,
                  allowed: np.ndarray, limit: int) -> list[tuple[int, float]]:
    hits = [table[t] for t in query_terms(query) if t in table]
    if not hits:
        return []
    rows = np.concatenate([h[0] for h in hits])
    scores = np.concatenate([h[1] for h in hits])
    if len(hits) > 1:
        rows, inverse = np.unique(rows, return_inverse=True)
        scores = np.bincount(inverse, weights=scores)
    units = image.unit_ids[rows]
    pos = np.clip(np.searchsorted(allowed, units), 0, allowed.size - 1)
    ok = allowed[pos] == units
    return top_units(units[ok], scores[ok], limit)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--split", default="test")
    parser.add_argument("--other", type=Path, default=None, help="A second BEIR corpus, ingested as another tenant.")
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--data", type=Path, default=None, help="Store directory (default: a temporary one).")
    args = parser.parse_args()

    import tempfile

    beir = load_beir(args.dataset, args.split)
    tmp = tempfile.TemporaryDirectory(prefix="electa-bench-")
    data = args.data or Path(tmp.name)
    # Full text only: no embedder, so the corpus is stored without spending minutes on vectors.
    engine = Engine(SqliteStore(data), Settings(), None, "bench: full-text leg only")
    engine.ingest_loaded(f"beir:{beir.name}", Loaded(documents=beir.corpus), Access("bench"), kind="beir",
                         content_hash=beir.corpus_hash)
    if args.other:
        other = load_beir(args.other, "dev" if (args.other / "qrels" / "dev.tsv").exists() else "test")
        engine.ingest_loaded(f"beir:{other.name}", Loaded(documents=other.corpus), Access("other"), kind="beir",
                             content_hash=other.corpus_hash)
    caller = Caller("bench")
    allowed = engine.store.allowed(caller)
    leg = engine.fulltext
    leg.warm()
    image = engine.store.lexical_image(leg.index, leg.weights)  # one image of every row, for the global figures
    assert image is not None
    table = global_scores(image)
    doc_of = {u.id: u.ext_id for u in engine.store.units(allowed.ids.tolist()).values()}
    queries = dict(sorted(beir.queries.items()))

    def per_caller(q: str) -> list[tuple[int, float]]:
        return leg.search(q, caller, allowed, 100)

    def whole_table(q: str) -> list[tuple[int, float]]:
        return global_search(image, table, q, allowed.ids, 100)

    print(f"{beir.name} ({args.split}): {len(beir.corpus)} documents, {len(queries)} queries;"
          f" image rows {image.unit_ids.size} (other tenant: {'yes' if args.other else 'no'})")
    print("| statistics | nDCG@10 | queries/s (median of passes) | p50 ms | p95 ms |")
    print("|---|---|---|---|---|")
    rates: dict[str, float] = {}
    for name, fn in (("per caller (served)", per_caller), ("global (before)", whole_table)):
        runs: dict[str, list[str]] = {}
        per_query: list[float] = []
        pass_rates = []
        for _ in range(args.passes):
            start = time.perf_counter()
            for qid, text in queries.items():
                t0 = time.perf_counter()
                hits = fn(text)
                per_query.append((time.perf_counter() - t0) * 1000.0)
                runs[qid] = list(dict.fromkeys(doc_of[u] for u, _ in hits if u in doc_of))
            pass_rates.append(len(queries) / (time.perf_counter() - start))
        rates[name] = statistics.median(pass_rates)
        ndcg = mean_metrics(runs, beir.qrels)["ndcg@10"]
        p50, p95 = np.percentile(per_query, [50, 95])
        print(f"| {name} | {ndcg:.4f} | {rates[name]:,.0f} | {p50:.3f} | {p95:.3f} |")
        print(f"  passes q/s: {[round(r) for r in pass_rates]}", file=sys.stderr)
    print(f"\nper-caller statistics run at {rates['per caller (served)'] / rates['global (before)']:.2f}x"
          " the speed of precomputed global statistics")
    engine.close()
    tmp.cleanup()


if __name__ == "__main__":
    main()

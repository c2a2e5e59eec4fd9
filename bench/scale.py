"""Cost against size: the embedded store and PostgreSQL at 10k, 100k and 1M chunks, one run.

    python bench/scale.py --sizes 10000,100000 --backends embedded,postgresql --out runs/scale
    python bench/scale.py --sizes 10000,100000,1000000 --backends embedded   # hours on 2 cores

What is measured, per backend, as the store grows through each size (one tenant, all public):

- ingest rate: chunks per second through ``store.put_source`` (1,000 documents a source, one
  transaction each; chunking, embedding and the HTTP layer are not in it: the stores are);
- cold start: a new engine on the grown store (a new worker) building the full-text legs'
  images and opening (embedded: loading or rebuilding) the dense index;
- search: p50/p95 of whole hybrid search (``Engine.search``: legs in parallel, fusion, scoring)
  and of each leg, over 200 queries of 2-4 words drawn from the corpus vocabulary;
- commit to searchable: a one-document write and what an ingest does after it (the dense index
  catches up, the full-text segment of new rows is rebuilt), until a search finds it; five
  writes in a row, the median, the worst and the median of each part;
- memory: the process's resident set after warm-up, one engine open (before the cold-start
  engine is opened beside it), split into its own heap and mapped files (:func:`memory_mb`),
  and the peak so far (the build included); disk: the data directory, or ``pg_database_size``.

The corpus is synthetic and says so: each document is one parent unit of 40-80 words drawn from
a Zipf(1.1) vocabulary of 50,000 words (with product codes), titled with 3-5 of them. Vectors are
synthetic unit vectors (``--dim``, default 64) near one of 256 seeded centroids, so HNSW sees
clusters; the query vector is drawn the same way from the query's words. A model would cost the
same per query in both backends and is measured elsewhere (``electa eval``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from electa.config import Settings
from electa.engine import Engine
from electa.stores.protocol import PreparedDocument, SourceRecord
from electa.stores.registry import open_store
from electa.types import Access, Caller, Chunk, ChunkKind

VOCAB = 50_000
CENTROIDS = 256
ORG = "bench"
WRITES = 5


class SyntheticEmbedder:
    """Seeded unit vectors near one of ``CENTROIDS`` centroids, picked by the text's first word."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.model_id = f"bench/synthetic-{dim}"
        self.centroids = np.random.default_rng(7).standard_normal((CENTROIDS, dim)).astype(np.float32)

    def _one(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        first = text.split()[0] if text.split() else ""
        c = self.centroids[int(hashlib.sha256(first.encode()).hexdigest(), 16) % CENTROIDS]
        v = c + 0.5 * np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
        return (v / np.linalg.norm(v)).astype(np.float32)

    def embed(self, texts):  # type: ignore[no-untyped-def]
        return np.stack([self._one(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self._one(text)


def words(rng: np.random.Generator, n: int) -> list[str]:
    ranks = np.minimum(rng.zipf(1.1, n), VOCAB)
    return [f"w{r}" if r % 97 else f"E{1000 + r}" for r in ranks]


def documents(start: int, count: int, embedder: SyntheticEmbedder) -> list[PreparedDocument]:
    out = []
    for i in range(start, start + count):
        rng = np.random.default_rng(i)
        title = " ".join(words(rng, int(rng.integers(3, 6))))
        body = " ".join(words(rng, int(rng.integers(40, 81))))
        chunk = Chunk(ChunkKind.PARENT, 0, title, body)
        out.append(PreparedDocument(f"doc{i}", title, f"https://bench.example/{i}",
                                    hashlib.sha256(body.encode()).hexdigest(), (chunk,), (embedder._one(title + " " + body),)))
    return out


def grow(engine: Engine, embedder: SyntheticEmbedder, have: int, want: int) -> float:
    t0 = time.perf_counter()
    for start in range(have, want, 1000):
        count = min(1000, want - start)
        engine.store.put_source(SourceRecord(ORG, "default", f"batch-{start}", "bench", "", f"h{start}", Access(ORG)),
                                documents(start, count, embedder), model_id=embedder.model_id)
    rate = (want - have) / max(time.perf_counter() - t0, 1e-9)
    engine._written()  # what an ingest does after its batch: the dense index catches up, images rebuild
    engine.fulltext.close(timeout=3600)  # (waits for the background merge, so it is not timed as search)
    engine.qa.close(timeout=3600)
    return rate


def memory_mb() -> dict[str, float]:
    """This process's resident set (``VmRSS``) and its parts: ``RssAnon`` (its own heap) and
    ``RssFile`` (pages of mapped files: saved full-text images, the faiss graph, libraries;
    shared with every process mapping them, and given back by the kernel when memory is short),
    and the peak resident set so far (``VmHWM``)."""
    names = {"VmRSS": "rss_mb", "RssAnon": "heap_mb", "RssFile": "mapped_mb", "VmHWM": "peak_rss_mb"}
    out: dict[str, float] = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in names:
                out[names[key]] = round(int(value.split()[0]) / 1024, 1)
    return out


def disk_mb(engine: Engine, data: Path) -> float:
    stats = engine.store.stats()
    if engine.settings.store:
        return int(stats["bytes_on_disk"]) / 2**20  # type: ignore[call-overload]
    return sum(p.stat().st_size for p in data.rglob("*") if p.is_file()) / 2**20


def measure(engine: Engine, embedder: SyntheticEmbedder, size: int, data: Path, queries: list[str],
            tag: str = "") -> dict[str, object]:
    caller = Caller(ORG)
    for q in queries[:20]:  # warm caches (allowed set, masks), then the resident set of one engine
        engine.search(q, caller)
    memory = memory_mb()
    # Cold start: a second engine on the same store (a new worker) builds what it keeps in memory.
    t0 = time.perf_counter()
    other = Engine(open_store(engine.settings, data), engine.settings, embedder, "")  # type: ignore[arg-type]
    other.fulltext.warm()
    other.qa.warm()
    if other.index is not None:
        other.index.sync()
    cold = time.perf_counter() - t0
    other.close()
    whole, legs = [], {}
    for q in queries:
        t = time.perf_counter()
        res = engine.search(q, caller)
        whole.append((time.perf_counter() - t) * 1000)
        for leg in res.legs:
            legs.setdefault(leg.leg, []).append(leg.elapsed_ms)
    searchable, parts = [], []
    for n in range(WRITES):  # a few one-document writes: the first after a warm search, then in a row
        token = f"freshtoken{size}x{n}{tag}"
        fresh = PreparedDocument(f"fresh{size}x{n}", token, "", token,
                                 (Chunk(ChunkKind.PARENT, 0, token, f"{token} arrives"),), (embedder._one(token),))
        t = time.perf_counter()
        engine.store.put_source(SourceRecord(ORG, "default", f"fresh-{size}-{n}{tag}", "bench", "", token, Access(ORG)),
                                [fresh], model_id=embedder.model_id)
        t1 = time.perf_counter()
        engine._written()
        t2 = time.perf_counter()
        while not any(engine.store.units([h.unit_id])[h.unit_id].title == token
                      for h in engine.search(token, caller, legs=["fulltext"]).hits):
            time.sleep(0.005)
        t3 = time.perf_counter()
        searchable.append((t3 - t) * 1000)
        parts.append(((t1 - t) * 1000, (t2 - t1) * 1000, (t3 - t2) * 1000))
    pct = lambda xs, p: float(np.percentile(xs, p)) if xs else 0.0
    return {"chunks": size, "cold_start_s": round(cold, 2), "search_p50_ms": round(pct(whole, 50), 2),
            "search_p95_ms": round(pct(whole, 95), 2),
            "legs_p50_ms": {k: round(pct(v, 50), 2) for k, v in legs.items()},
            "legs_p95_ms": {k: round(pct(v, 95), 2) for k, v in legs.items()},
            "commit_to_searchable_ms": round(float(np.median(searchable)), 1),
            "commit_to_searchable_max_ms": round(max(searchable), 1),
            # median of each part: the write's transaction, what an ingest does after it (index
            # catch-up, full-text segment), the search that finds it (the allowed set follows)
            "commit_to_searchable_parts_ms": {name: round(float(np.median([p[i] for p in parts])), 1)
                                              for i, name in enumerate(("write", "after_write", "first_search"))},
            "commit_to_searchable_each_ms": [[round(x, 1) for x in p] for p in parts],
            **memory,
            "disk_mb": round(disk_mb(engine, data), 1)}


def run_backend(name: str, sizes: list[int], dim: int, work: Path) -> list[dict[str, object]]:
    embedder = SyntheticEmbedder(dim)
    settings = Settings()
    if name == "postgresql":
        from electa.testing.pg_server import shared_server

        settings = Settings(store=shared_server().database("scale"))
    data = work / name
    engine = Engine(open_store(settings, data), settings, embedder, "")  # type: ignore[arg-type]
    rng = np.random.default_rng(11)
    queries = [" ".join(words(rng, int(rng.integers(2, 5)))) for _ in range(200)]
    rows, have = [], 0
    try:
        for size in sizes:
            rate = grow(engine, embedder, have, size)
            have = size
            row = {"backend": name, "ingest_chunks_per_s": round(rate, 1), **measure(engine, embedder, size, data, queries)}
            have += WRITES  # the fresh documents
            print(json.dumps(row), flush=True)
            rows.append(row)
    finally:
        engine.close()
    return rows


def plot(rows: list[dict[str, object]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    for backend in sorted({str(r["backend"]) for r in rows}):
        mine = [r for r in rows if r["backend"] == backend]
        xs = [int(r["chunks"]) for r in mine]  # type: ignore[call-overload]
        axes[0].plot(xs, [r["search_p50_ms"] for r in mine], "o-", label=f"{backend} p50")
        axes[0].plot(xs, [r["search_p95_ms"] for r in mine], "o--", label=f"{backend} p95")
        axes[1].plot(xs, [r["ingest_chunks_per_s"] for r in mine], "o-", label=backend)
        axes[2].plot(xs, [r.get("heap_mb", r["rss_mb"]) for r in mine], "o-", label=f"{backend} heap")
        axes[2].plot(xs, [r["disk_mb"] for r in mine], "o--", label=f"{backend} disk")
    for ax, title in zip(axes, ("whole hybrid search, ms", "ingest, chunks/s", "memory and disk, MB"), strict=True):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("chunks")
        ax.set_title(title)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--backends", default="embedded,postgresql")
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--out", type=Path, default=Path("runs/scale"))
    ap.add_argument("--measure", type=Path, default=None,
                    help="measure an embedded store this script grew before (its data directory, left in the"
                         " temporary work directory), at --sizes' one size, without growing it: to measure again"
                         " on a quiet machine")
    args = ap.parse_args()
    if args.measure is not None:
        embedder, settings = SyntheticEmbedder(args.dim), Settings()
        engine = Engine(open_store(settings, args.measure), settings, embedder, "")  # type: ignore[arg-type]
        rng = np.random.default_rng(11)
        queries = [" ".join(words(rng, int(rng.integers(2, 5)))) for _ in range(200)]
        try:
            size = int(args.sizes.split(",")[-1])
            again = measure(engine, embedder, size, args.measure, queries, tag=f"again{int(time.time())}")
            print(json.dumps({"backend": "embedded", "measured_again": True, **again}))
        finally:
            engine.close()
        return
    sizes = sorted(int(s) for s in args.sizes.split(","))
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="electa-scale-"))
    print(f"cores: {os.cpu_count()}; sizes {sizes}; dim {args.dim}; work {work}", flush=True)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    if len(backends) == 1:
        rows = run_backend(backends[0], sizes, args.dim, work)
    else:  # one process per backend: its resident memory is its own
        import subprocess
        import sys

        rows = []
        for backend in backends:
            out = args.out / backend
            subprocess.run([sys.executable, __file__, "--sizes", args.sizes, "--backends", backend, "--dim", str(args.dim),
                            "--out", str(out)], check=True)
            rows += json.loads((out / "scale.json").read_text(encoding="utf-8"))
    (args.out / "scale.json").write_text(json.dumps(rows, indent=2), encoding="utf-8")
    plot(rows, args.out / "scale.png")
    print(f"{'backend':11} {'chunks':>8} {'ingest/s':>9} {'cold s':>7} {'p50 ms':>7} {'p95 ms':>7} {'fulltext':>9}"
          f" {'dense':>7} {'to search ms':>13} {'RSS MB':>8} {'heap MB':>8} {'mapped MB':>9} {'peak MB':>8} {'disk MB':>8}")
    for r in rows:
        legs = r["legs_p50_ms"]
        print(f"{r['backend']:11} {r['chunks']:>8} {r['ingest_chunks_per_s']:>9} {r['cold_start_s']:>7}"
              f" {r['search_p50_ms']:>7} {r['search_p95_ms']:>7} {legs.get('fulltext', 0):>9} {legs.get('dense', 0):>7}"  # type: ignore[union-attr]
              f" {r['commit_to_searchable_ms']:>13} {r['rss_mb']:>8} {r.get('heap_mb', ''):>8} {r.get('mapped_mb', ''):>9}"
              f" {r.get('peak_rss_mb', ''):>8} {r['disk_mb']:>8}")


if __name__ == "__main__":
    main()

"""How soon a write is searchable in the full-text leg: segments against a whole rebuild, in one run.

    python bench/lexical_writes.py --docs 50000 --writes 10

Builds a store of ``--docs`` synthetic pages (words drawn from a Zipf distribution over a
20,000-word vocabulary, 60 words a page, full text only: no embedder), then writes one page at a
time and measures, per write, the time from the commit to the first query that finds the page's
own token:

- segmented (what the leg does): only the segment of recent rows is rebuilt;
- whole rebuild (what it did before): the image of every row is rebuilt.

Prints medians and maxima in milliseconds, the ratio, and the memory of the image. The
caller's allowed set, read again after every write whichever way the image is kept, is timed
on its own line: at this scale it, not the image, is what a write then waits for.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from electa.config import Settings
from electa.engine import Engine
from electa.ingest.loaders import Loaded
from electa.stores.protocol import TextIndex
from electa.stores.sqlite import SqliteStore
from electa.types import Access, Caller, Document, Section


def pages(n: int, start: int, rng: np.random.Generator, vocab: list[str]) -> list[Document]:
    out = []
    for i in range(start, start + n):
        words = [vocab[min(int(z), len(vocab)) - 1] for z in rng.zipf(1.3, 60)]
        text = " ".join(words) + f" u{i}x."
        out.append(Document(str(i), f"Page {i}", text, sections=(Section((), text),)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=50_000)
    parser.add_argument("--writes", type=int, default=10)
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    vocab = [f"w{i}" for i in range(20_000)]
    with tempfile.TemporaryDirectory(prefix="electa-bench-") as tmp:
        engine = Engine(SqliteStore(Path(tmp)), Settings(), None, "bench: full-text leg only")
        start = time.perf_counter()
        for batch in range(0, args.docs, 10_000):
            engine.ingest_loaded(f"corpus-{batch}", Loaded(pages(min(10_000, args.docs - batch), batch, rng, vocab)),
                                 Access("bench"))
        leg = engine.fulltext
        for _ in range(3):  # let the background builds and merges of the initial load settle
            leg.close()
            main, _ = leg.warm()
        leg.close()
        leg.refresh = lambda: None  # type: ignore[method-assign]  # rebuilds happen where they are timed
        print(f"{args.docs:,} pages stored in {time.perf_counter() - start:.0f}s; image: {main.unit_ids.size:,} rows,"
              f" {sum(p.rows.nbytes + p.freqs.nbytes for p in main.postings.values()) / 2**20:.0f} MiB of postings")
        caller = Caller("bench")
        allowed_ms, segment_ms, query_ms, whole_ms = [], [], [], []
        for w in range(args.writes):
            n = args.docs + w
            engine.ingest_loaded(f"write-{n}", Loaded(pages(1, n, rng, vocab)), Access("bench"))
            t0 = time.perf_counter()
            allowed = engine.store.allowed(caller)
            t1 = time.perf_counter()
            leg.warm(allowed.generation)
            t2 = time.perf_counter()
            hits = leg.search(f"u{n}x", caller, allowed, 10)
            t3 = time.perf_counter()
            assert hits and engine.store.units([hits[0][0]])[hits[0][0]].title == f"Page {n}", "the page is not found"
            engine.store.lexical_image(TextIndex.UNITS, leg.weights)
            t4 = time.perf_counter()
            allowed_ms.append((t1 - t0) * 1000)
            segment_ms.append((t2 - t1) * 1000)
            query_ms.append((t3 - t2) * 1000)
            whole_ms.append((t4 - t3) * 1000)
        leg.close()
        print("| after one write | median ms | max ms |")
        print("|---|---|---|")
        for name, values in (("segment of recent rows rebuilt (served)", segment_ms),
                             ("whole image rebuilt (before)", whole_ms),
                             ("the query itself", query_ms),
                             ("the caller's allowed set read again (both ways)", allowed_ms)):
            print(f"| {name} | {statistics.median(values):.1f} | {max(values):.1f} |")
        ratio = statistics.median(whole_ms) / statistics.median(segment_ms) if statistics.median(segment_ms) else 0.0
        print(f"\nthe image is current {ratio:,.0f}x sooner; merges (in the background): {leg.merges}")
        engine.close()


if __name__ == "__main__":
    main()

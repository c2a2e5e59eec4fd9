"""How soon a write is searchable in the full-text leg: segments against a whole rebuild, in one run.

    python bench/lexical_writes.py --docs 50000 --writes 10

Builds a store of ``--docs`` synthetic pages (words drawn from a Zipf distribution over a
20,000-word vocabulary, 60 words a page, full text only: no embedder), then writes one page at a
time and measures, per write, the time from the commit to the first query that finds the page's
own token:

- segmented (what the leg does): the time from the commit to the first query that finds the
  page, with the leg working as in production: the segment of recent rows rebuilt after each
  write, and the large one merged in the background once the recent rows pass 5% of it (give
  enough ``--writes`` to cross a merge: 2,000 at 20,000 pages);
- whole rebuild (what it did before): the time to rebuild the image of every row, measured
  alone (before it, a write waited for that, and then for the query).

Prints the median, p95 and maximum in milliseconds, and the memory of the image. The query's
time includes reading the caller's allowed set again after the write, which is not incremental.
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
from electa.ingest.page import Loaded
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
        print(f"{args.docs:,} pages stored in {time.perf_counter() - start:.0f}s; image: {main.unit_ids.size:,} rows,"
              f" {(main.rows.nbytes + main.freqs.nbytes) / 2**20:.0f} MiB of postings")
        caller = Caller("bench")
        whole_ms = []
        for _ in range(3):
            t0 = time.perf_counter()
            engine.store.lexical_image(TextIndex.UNITS, leg.weights)
            whole_ms.append((time.perf_counter() - t0) * 1000)
        searchable_ms, segment_rows = [], []
        for w in range(args.writes):
            n = args.docs + w
            engine.ingest_loaded(f"write-{n}", Loaded(pages(1, n, rng, vocab)), Access("bench"))
            t0 = time.perf_counter()  # from the commit to the first query that finds the page
            hits = engine.search(f"u{n}x", caller, legs=["fulltext"]).hits
            searchable_ms.append((time.perf_counter() - t0) * 1000)
            assert hits and hits[0].title == f"Page {n}", "the page written is not found"
            segment_rows.append(leg.warm()[1].unit_ids.size)
        leg.close()
        cuts = np.percentile(searchable_ms, [50, 95])
        print(f"| after one write, {args.docs:,} pages, {args.writes:,} writes | median ms | p95 ms | max ms |")
        print("|---|---|---|---|")
        print(f"| segmented (served): commit to found, background merges included | {cuts[0]:.1f} | {cuts[1]:.1f} |"
              f" {max(searchable_ms):.1f} |")
        print(f"| whole image rebuilt (before), alone | {statistics.median(whole_ms):.1f} | | {max(whole_ms):.1f} |")
        print(f"\nrecent segment grew to {max(segment_rows):,} rows; merges in the background: {leg.merges};"
              f" median ratio {statistics.median(whole_ms) / cuts[0]:,.0f}x")
        engine.close()


if __name__ == "__main__":
    main()

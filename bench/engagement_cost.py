"""What looking up engagement and recency costs a search (SPEC D2: a learned ranker that reads
``votes_up``, ``votes_down`` or ``age_gap`` makes this lookup once per search).

    python bench/engagement_cost.py --pages 500 --votes 0,2000,20000

An embedded store of ``--pages`` pages (the hash embedder: the lookup does not depend on it)
and, for each ``--votes`` figure, that many thumbs up from the organisation's backend on
random pages for random questions (3,000 distinct); then ``Engine.hit_context`` for the top 50
hits of one search, 200 times on the searching thread and 200 times on a fresh thread each (as
the judge runs: a fresh thread opens its own SQLite connection). Printed: p50 and p95 ms, and
how many (question, page) rows the lookup read.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path

from electa import Access, Caller, Engine
from electa.config import Settings
from electa.embedders.hashing import HashEmbedder
from electa.ingest.page import Loaded
from electa.types import Document, Section


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", type=int, default=500)
    ap.add_argument("--votes", default="0,2000,20000")
    ap.add_argument("--runs", type=int, default=200)
    args = ap.parse_args()
    print("| votes stored | rows read | same thread p50 ms | p95 ms | fresh thread p50 ms | p95 ms |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp, Engine.open(Path(tmp), Settings(embedder="hash"), HashEmbedder()) as engine:
        docs = [Document(str(i), f"Page {i}", f"refund plan {i}", f"https://help.example/{i}",
                         sections=(Section((), f"refund plan {i}"),)) for i in range(args.pages)]
        engine.ingest_loaded("kb", Loaded(docs), Access("acme", "bot"))
        caller = Caller("acme", "bot")
        hits = engine.search("refund plan", caller, top=50, judges=[]).hits
        rng, stored = random.Random(1), 0
        for total in (int(v) for v in args.votes.split(",")):
            for _ in range(total - stored):
                engine.store.add_feedback("acme", "bot", f"question {rng.randrange(3000)}",
                                          f"https://help.example/{rng.randrange(args.pages)}", 1)
            stored = total
            rows = len(engine.store.feedback("acme", "bot", urls=[h.url for h in hits]))
            figures = []
            for fresh in (False, True):
                times: list[float] = []

                def once() -> None:
                    start = time.perf_counter()
                    engine.hit_context(caller, hits)
                    times.append((time.perf_counter() - start) * 1000.0)  # noqa: B023 - joined at once

                for _ in range(args.runs):
                    if fresh:
                        worker = threading.Thread(target=once)
                        worker.start()
                        worker.join()
                    else:
                        once()
                figures += [statistics.median(times), statistics.quantiles(times, n=20)[18]]
            print(f"| {total:,} | {rows:,} | " + " | ".join(f"{f:.2f}" for f in figures) + " |", flush=True)


if __name__ == "__main__":
    main()

"""What the ``by-question`` reading costs beside ``by-language`` (issue 14), side by side in one run.

    python bench/reading_cost.py ../shared/data/scifact --split train --docs 500
    python bench/reading_cost.py ../shared/data/xquad-r/en --asked-in ../shared/data/xquad-r/de

A new organisation reads ``by-question`` by default (:mod:`electa.legs.dense_readings`): each
unit is read by its language's model (the chain: MiniLM for English) and by USE, whose vectors
serve a question in a language the organisation does not write in. This prints, per reading,
the medians over ``--passes`` fresh stores (readings alternating, and which goes first):

- ingest seconds and units per second for the first ``--docs`` documents of the corpus (the
  models loaded before the clock starts; USE's load is timed apart, once);
- bytes on disk after the write, and the vectors stored per model;
- whole-search p50 / p95 ms (every default leg) for the set's own questions, and for each
  ``--asked-in`` set's questions (another language's: ``by-question`` searches them in USE's
  space, ``by-language`` with the chain and its crossing scorer).

The default chain (``create_embedder("chain")``) on whatever cores the machine has.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from electa import Access, Caller, Engine, Settings
from electa.embedders.chain import ChainEmbedder, LazyEmbedder
from electa.embedders.registry import create_embedder
from electa.eval.beir import load_beir
from electa.ingest.page import Loaded

READINGS = ("by-language", "by-question")
ORG = "bench"


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def disk_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def one_store(reading: str, docs: Loaded, questions: dict[str, list[str]], chain: ChainEmbedder) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as folder:
        settings = Settings(dense_reading=reading)  # type: ignore[arg-type]
        with Engine.open(Path(folder) / "store", settings, chain) as engine:
            start = time.perf_counter()
            engine.ingest_loaded("corpus", docs, Access(ORG))
            seconds = time.perf_counter() - start
            units = len(engine.store.allowed(Caller(ORG)))
            vectors = {model: engine.store.count_vectors(model)
                       for model in (chain.model_id, chain.crossing.model_id)}
            assert engine.readings.reading(ORG) == reading
            latency = {}
            for name, texts in questions.items():
                times = []
                for text in texts:
                    t0 = time.perf_counter()
                    engine.search(text, Caller(ORG), top=10)
                    times.append((time.perf_counter() - t0) * 1000)
                times.sort()
                latency[name] = (statistics.median(times), times[int(0.95 * (len(times) - 1))])
        size = disk_bytes(Path(folder) / "store")
    return {"seconds": seconds, "units": units, "vectors": vectors, "bytes": size, "latency": latency}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data", type=Path, help="a BEIR folder: its corpus is ingested, its questions asked")
    parser.add_argument("--split", default="test")
    parser.add_argument("--docs", type=int, default=500)
    parser.add_argument("--questions", type=int, default=100, help="questions asked per set")
    parser.add_argument("--asked-in", type=Path, nargs="*", default=[], help="BEIR folders whose questions are asked too")
    parser.add_argument("--passes", type=int, default=2)
    args = parser.parse_args()

    beir = load_beir(args.data, args.split)
    docs = Loaded(documents=beir.corpus[:args.docs])
    questions = {args.data.name: list(beir.queries.values())[:args.questions]}
    for other in args.asked_in:
        questions[other.name] = list(load_beir(other, args.split).queries.values())[:args.questions]

    chain = create_embedder("chain")
    assert isinstance(chain, ChainEmbedder)
    if isinstance(chain.crossing, LazyEmbedder):
        mb, start = rss_mb(), time.perf_counter()
        chain.crossing.load()
        print(f"USE ({chain.crossing.model_id}): loaded in {time.perf_counter() - start:.1f} s,"
              f" {rss_mb() - mb:.0f} MB resident (by-language loads it only once a page is in another language)")
    chain.warm(["en"], crossing=True)
    if isinstance(chain.other, LazyEmbedder):
        chain.other.load()  # (a corpus in another language: its model loaded before the clock too)

    runs: dict[str, list[dict[str, object]]] = {r: [] for r in READINGS}
    for i in range(args.passes):
        for reading in (READINGS if i % 2 == 0 else READINGS[::-1]):
            runs[reading].append(one_store(reading, docs, questions, chain))
            last = runs[reading][-1]
            print(f"pass {i + 1} {reading}: {last['seconds']:.1f} s, {last['units']} units", flush=True)

    print(f"\n{len(docs.documents)} documents of {beir.name}, {args.passes} passes, medians\n")
    header = "| reading | ingest s | units/s | disk MB | vectors (chain / USE) | " + " | ".join(
        f"search {name} p50 / p95 ms" for name in questions) + " |"
    print(header)
    print("|---" * (header.count("|") - 1) + "|")
    for reading, rows in runs.items():
        seconds = statistics.median(float(r["seconds"]) for r in rows)  # type: ignore[arg-type]
        units = int(rows[0]["units"])  # type: ignore[call-overload]
        mb = statistics.median(int(r["bytes"]) for r in rows) / 2**20  # type: ignore[call-overload]
        vectors = " / ".join(str(v) for v in rows[0]["vectors"].values())  # type: ignore[attr-defined]
        cells = []
        for name in questions:
            p50 = statistics.median(r["latency"][name][0] for r in rows)  # type: ignore[index]
            p95 = statistics.median(r["latency"][name][1] for r in rows)  # type: ignore[index]
            cells.append(f"{p50:.1f} / {p95:.1f}")
        print(f"| {reading} | {seconds:.1f} | {units / seconds:.1f} | {mb:.1f} | {vectors} | " + " | ".join(cells) + " |")
    base, new = (statistics.median(float(r["seconds"]) for r in runs[k]) for k in READINGS)  # type: ignore[arg-type]
    print(f"\ningest time by-question / by-language: {new / base:.2f}")


if __name__ == "__main__":
    main()

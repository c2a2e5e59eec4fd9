"""What an updated source's reuse of its units' vectors saves: a store made by an earlier release
read again by this one, with the reuse and without it, side by side.

    python bench/vector_reuse.py FOLDER STORE [--org ORG] [--embedder NAME]

STORE is a data directory in which an earlier release (or an earlier version of FOLDER) ingested
FOLDER (``electa ingest FOLDER --data STORE --org ORG``); it is not changed. It is copied twice,
and ``Engine.ingest`` of FOLDER runs on each copy with this release: once with
:meth:`electa.ingest.pipeline.Ingestor._stored_vectors` lending nothing (every updated
document read by the model whole, as before the reuse), once as shipped. Printed per run:
seconds of the ingest, texts the model read (and the multilingual readings' model, which reads
every new unit again for an organisation that reads with it, and reuses nothing), the report's
counts; then whether the two copies
hold the same units with the same vectors (the largest difference, by unit kind, title and text).
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from electa import Access, Engine, Settings
from electa.ingest.pipeline import Ingestor


def _vectors(data: Path) -> dict[tuple[str, str, str, str], np.ndarray]:
    con = sqlite3.connect(data / "electa.db")
    try:
        rows = con.execute("SELECT c.kind, c.title, c.text, v.model_id, v.vector FROM chunks c"
                           " JOIN vectors v ON v.chunk_id = c.id").fetchall()
    finally:
        con.close()
    return {(k, t, x, m): np.frombuffer(b, dtype=np.float32) for k, t, x, m, b in rows}


def run(folder: Path, store: Path, work: Path, org: str, embedder: str | None, reuse: bool) -> Path:
    data = work / ("with" if reuse else "without")
    shutil.copytree(store, data)
    original = Ingestor._stored_vectors
    if not reuse:
        Ingestor._stored_vectors = lambda self, window: {}  # type: ignore[method-assign]
    try:
        with Engine.open(data, Settings(), embedder) as engine:
            read = {"model": 0, "readings": 0}
            assert engine.embedder is not None, "no embedder: nothing to measure"
            # (the model's reads, and those of the multilingual model that reads every new unit
            # again for an organisation reading with it, `dense_reading`: not reused)
            for which, model in (("model", engine.embedder), ("readings", engine.readings.model)):
                for name in ("embed", "embed_in"):
                    if model is not None and hasattr(model, name):
                        inner = getattr(model, name)

                        def counted(texts, *rest, inner=inner, which=which):  # type: ignore[no-untyped-def]
                            read[which] += len(texts)
                            return inner(texts, *rest)

                        setattr(model, name, counted)
            start = time.perf_counter()
            report = engine.ingest([folder], Access(org))
            seconds = time.perf_counter() - start
    finally:
        Ingestor._stored_vectors = original  # type: ignore[method-assign]
    print(f"{'with' if reuse else 'without'} the reuse: {seconds:.1f} s, {read['model']} texts read by the model,"
          f" {read['readings']} by the readings' model, {report.counts()}, read again {len(report.reread)}")
    return data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("store", type=Path)
    ap.add_argument("--org", default="default")
    ap.add_argument("--embedder", default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        without = run(args.folder, args.store, work, args.org, args.embedder, reuse=False)
        with_ = run(args.folder, args.store, work, args.org, args.embedder, reuse=True)
        a, b = _vectors(without), _vectors(with_)
        same_units = a.keys() == b.keys()
        worst = max((float(np.abs(a[k] - b[k]).max()) for k in a.keys() & b.keys()), default=0.0)
        print(f"same units: {same_units} ({len(a)} and {len(b)} vectors); largest difference of a vector: {worst:.2e}")


if __name__ == "__main__":
    sys.exit(main())

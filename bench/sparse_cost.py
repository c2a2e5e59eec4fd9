"""What the learned-sparse leg costs at ingest, beside the dense leg, on the same units.

    python bench/sparse_cost.py ../shared/data/scifact --units 1000

The first ``--units`` documents of the set are chunked as Electa ingests them; their parent units
(what the learned-sparse leg indexes) are read by SPLADE-tiny (numpy, ``electa.embedders.splade``)
and by the dense leg's MiniLM (int8 ONNX), one after the other in this process, best of
``--repeat`` runs each; torch's own SPLADE forward pass is timed beside them when torch is
installed (the choice the README explains). Printed per 1,000 units: seconds, units per second,
stored bytes (sparse: term ids and weights, 8 bytes a term; dense: 384 float32 per vector), and
the median number of terms per unit; then a question's encoding and search time over those units.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from electa.embedders.registry import create_embedder
from electa.embedders.splade import SpladeEncoder
from electa.eval.beir import load_beir
from electa.ingest.chunker import chunk_document, embed_text
from electa.stores.protocol import AllowedSet
from electa.stores.sparse_index import SparseIndex, pack
from electa.types import ChunkKind


def best(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dataset", type=Path)
    ap.add_argument("--split", default="train")
    ap.add_argument("--units", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--questions", type=int, default=200, help="questions timed at search")
    args = ap.parse_args()
    beir = load_beir(args.dataset, args.split)
    parents = []
    for doc in beir.corpus:
        parents += [c for c in chunk_document(doc) if c.kind is ChunkKind.PARENT]
        if len(parents) >= args.units:
            break
    texts = [embed_text(c) for c in parents[: args.units]]
    splade, minilm = SpladeEncoder(), create_embedder("minilm")
    vectors = splade.encode(texts)
    t_sparse = best(lambda: splade.encode(texts), args.repeat)
    t_dense = best(lambda: minilm.embed(texts), args.repeat)
    terms = np.array([t.size for t, _ in vectors])
    per = 1000 / len(texts)
    print(f"{len(texts)} parent units of {beir.name}; per 1,000 units:")
    print("| leg | seconds | units/s | stored bytes | terms per unit (median) |\n|---|---|---|---|---|")
    print(f"| learned sparse (SPLADE-tiny, numpy) | {t_sparse * per:.1f} | {len(texts) / t_sparse:.1f} |"
          f" {int(terms.sum() * 8 * per):,} | {int(np.median(terms))} |")
    print(f"| dense (MiniLM int8 ONNX) | {t_dense * per:.1f} | {len(texts) / t_dense:.1f} | {384 * 4 * 1000:,} | - |")
    # A question at search time: encoded, then scored against these units' image.
    rows = [(i + 1, i + 1, *pack(t, w)) for i, (t, w) in enumerate(vectors)]
    index = SparseIndex(lambda seq: [r for r in rows if r[0] > seq], splade.vocab)
    index.sync()
    allowed = AllowedSet(np.arange(1, len(rows) + 1), 0)
    encode_ms, search_ms = [], []
    for question in list(beir.queries.values())[: args.questions]:
        start = time.perf_counter()
        terms, weights = splade.encode([question])[0]
        middle = time.perf_counter()
        index.search(terms, weights, 100, allowed)
        encode_ms.append((middle - start) * 1000)
        search_ms.append((time.perf_counter() - middle) * 1000)
    print(f"\n{len(encode_ms)} questions: encode p50 {np.median(encode_ms):.2f} ms, search p50 {np.median(search_ms):.2f} ms"
          f" (p95 {np.percentile(search_ms, 95):.2f}) over {len(rows)} units; the image holds {index.nbytes / 2**20:.1f} MB")
    try:
        import torch
        from transformers import AutoModelForMaskedLM, AutoTokenizer
    except ImportError:
        return
    torch.set_num_threads(2)
    tok = AutoTokenizer.from_pretrained(str(splade.folder))
    model = AutoModelForMaskedLM.from_pretrained(str(splade.folder)).eval()

    def torch_forward() -> None:
        with torch.no_grad():
            for i in range(0, len(texts), 16):
                batch = tok(texts[i: i + 16], return_tensors="pt", padding=True, truncation=True, max_length=256)
                logits = model(**batch).logits
                (torch.log1p(torch.relu(logits)) * batch["attention_mask"].unsqueeze(-1)).amax(1)

    t_torch = best(torch_forward, args.repeat)
    print(f"| learned sparse (SPLADE-tiny, torch 2 threads) | {t_torch * per:.1f} | {len(texts) / t_torch:.1f} | | |")


if __name__ == "__main__":
    main()

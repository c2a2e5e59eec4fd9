"""Ingest speed and what each unit kind buys (issue 12 item 7), side by side in one run.

    python bench/ingest_speed.py ../shared/data/scifact --split train

Two parts, the packaged MiniLM (int8 ONNX) on whatever cores the machine has:

1. **Speed**: the first ``--speed-docs`` documents of the corpus ingested into a fresh store,
   ``--passes`` times per configuration, configurations alternating (and which goes first
   alternating too), documents per second as the median of the passes:
   - *before (aeddaf2)*: the pipeline of commit aeddaf2: every unit read by the model (parent,
     child windows, whole document, title), 64 texts per call in document order, 32 per batch,
     one session on every core, injection scan a character at a time;
   - *every unit read, sorted*: today's pipeline with the ``encoded`` recipe;
   - *now (pooled)*: today's default: parents with children and whole-document units pooled
     from their parts (``electa.ingest.unit_vectors``).
2. **Quality**: the whole corpus stored once per configuration and ``electa eval``'s rows for
   it (fused, scored, each leg): every unit read, pooled, and pooled without each unit kind in
   turn. The model reads each distinct text once for all of them (a memo keyed by text; the
   vectors are the model's own), so this part's time is not a speed figure.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from electa import Engine, Order, Settings
from electa.embedders.minilm import MiniLmOnnxEmbedder
from electa.eval.beir import load_beir
from electa.eval.runner import evaluate
from electa.ingest import injection
from electa.ingest.chunker import embed_text
from electa.ingest.page import Loaded
from electa.ingest.pipeline import Ingestor
from electa.types import Access, Chunk, ChunkKind, Document

sys.path.insert(0, str(Path(__file__).parent))


class Memo:
    """An embedder that reads each distinct text once (the quality runs share it)."""

    def __init__(self, inner: MiniLmOnnxEmbedder) -> None:
        self.inner, self.model_id, self.dim = inner, inner.model_id, inner.dim
        self.known: dict[str, np.ndarray] = {}
        self.asked = 0
        self.pieces = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.asked += len(texts)
        self.pieces += sum(len(e.ids) for e in self.inner._tokenizer.encode_batch(list(texts)))
        missing = list(dict.fromkeys(t for t in texts if t not in self.known))
        if missing:
            self.known.update(zip(missing, self.inner.embed(missing), strict=True))
        return np.stack([self.known[t] for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


def legacy_embed(self: Ingestor, documents: list[list[Chunk]], progress: bool) -> list[list[np.ndarray | None]]:
    """Ingestor._embed as of aeddaf2: every non-curated unit read, 64 texts per call, in order."""
    texts = [embed_text(c) for chunks in documents for c in chunks if c.kind is not ChunkKind.CURATED]
    vecs: list[np.ndarray] = []
    for i in range(0, len(texts), 64):
        vecs.extend(self.embedder.embed(texts[i:i + 64]))  # type: ignore[union-attr]
    it = iter(vecs)
    return [[None if c.kind is ChunkKind.CURATED else next(it) for c in chunks] for chunks in documents]


class Legacy:
    """Install and remove the aeddaf2 ingest path (embedding and injection scan)."""

    def __enter__(self) -> None:
        import legacy_injection

        self.saved = (Ingestor._embed, injection._view, injection._invisible_findings)
        Ingestor._embed = legacy_embed  # type: ignore[method-assign,assignment]
        injection._view = legacy_injection._view
        injection._invisible_findings = legacy_injection._invisible_findings

    def __exit__(self, *exc: object) -> None:
        Ingestor._embed, injection._view, injection._invisible_findings = self.saved  # type: ignore[method-assign]


def ingest_seconds(docs: list[Document], settings: Settings, embedder: Any) -> float:
    with tempfile.TemporaryDirectory(prefix="electa-bench-") as tmp:
        engine = Engine.open(Path(tmp), settings, embedder)
        start = time.perf_counter()
        engine.ingest_loaded("corpus", Loaded(documents=docs), Access("bench"), kind="beir")
        seconds = time.perf_counter() - start
        engine.close()
    return seconds


def speed(docs: list[Document], passes: int) -> None:
    legacy_model = MiniLmOnnxEmbedder(batch_size=32)
    legacy_model.BULK = 10**9  # one session on every core, as before
    model = MiniLmOnnxEmbedder()
    configs: dict[str, tuple[Settings, Any, bool]] = {
        "before (aeddaf2)": (Settings(unit_vectors="encoded"), legacy_model, True),
        "every unit read, sorted": (Settings(unit_vectors="encoded"), model, False),
        "now (pooled)": (Settings(), model, False),
    }
    for _, emb, _ in configs.values():
        emb.embed([embed_text(c) for c in [Chunk(ChunkKind.PARENT, 0, "warm", "up " * 100)] * 70])
    seconds: dict[str, list[float]] = {name: [] for name in configs}
    for n in range(passes):
        order = list(configs.items()) if n % 2 == 0 else list(reversed(configs.items()))
        for name, (settings, emb, legacy) in order:
            if legacy:
                with Legacy():
                    seconds[name].append(ingest_seconds(docs, settings, emb))
            else:
                seconds[name].append(ingest_seconds(docs, settings, emb))
            print(f"  pass {n + 1}: {name}: {len(docs) / seconds[name][-1]:.2f} docs/s", flush=True)
    print(f"\nSpeed: {len(docs)} documents, {passes} passes, median docs/s\n")
    from speed_table import print_speed_table

    print_speed_table(seconds, len(docs), "before (aeddaf2)", "pipeline")


def without(kind: ChunkKind) -> Any:
    original = Ingestor._chunks

    def chunks(self: Ingestor, doc: Document) -> list[Chunk]:
        return [c for c in original(self, doc) if c.kind is not kind]

    return chunks


def quality(dataset: Path, split: str, only: str = "") -> None:
    beir = load_beir(dataset, split)
    memo = Memo(MiniLmOnnxEmbedder())
    configs: dict[str, tuple[Settings, ChunkKind | None]] = {
        "every unit read (before)": (Settings(unit_vectors="encoded"), None),
        "pooled (now)": (Settings(), None),
        "pooled, no whole-document units": (Settings(), ChunkKind.DOC),
        "pooled, no title units": (Settings(), ChunkKind.TITLE),
        "no child windows (parents read)": (Settings(child_chars=10**6), None),
    }
    rows = []
    original = Ingestor._chunks
    for name, (settings, dropped) in configs.items():
        if only and not any(part.strip() and part.strip() in name for part in only.split(",")):
            continue
        memo.asked = memo.pieces = 0
        if dropped is not None:
            Ingestor._chunks = without(dropped)  # type: ignore[method-assign]
        try:
            with tempfile.TemporaryDirectory(prefix="electa-bench-") as tmp:
                engine = Engine.open(Path(tmp), settings.embedded(), memo)  # type: ignore[arg-type]
                if dropped is ChunkKind.TITLE:  # else the eval's upgrade of older stores adds them back
                    engine.store.documents_missing_title_units = lambda limit: []  # type: ignore[method-assign]
                report = evaluate(engine, beir, split, orders=(Order.FUSED,))
                units = engine.store.count_vectors(memo.model_id)
                engine.close()
        finally:
            Ingestor._chunks = original  # type: ignore[method-assign]
        m = report.metrics
        rows.append((name, m["fused"]["ndcg@10"], m["scored"]["ndcg@10"],
                     m.get("dense", {}).get("ndcg@10", 0.0), m.get("fulltext", {}).get("ndcg@10", 0.0),
                     m["scored"]["recall@100"], units / len(beir.corpus), memo.asked / len(beir.corpus),
                     memo.pieces / len(beir.corpus)))
        print(f"  {name}: done", flush=True)
    print(f"\nQuality: {beir.name} ({split}), {len(beir.queries)} queries, {len(beir.corpus):,} documents\n")
    print("| units | fused nDCG@10 | scored nDCG@10 | dense leg nDCG@10 | full-text leg nDCG@10 | scored R@100"
          " | vectors/doc | texts read/doc | word pieces read/doc |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | " + " | ".join(f"{v:.4f}" for v in r[1:6]) + f" | {r[6]:.2f} | {r[7]:.2f} | {r[8]:.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--split", default="train")
    parser.add_argument("--speed-docs", type=int, default=600, help="0 skips the speed part")
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--no-quality", action="store_true")
    parser.add_argument("--only", default="", help="quality rows whose name contains one of these (comma-separated)")
    args = parser.parse_args()
    if args.speed_docs:
        speed(load_beir(args.dataset, args.split).corpus[: args.speed_docs], args.passes)
    if not args.no_quality:
        quality(args.dataset, args.split, args.only)


if __name__ == "__main__":
    main()

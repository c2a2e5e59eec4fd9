"""Which of a document's units carry each English model's dense score (issue 10: why mpnet's
dense leg falls on SciFact's units when it ties MiniLM on whole abstracts):

    python bench/unit_kinds.py ../shared/data/scifact --split train

Every document is cut as the engine cuts it (:func:`electa.ingest.chunker.chunk_document` at the
pipeline's defaults), each unit read as the dense leg reads it (:func:`embed_text`), by MiniLM and
by mpnet (int8 ONNX as served; ``--models`` names the folder ``electa models install mpnet``
filled, default the data directory's). A document's score is its best unit's cosine, as the
dense leg's hits become documents; nDCG@10 is printed for each set of unit kinds:

- ``whole``: one text per document (title and all its text), read up to the model's limit;
- ``parent``: the parent units alone (an abstract under 2,000 characters is one parent, which is
  ``whole`` with the same limit);
- ``parent+child``: with the 500-character windows over each parent;
- ``+title`` / ``+doc``: the engine's whole set (the title unit, the doc unit of a
  many-parent document).

It also prints how many word pieces a whole document has against each model's limit (256 for
MiniLM, 384 for mpnet): what a model does not read of a long document, only a window can show.
Models are not run through the chain: this reads each model's own cosines.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from electa.config import Settings
from electa.embedders.minilm import MiniLmOnnxEmbedder
from electa.embedders.mpnet import MpnetOnnxEmbedder, model_folder
from electa.eval.beir import load_beir
from electa.eval.metrics import ndcg_at
from electa.ingest.chunker import chunk_document, embed_text
from electa.types import Document

SETS = {
    "whole": None,
    "parent": {"parent"},
    "parent+child": {"parent", "child"},
    "parent+child+doc": {"parent", "child", "doc"},
    "all (+title)": {"parent", "child", "doc", "title"},
    "parent+title": {"parent", "title"},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data")
    parser.add_argument("--split", default="train")
    parser.add_argument("--models", type=Path, default=None)
    args = parser.parse_args()
    beir = load_beir(args.data, args.split)
    qids = sorted(beir.qrels)
    whole = [f"{d.title}\n{d.text}".strip() for d in beir.corpus]
    units: list[tuple[int, str, str]] = []  # (document row, kind, text)
    for row, d in enumerate(beir.corpus):
        for chunk in chunk_document(Document(d.ext_id, d.title, d.text)):
            units.append((row, chunk.kind.value, embed_text(chunk)))
    whole_unit: dict[int, int] = {}
    for i, (row, kind, text) in enumerate(units):
        if text == whole[row] and (kind == "doc" or row not in whole_unit):
            whole_unit[row] = i
    for row in range(len(whole)):  # (a few texts with surrounding spaces: read whole on their own)
        if row not in whole_unit:
            whole_unit[row] = len(units)
            units.append((row, "whole", whole[row]))
    kinds = defaultdict(int)
    for _, kind, _ in units:
        kinds[kind] += 1
    print(f"{args.data} {args.split}: {len(qids)} questions, {len(whole)} documents, {len(units)} units {dict(kinds)}")
    models = {"MiniLM": MiniLmOnnxEmbedder(),
              "mpnet": MpnetOnnxEmbedder(model_folder(args.models or Settings().models_dir))}
    for name, model in models.items():
        counter = Tokenizer.from_file(str(model.tokenizer_file()))
        counter.no_truncation()
        counter.no_padding()
        pieces = np.array([len(e.ids) for e in counter.encode_batch(whole)])
        start = time.perf_counter()
        uvec = model.embed([t for _, _, t in units])
        took = time.perf_counter() - start
        qvec = np.stack([model.embed_query(beir.queries[q]) for q in qids])
        uscore = uvec @ qvec.T
        # A document's whole text is its one parent's (title and text, the same string), or its
        # doc unit's when it has several parents: embedded once, read for both.
        wscore = uscore[[whole_unit[row] for row in range(len(whole))]]
        print(f"\n{name}: limit {model.MAX_TOKENS} word pieces; whole documents over it:"
              f" {np.mean(pieces > model.MAX_TOKENS):.1%} (median {int(np.median(pieces))} pieces);"
              f" read in {took:.0f} s")
        rows = np.array([r for r, _, _ in units])
        kind_of = np.array([k for _, k, _ in units])
        for label, keep in SETS.items():
            if keep is None:
                doc = wscore
            else:
                mask = np.isin(kind_of, sorted(keep))
                doc = np.full((len(whole), len(qids)), -np.inf, dtype=np.float32)
                np.maximum.at(doc, rows[mask], uscore[mask])
            ndcg = []
            for j, q in enumerate(qids):
                top = np.argsort(-doc[:, j], kind="stable")[:10]
                ndcg.append(ndcg_at([beir.corpus[i].ext_id for i in top], beir.qrels[q], 10))
            print(f"  {label:18s} nDCG@10 {np.mean(ndcg):.4f}")
        best = defaultdict(int)
        mask = kind_of != "whole"
        for j, q in enumerate(qids):
            rel = [i for i, d in enumerate(beir.corpus) if d.ext_id in beir.qrels[q] and beir.qrels[q][d.ext_id] > 0]
            for i in rel:
                sel = (rows == i) & mask
                best[kind_of[sel][int(np.argmax(uscore[sel, j]))]] += 1
        print(f"  the unit that carries a relevant document's score: {dict(best)}")


if __name__ == "__main__":
    main()

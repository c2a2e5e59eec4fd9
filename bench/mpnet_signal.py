"""What all-mpnet-base-v2 adds over MiniLM, each model's cosine alone (issue 10: abstention):

    python bench/mpnet_signal.py ../shared/data/stackfaq --split dev
    python bench/mpnet_signal.py ../shared/data/stackfaq --split dev:tune --map

Both models read every document (title and text, as a unit is read) and every question of the
split: MiniLM as Electa ships it (int8 ONNX), mpnet as ``electa models install mpnet`` makes it
(int8 ONNX, ``--data`` names the data directory it was installed in). Per model:

- nDCG@10 of its cosine order alone;
- how well its best cosine tells an answerable question from its unanswerable twin (the same
  question, its relevant documents removed), as the engine's cut is read: a floor on the cosine,
  chosen on four fifths of the questions (the highest that keeps ``--keep`` of them: a relevant
  document among the first four passing), then read on the fifth (5 folds, by thread where the
  split has threads); "kept" = a relevant document among the first 4 at or over the floor,
  "nothing passes" = the twin's best cosine under it.

This is each model's own signal, not the engine's cut (which fuses full text and stacks
calibrated legs: ``electa eval`` with ``ELECTA_EMBEDDER=mpnet`` measures that).

``--map`` prints the affine map that puts mpnet's cosines on MiniLM's scale (``score_map`` in
:mod:`electa.embedders.mpnet`), fitted as :mod:`bench.e5_score_map` fits e5's: the two models'
means and spreads matched over the pairs in either model's top 10.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

from electa.config import Settings
from electa.embedders.minilm import MiniLmOnnxEmbedder
from electa.embedders.mpnet import MpnetOnnxEmbedder, model_folder
from electa.eval.beir import load_beir
from electa.eval.folds import deal_folds, groups_for
from electa.eval.metrics import ndcg_at

SHOWN = 4  # passages an answer reads (electa.eval.abstention: "the first 4 shown candidates that pass")


def floor_for(kept_at: np.ndarray, keep: float) -> float:
    """The highest floor that keeps ``keep`` of the questions, each kept at or under its value."""
    ranked = np.sort(kept_at)[::-1]
    return float(ranked[max(0, math.ceil(keep * len(ranked)) - 1)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data")
    parser.add_argument("--split", default="dev")
    parser.add_argument("--keep", type=float, default=0.9)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--models", type=Path, default=None, help="models folder (default: the data directory's)")
    parser.add_argument("--map", action="store_true")
    args = parser.parse_args()
    beir = load_beir(args.data, args.split)
    texts = [f"{d.title}\n{d.text}".strip() for d in beir.corpus]
    ids = [d.ext_id for d in beir.corpus]
    qids = sorted(beir.qrels)
    models = {"MiniLM": MiniLmOnnxEmbedder(),
              "mpnet": MpnetOnnxEmbedder(model_folder(args.models or Settings().models_dir))}
    scores: dict[str, np.ndarray] = {}
    for name, model in models.items():
        start = time.perf_counter()
        docs = model.embed(texts)
        took = time.perf_counter() - start
        scores[name] = docs @ np.stack([model.embed_query(beir.queries[q]) for q in qids]).T
        print(f"{name}: {len(texts)} documents in {took:.1f} s ({len(texts) / took:.1f}/s)")
    groups = groups_for(args.split, beir.qrels)
    folds = deal_folds(qids, args.folds, seed=0, groups=groups)
    row = {q: j for j, q in enumerate(qids)}
    print(f"{args.data} {args.split}: {len(qids)} questions, {len(ids)} documents;"
          f" floors cross-fitted over {args.folds} folds{' by thread' if groups else ''}, keep {args.keep:.0%}")
    for name, s in scores.items():
        ndcg, kept_at, twin_best = [], {}, {}
        for q in qids:
            col = s[:, row[q]]
            order = np.argsort(-col)
            ndcg.append(ndcg_at([ids[i] for i in order[:10]], beir.qrels[q]))
            relevant = {i for i in order[:200] if beir.qrels[q].get(ids[i], 0) > 0}
            # kept at floor f when a relevant one is among the first SHOWN at or over f: the best
            # relevant cosine within the first SHOWN (documents over a floor are a prefix)
            kept_at[q] = max((col[i] for i in order[:SHOWN] if i in relevant), default=-1.0)
            twin_best[q] = next(col[i] for i in order if i not in relevant)
        kept = passes = 0
        for held in folds:
            rest = [q for q in qids if q not in set(held)]
            floor = floor_for(np.array([kept_at[q] for q in rest]), args.keep)
            kept += sum(kept_at[q] >= floor for q in held)
            passes += sum(twin_best[q] < floor for q in held)
        print(f"  {name:>6}: nDCG@10 {np.mean(ndcg):.4f}; nothing passes {passes / len(qids):.1%} at {kept / len(qids):.1%} kept")
    if args.map:
        m, e = scores["MiniLM"], scores["mpnet"]
        xs, ys = [], []
        for j in range(len(qids)):
            top = set(np.argsort(-m[:, j])[:10]) | set(np.argsort(-e[:, j])[:10])
            xs.extend(e[i, j] for i in top)
            ys.extend(m[i, j] for i in top)
        x, y = np.array(xs), np.array(ys)
        scale = float(y.std() / x.std())
        print(f"SCORE_MAP = ({scale:.4f}, {float(y.mean() - scale * x.mean()):.4f})  over {len(x)} pairs,"
              f" R^2 {float(np.corrcoef(x, y)[0, 1] ** 2):.3f}")


if __name__ == "__main__":
    main()

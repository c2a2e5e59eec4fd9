"""The affine map that puts multilingual-e5-small's cosines on MiniLM's scale (issue 14):

    python bench/e5_score_map.py ../shared/data/stackfaq --split dev:tune

The embedder chain scores English units with MiniLM and every other unit with e5, in one list.
e5's cosines crowd near the top of their range (an unrelated pair scores about 0.75, a relevant
one 0.9; MiniLM's about 0.1 and 0.6), so a German page's raw e5 cosine would outrank every
English page for an English question. Both models read the same English pairs here: every
question against every document (title and text, as a unit is read), and the least-squares line
``minilm = scale * e5 + shift`` over the pairs in either model's top ``--top`` for the question
(the region where a cut or a merge is decided; all pairs would fit the mass of unrelated ones).
The line matches the two models' means and spreads over those pairs (a least-squares line of
MiniLM on e5 would shrink e5's spread by the correlation, R² 0.43 here, and squeeze its top
scores under MiniLM's); the least-squares line and R² are printed beside it. Prints how each
model's top-1 and 10th scores sit after the map; the
figures go into :mod:`electa.embedders.e5_multilingual` as ``SCORE_MAP``. English only, by
necessity (the one language MiniLM reads); the map is assumed to hold in e5's other languages.
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np

from electa.embedders.e5_multilingual import E5MultilingualEmbedder
from electa.embedders.minilm import MiniLmOnnxEmbedder
from electa.eval.beir import load_beir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data")
    parser.add_argument("--split", default="dev:tune")
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args()
    beir = load_beir(args.data, args.split)
    texts = [f"{d.title}\n{d.text}".strip() for d in beir.corpus]
    questions = [beir.queries[q] for q in sorted(beir.qrels)]
    minilm, e5 = MiniLmOnnxEmbedder(), E5MultilingualEmbedder()
    m = minilm.embed(texts) @ np.stack([minilm.embed_query(q) for q in questions]).T
    e = e5.embed(texts) @ np.stack([e5.embed_query(q) for q in questions]).T
    xs, ys = [], []
    for j in range(len(questions)):
        top = set(np.argsort(-m[:, j])[:args.top]) | set(np.argsort(-e[:, j])[:args.top])
        xs.extend(e[i, j] for i in top)
        ys.extend(m[i, j] for i in top)
    x, y = np.array(xs), np.array(ys)
    ls_scale, ls_shift = np.polyfit(x, y, 1)
    r2 = float(np.corrcoef(x, y)[0, 1] ** 2)
    scale = float(y.std() / x.std())
    shift = float(y.mean() - scale * x.mean())
    print(f"{args.data} {args.split}: {len(questions)} questions x {len(texts)} documents, {len(x)} pairs"
          f" (either model's top {args.top})")
    print(f"SCORE_MAP = ({scale:.4f}, {shift:.4f})   (least squares: {ls_scale:.4f}, {ls_shift:.4f}; R^2 {r2:.3f})")
    for name, scores in (("MiniLM", m), ("e5 mapped", scale * e + shift), ("e5 lsq", ls_scale * e + ls_shift),
                         ("e5 raw", e)):
        ranked = -np.sort(-scores, axis=0)
        print(f"{name:>10}: median top-1 {statistics.median(ranked[0]):.3f}, median 10th {statistics.median(ranked[9]):.3f},"
              f" median of all {float(np.median(scores)):.3f}")


if __name__ == "__main__":
    main()

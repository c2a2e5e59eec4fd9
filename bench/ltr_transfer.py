"""Does a ranker learned on some sets help on a set it never saw? Leave one set out.

    python bench/ltr_transfer.py ../shared/data/scifact:train ../shared/data/stackfaq:dev \\
        ../shared/data/cranfield:test ../shared/data/xquad-r/de:test

Each set's labelled questions are searched as served (judges off; depth 100 per leg) and the
first ``--depth`` hits become feature rows (``electa.judges.ltr_features``), exactly as
``electa train-ltr`` collects them. For each set, a ranker (``electa.eval.ltr.PARAMS``, fixed)
is trained on every question of the *other* sets and ranks this one; printed beside it: the
served order and the same set's own 5-fold cross-validated ranker (``electa train-ltr``'s
figure). nDCG@10, each document once at its best position.

This is the question behind shipping a default ranker: one that helps every set it has not
seen could serve agents with no labels of their own. ``--scale-free`` trains on columns that do
not carry a corpus's own scale (BM25 magnitudes): reciprocal ranks, coverage, length, kind, each
leg's gap relative to its best for the question, how many legs voted, and the dense leg's
cosines (one model's scale everywhere), to see whether those transfer better.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from electa.eval.ltr import beir_rows, cross_validate, fit, served_order, unique
from electa.eval.metrics import ndcg_at
from electa.judges.ltr_features import FEATURES

LEGS = ("fulltext", "dense", "qa", "sparse")
SCALE_FREE = ["fused_rr", "served_rr", "query_stems", "coverage", "title_coverage", "log_chars",
              *(f for f in FEATURES if f.startswith("kind_")), *(f"{leg}_rr" for leg in LEGS),
              "fulltext_rel", "dense_rel", "votes", "dense_raw", "dense_gap", "absolute"]


def scale_free(x: np.ndarray) -> np.ndarray:
    """The :data:`SCALE_FREE` columns of feature rows (see the module)."""
    col = {n: x[:, i] for i, n in enumerate(FEATURES)}
    for leg in ("fulltext", "dense"):
        best = col[f"{leg}_raw"] + col[f"{leg}_gap"]
        voted = (col[f"{leg}_rr"] > 0) & (best > 0)
        col[f"{leg}_rel"] = np.where(voted, col[f"{leg}_gap"] / np.maximum(best, 1e-9), 1.0)
    col["votes"] = sum((col[f"{leg}_rr"] > 0).astype(float) for leg in LEGS)
    return np.column_stack([col[n] for n in SCALE_FREE])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sets", nargs="+", help="DIR:SPLIT, two or more")
    ap.add_argument("--depth", type=int, default=50, help="hits per question the ranker reads (ELECTA_LTR_DEPTH)")
    ap.add_argument("--scale-free", action="store_true", help="train on scale-free columns only (see above)")
    args = ap.parse_args()
    names = SCALE_FREE if args.scale_free else FEATURES
    data = {}
    for spec in args.sets:
        directory, split = spec.rsplit(":", 1)
        beir, rows = beir_rows(Path(directory), split, depth=args.depth)
        name = f"{beir.name} ({split})"
        # Question ids are per set: prefix them so sets never share one.
        data[name] = ({f"{name}/{q}": (scale_free(x) if args.scale_free else x, k, p) for q, (x, k, p) in rows.items()},
                      {f"{name}/{q}": g for q, g in beir.qrels.items()})
    print("| held-out set | queries | served | own 5-fold CV | trained on the other sets |\n|---|---|---|---|---|")
    for name, (rows, qrels) in data.items():
        others = {q: r for n, (rs, _) in data.items() if n != name for q, r in rs.items()}
        other_qrels = {q: g for n, (_, gs) in data.items() if n != name for q, g in gs.items()}
        trees, _ = fit(others, other_qrels, sorted(others), names)
        served, learned = [], []
        for q, (x, keys, passes) in rows.items():
            order = served_order(np.argsort(-trees.predict(x), kind="stable").tolist(), passes)
            served.append(ndcg_at(unique(keys), qrels.get(q, {})))
            learned.append(ndcg_at(unique([keys[i] for i in order]), qrels.get(q, {})))
        _, own, _ = cross_validate(rows, qrels, 5, names)
        print(f"| {name} | {len(rows)} | {np.mean(served):.4f} | {own:.4f} | {np.mean(learned):.4f} |")


if __name__ == "__main__":
    main()

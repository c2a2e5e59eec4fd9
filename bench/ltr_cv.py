"""Would learning to rank (SPEC D2) pay for itself? Cross-validated on the labelled sets we have.

    python bench/ltr_cv.py ../shared/data/scifact --split train
    python bench/ltr_cv.py ../shared/data/stackfaq --split dev:tune

For every query, Electa's served candidates (depth 100 per leg, the eval's cached store) become
rows of the features a served search already knows (``electa.judges.ltr_features``: fused value
and rank, served rank, absolute score, each leg's reciprocal rank, raw score and gap to the
query's best for that leg, coverage of the question's stems in the passage and its title,
length, unit kind, the question's length).
A LightGBM lambdarank model (fixed, untuned hyper-parameters) is trained on four folds of the
queries and ranks the fifth; every query is ranked once by a model that never saw it. Printed:
nDCG@10 of fusion, the served order and the learned order over those held-out folds, per-fold
spread, and the features' mean gain importance.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from electa import Caller, Engine, Order, Settings
from electa.embedders.registry import create_embedder
from electa.eval.beir import deal, load_beir
from electa.eval.metrics import ndcg_at
from electa.eval.runner import EVAL_ORG, default_data_dir, ingest_corpus
from electa.judges.ltr_features import FEATURES, features


def main() -> None:
    import lightgbm as lgb

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dataset", type=Path)
    ap.add_argument("--split", required=True)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--depth", type=int, default=100)
    args = ap.parse_args()
    beir = load_beir(args.dataset, args.split)
    settings = Settings().embedded()
    embedder = create_embedder(settings.embedder)
    engine = Engine.open(default_data_dir(beir, embedder.model_id, settings.unit_vectors), settings, embedder)
    caller = Caller(EVAL_ORG)
    data: dict[str, tuple[np.ndarray, list[str], list[str]]] = {}
    try:
        ingest_corpus(engine, beir, progress=False)
        engine.fulltext.warm()
        legs = [n for n, leg in engine.legs.items() if leg.available()]
        for qid in sorted(beir.queries):
            text = beir.queries[qid]
            results, _ = engine.retrieve(text, caller, legs=legs, depths=dict.fromkeys(legs, args.depth))
            served = engine.rank(text, results, order=Order.SCORED)[: args.depth]
            fused = engine.rank(text, results, order=Order.FUSED, top=10)
            if served:
                data[qid] = (features(text, served), [h.ext_id for h in served], [h.ext_id for h in fused])
    finally:
        engine.close()
    dealt = deal(data)
    folds = [dealt[i:: args.folds] for i in range(args.folds)]
    scores: dict[str, list[float]] = {"fused (RRF)": [], "served (scored)": [], "learned (LTR)": []}
    per_fold, gains = [], np.zeros(len(FEATURES))
    for k, held in enumerate(folds):
        train = [q for i, f in enumerate(folds) if i != k for q in f]
        x = np.vstack([data[q][0] for q in train])
        y = np.concatenate([[min(4, max(0, beir.qrels[q].get(d, 0))) for d in data[q][1]] for q in train])
        params = {"objective": "lambdarank", "learning_rate": 0.05, "num_leaves": 15, "min_data_in_leaf": 20,
                  "bagging_fraction": 0.8, "bagging_freq": 1, "feature_fraction": 0.8, "seed": 7, "verbose": -1,
                  "num_threads": 2}
        model = lgb.train(params, lgb.Dataset(x, y, group=[len(data[q][1]) for q in train]), num_boost_round=200)
        gains += model.feature_importance(importance_type="gain")
        fold_ndcg = []
        for q in held:
            x_q, served_ids, fused_ids = data[q]
            order = np.argsort(-np.asarray(model.predict(x_q)), kind="stable")
            learned = ndcg_at([served_ids[i] for i in order], beir.qrels[q])
            scores["fused (RRF)"].append(ndcg_at(fused_ids, beir.qrels[q]))
            scores["served (scored)"].append(ndcg_at(served_ids, beir.qrels[q]))
            scores["learned (LTR)"].append(learned)
            fold_ndcg.append(learned - scores["served (scored)"][-1])
        per_fold.append(float(np.mean(fold_ndcg)))
    print(f"{beir.name} ({args.split}): {len(data)} queries, {args.folds}-fold cross-validation by query,"
          f" depth {args.depth}")
    print("| order | nDCG@10 (held-out folds) |\n|---|---|")
    for name, values in scores.items():
        print(f"| {name} | {np.mean(values):.4f} |")
    print("learned minus served, per fold: " + ", ".join(f"{d:+.4f}" for d in per_fold))
    top = sorted(zip(FEATURES, gains / args.folds, strict=True), key=lambda r: -r[1])[:8]
    print("mean gain importance: " + ", ".join(f"{n} {g:.0f}" for n, g in top))


if __name__ == "__main__":
    main()

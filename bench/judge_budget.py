"""What the rerank judge gives and costs at each time budget, side by side in one run (issue 10).

    python bench/judge_budget.py ../shared/data --rerank onnx:models/cross-encoder-minilm

On each set's held-out queries (the ones ``bench/train_cross_encoder.py`` never trained on:
SciFact one in five of train, StackFAQ ``dev:test``, Cranfield ``test:test``), every query runs
through ``Engine.search`` at depth 100 per leg, top 10, once per variant: no judge, then the
reranker (top 100, title + first 2,000 characters) with budgets of 50, 150, 400 and 3,000 ms
(the reference's). Variants alternate which goes first, query by query, so they share the
machine's state; after each search the bench waits until the judge's call has ended, so a call
cut at its deadline never runs beside the next measurement. Printed per set and variant:
nDCG@10, whole-search p50/p95 ms, the judge's p50 ms, how many hits it scored (median) and the
share of searches its budget cut short.

``--ltr FILE`` adds the learned ranker behind the reranker in every judged variant (a file
trained behind the same reranker, ``ELECTA_RERANK=… electa train-ltr … --out FILE``): the whole
search with every judge on. Its nDCG is only held out if the file was trained without these
queries.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from train_cross_encoder import SETS, held_out

from electa import Caller, Engine, Settings
from electa.embedders.registry import create_embedder
from electa.eval.beir import load_beir
from electa.eval.metrics import ndcg_at
from electa.eval.runner import EVAL_ORG, default_data_dir, ingest_corpus

BUDGETS = (50.0, 150.0, 400.0, 3000.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data", type=Path)
    ap.add_argument("--rerank", required=True)
    ap.add_argument("--sets", default="scifact,stackfaq,cranfield")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--blend", type=float, default=1.0, help="rerank_blend (1: the reranker's order alone)")
    ap.add_argument("--budgets", default=",".join(f"{b:.0f}" for b in BUDGETS),
                    help="the rerank budgets to measure, in ms, comma-separated")
    ap.add_argument("--ltr", default="", help="a ranker file (`electa train-ltr --out`, trained behind this reranker):"
                                              " the judged variants run it too, so every judge is on")
    args = ap.parse_args()
    settings = Settings(rerank=args.rerank, rerank_blend=args.blend, ltr=args.ltr).embedded()
    embedder = create_embedder(settings.embedder)
    depths = {"fulltext": 100, "dense": 100, "qa": 100}
    print(f"reranker {args.rerank}, blend {args.blend}, top {settings.rerank_depth}"
          + (f"; then the ranker {args.ltr} (whole search: every judge)" if args.ltr else ""))
    print("| set | variant | nDCG@10 | search p50 ms | search p95 ms | judge p50 ms | scored (median) | cut short |")
    print("|---|---|---|---|---|---|---|---|")
    for name, split, rule in SETS:
        if name not in args.sets.split(","):
            continue
        beir = load_beir(args.data / name, split)
        engine = Engine.open(default_data_dir(beir, embedder.model_id, settings), settings, embedder)
        try:
            ingest_corpus(engine, beir, progress=False)
            engine.fulltext.warm()
            qids = sorted(held_out(beir, rule))[: args.limit]
            budgets = [float(b) for b in args.budgets.split(",")]
            variants = ["no judge", *(f"rerank, {b:.0f} ms" for b in budgets)]
            rows: dict[str, dict[str, list[float]]] = {v: {"ndcg": [], "ms": [], "judge": [], "scored": [], "cut": []}
                                                       for v in variants}
            caller = Caller(EVAL_ORG)
            for q in qids[:5]:  # warm-up, discarded
                engine.search(beir.queries[q], caller, depths=depths)
            for i, qid in enumerate(qids):
                for variant in (variants if i % 2 == 0 else variants[::-1]):
                    if variant == "no judge":
                        result = engine.search(beir.queries[qid], caller, depths=depths, judges=[])
                    else:
                        engine.funnel.budgets_ms["rerank"] = float(variant.split(", ")[1].split()[0])
                        result = engine.search(beir.queries[qid], caller, depths=depths)
                    engine.funnel.wait_idle(60.0)  # a call cut at its deadline must not overlap the next variant
                    row = rows[variant]
                    seen = list(dict.fromkeys(h.ext_id for h in result.hits))
                    row["ndcg"].append(ndcg_at(seen, beir.qrels[qid]))
                    row["ms"].append(result.timings_ms["total"])
                    for stage in result.stages:
                        if stage.judge != "rerank":  # (judges that did not run here report 0 ms, 0 scored)
                            continue
                        row["judge"].append(stage.ms)
                        row["scored"].append(stage.scored)
                        row["cut"].append(float(stage.cut_short))
            for variant, row in rows.items():
                judge = f"{np.percentile(row['judge'], 50):.1f}" if row["judge"] else "-"
                scored = f"{np.median(row['scored']):.0f}" if row["scored"] else "-"
                cut = f"{100 * np.mean(row['cut']):.0f}%" if row["cut"] else "-"
                print(f"| {name} ({len(qids)} held-out) | {variant} | {np.mean(row['ndcg']):.4f} |"
                      f" {np.percentile(row['ms'], 50):.1f} | {np.percentile(row['ms'], 95):.1f} | {judge} | {scored} | {cut} |",
                      flush=True)
        finally:
            engine.close()


if __name__ == "__main__":
    main()

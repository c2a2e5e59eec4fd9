"""Each judge's row on the same held-out queries, query by query, with paired standard errors
(issue 10: "each judge's row beats the row before it").

    python bench/judge_rows.py ../shared/data --rerank onnx:models/cross-encoder-tiny --blend 0.5 \\
        --budget 100 --ltr-alone PLAIN.json --ltr BEHIND.json

On SciFact's held-out fifth of train (the queries ``bench/train_cross_encoder.py`` never trains
on), through ``Engine.search`` at depth 100 a leg, top 10: the served order (no judge), the
reranker alone within ``--budget`` ms, the learned ranker alone (``--ltr-alone``: a file trained
without the reranker), and both (``--ltr``: a file trained behind the reranker). The two files
should be trained without these queries (``bench/trained_copy.py``), so that every row is held
out. Printed: each row's nDCG@10, then for each step the mean difference per query, its paired
standard error and how many queries it helped and hurt. Only nDCG is read here (latency is
``bench/judge_budget.py``'s); a budget-cut reranker scores as many hits as this machine's pace
allows, so its rows move a little between runs.
"""

from __future__ import annotations

import argparse
import json
import os
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


def refuse_trained_on(rerank: str, name: str, qids: list[str]) -> None:
    """Stop unless an ``onnx:`` reranker's ``electa.json`` lists the questions it trained on and
    none of ``qids`` is among them (a model trained by thread holds out another half than these
    rows read; one that does not say cannot be shown held out). Other scorers were not trained here."""
    if not rerank.startswith("onnx:"):
        return
    folder = Path(rerank.removeprefix("onnx:")).expanduser()
    if not folder.is_dir():
        sys.exit(f"{folder} is not a folder: give the reranker's onnx: folder")
    about = folder / "electa.json"
    meta = json.loads(about.read_text(encoding="utf-8")) if about.is_file() else {}
    if not isinstance(meta.get("trained_questions"), dict):
        sys.exit(f"{about} does not list the questions the model trained on (bench/train_cross_encoder.py records"
                 " them): these rows could not be shown held out")
    trained = set(meta["trained_questions"].get(name, ()))
    if trained & set(qids):
        sys.exit(f"{rerank} trained on {len(trained & set(qids))} of these {len(qids)} {name} queries:"
                 " measure a model trained without them")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data", type=Path)
    ap.add_argument("--rerank", required=True)
    ap.add_argument("--blend", type=float, default=0.5)
    ap.add_argument("--budget", type=float, default=100.0, help="the reranker's budget, ms")
    ap.add_argument("--ltr-alone", required=True, help="a ranker file trained without the reranker")
    ap.add_argument("--ltr", required=True, help="a ranker file trained behind the reranker (at this budget)")
    ap.add_argument("--set", default="scifact", choices=[n for n, _, _ in SETS])
    args = ap.parse_args()
    split, rule = next((s, r) for n, s, r in SETS if n == args.set)
    beir = load_beir(args.data / args.set, split)
    qids = sorted(held_out(beir, rule))
    refuse_trained_on(args.rerank, args.set, qids)
    shell = sorted(k for k in os.environ if k.upper().startswith("ELECTA_"))
    if shell:  # (each row is the defaults and what it names, nothing of the shell's)
        sys.exit(f"unset {', '.join(shell)} first: every row reads the default settings but for its judges")
    judged = {"rerank": args.rerank, "rerank_blend": args.blend,
              "judge_budgets_ms": {**Settings().judge_budgets_ms, "rerank": args.budget}}
    rows = {"served (no judge)": {"rerank": "", "ltr": ""},
            f"reranker alone, {args.budget:.0f} ms": {**judged, "ltr": ""},
            "learned ranker alone": {"rerank": "", "ltr": args.ltr_alone},
            "reranker + learned ranker": {**judged, "ltr": args.ltr}}
    depths = {"fulltext": 100, "dense": 100, "qa": 100}
    ndcg: dict[str, np.ndarray] = {}
    for row, overrides in rows.items():
        settings = Settings(**overrides).embedded()  # type: ignore[arg-type]
        embedder = create_embedder(settings.embedder)
        engine = Engine.open(default_data_dir(beir, embedder.model_id, settings), settings, embedder)
        try:
            ingest_corpus(engine, beir, progress=False)
            engine.fulltext.warm()
            for qid in sorted(set(beir.queries) - set(qids))[:5]:  # warm-up (the models' first calls), discarded
                warm = engine.search(beir.queries[qid], Caller(EVAL_ORG), depths=depths)
                # A judge named but unable to run (a mistyped file, a ranker of other lineage) would
                # leave the order as it was and print a plausible row: stop instead.
                broken = [f"{s.judge}: {s.note}" for s in warm.stages
                          if s.judge in ("rerank", "ltr") and s.note.startswith(("unavailable", "error"))]
                if broken:
                    sys.exit(f"{row}: a judge cannot run here ({'; '.join(broken)})")
            engine.funnel.wait_idle(60.0)
            values = []
            for qid in qids:
                result = engine.search(beir.queries[qid], Caller(EVAL_ORG), depths=depths)
                engine.funnel.wait_idle(60.0)
                values.append(ndcg_at(list(dict.fromkeys(h.ext_id for h in result.hits)), beir.qrels[qid]))
        finally:
            engine.close()
        ndcg[row] = np.array(values)
        print(f"{args.set} ({len(qids)} held-out) | {row} | nDCG@10 {ndcg[row].mean():.4f}", flush=True)
    names = list(rows)
    for better, base in ((names[1], names[0]), (names[2], names[0]), (names[3], names[2]), (names[3], names[0])):
        d = ndcg[better] - ndcg[base]
        print(f"{better} - {base}: {d.mean():+.4f} (paired SE {d.std(ddof=1) / np.sqrt(len(d)):.4f};"
              f" {int((d > 0).sum())} queries better, {int((d < 0).sum())} worse)")


if __name__ == "__main__":
    main()

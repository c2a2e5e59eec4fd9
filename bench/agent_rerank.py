"""What an organisation's own reranker (``electa train-rerank``) gives on questions it never saw,
beside the general one it starts from.

    python bench/agent_rerank.py ../shared/data/stackfaq --split dev:test \\
        --general models/cross-encoder-minilm
    python bench/agent_rerank.py ../shared/data/scifact --split train --general none \\
        --bases splade-tiny,minilm --epochs 3

A BEIR set becomes one organisation's help center: its corpus ingested into a fresh store (the
packaged MiniLM, embedded store) as agent ``faq/bot``, each document at its own URL, and each
question of ``--split`` recorded as that agent's feedback (a thumbs up on each of its relevant
documents), so the questions are its golden set. Then ``train-rerank`` runs as a user would run
it (one question in five held out; the rest train), once per ``--bases`` entry: ``general``
starts from the ``torch/`` weights beside ``--general`` (``bench/train_cross_encoder.py``
writes them), ``packaged`` from the packaged all-MiniLM-L6-v2 with a new head, and a name of
``electa.eval.rerank_training.BASES`` (``minilm``, ``splade-tiny``) as ``train-rerank --base``
takes it, at that base's learning rate; ``--general none`` leaves the general row out. Printed: nDCG@10
on the held-out fifth for the served order, the general reranker as it is, and each
organisation-trained one, at blends 1 and 0.5 (``rerank_blend``), with training time.

Use a split the general reranker never trained on (for StackFAQ, ``dev:test``: it trained on
``dev:tune``), or the general row is measured on its own training questions.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from electa import Access, Caller, Engine, Settings
from electa.eval.beir import load_beir
from electa.eval.golden import golden_set
from electa.eval.rerank_training import candidates, is_held_out, rerank_ndcg, train_rerank
from electa.ingest.page import Loaded
from electa.judges.scorers import OnnxCrossEncoder
from electa.types import Document


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data", type=Path)
    ap.add_argument("--split", default="dev:test")
    ap.add_argument("--general", default="models/cross-encoder-minilm", help="a general reranker's folder, or none")
    ap.add_argument("--bases", default="general,packaged")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--depth", type=int, default=30)
    args = ap.parse_args()
    beir = load_beir(args.data, args.split)
    settings = Settings(rerank_blend=0.5).embedded()
    url = "https://help.example/{}".format
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        with Engine.open(store, settings) as engine:
            docs = [Document(d.ext_id, d.title, d.text, url(d.ext_id), sections=d.sections) for d in beir.corpus]
            engine.ingest_loaded("help-center", Loaded(docs), Access("faq", "bot"))
            for qid, text in beir.queries.items():
                for doc, grade in beir.qrels.get(qid, {}).items():
                    if grade > 0:
                        engine.store.add_feedback("faq", "bot", text, url(doc), 1)
            golden = golden_set(engine.store, "faq", "bot")
            held = sorted(q for q, text in golden.queries.items() if is_held_out(text))  # train_rerank's fifth
            cands = candidates(engine, golden, Caller("faq", "bot"), "url", args.depth, own_pairs=True)
        rows: dict[str, dict[str, float]] = {}
        if args.general != "none":
            general = OnnxCrossEncoder(Path(args.general))
            rows["general, as it is"] = rerank_ndcg(lambda q, ps: general.score(q, ps), golden.queries, golden.qrels,
                                                    cands, held, args.depth)
        seconds: dict[str, float] = {}
        for base in args.bases.split(","):
            start = time.perf_counter()
            given: Path | str | None = (Path(args.general) / "torch" if base == "general"
                                        else None if base == "packaged" else base)
            report = train_rerank(store, ("faq", "bot"), given, epochs=args.epochs, depth=args.depth, force=True,
                                  settings=settings, say=print)
            seconds[f"organisation's own, from {base}"] = time.perf_counter() - start
            rows[f"organisation's own, from {base}"] = report.figures
        served = next(iter(rows.values()))["served"]
        print(f"\n{beir.name} {args.split}: {len(golden.queries)} questions, {len(held)} held out, depth {args.depth},"
              f" {args.epochs} epoch(s)")
        print("| reranker | served | reranked, blend 1 | reranked, blend 0.5 | ms per question | training s |")
        print("|---|---|---|---|---|---|")
        for name, figures in rows.items():
            print(f"| {name} | {served:.4f} | {figures['reranked, blend 1']:.4f} | {figures['reranked, blend 0.5']:.4f} |"
                  f" {figures['ms per question']:.0f} | {seconds.get(name, 0):.0f} |")


if __name__ == "__main__":
    main()

"""Can a corpus say, without a labelled question, which leg reads it better? (issue 10)

    python bench/title_proxy.py ../shared/data/stackfaq ../shared/data/cranfield ...

The default order misses the issue's target on two sets that pull opposite ways: on StackFAQ the
dense leg alone beats every fusion, on Cranfield plain RRF beats the served order. Read per
question (each leg's spread, the first cosine, agreement, length) nothing separates them
(README, *Towards a fusion that transfers*); what does is the corpus. An organisation has its
corpus before it has a single question, and most corpora carry a question-like line written by
a person beside each body: its title. This bench asks each leg to find a body from its title.

For each set: up to ``--titles`` titles are drawn (seeded) among documents with a title and a
body; every document bearing a drawn title is a target, and other documents are drawn to fill
``--pool`` bodies. The bodies are ingested **without their titles** into a throwaway store
(the real engine, the real legs and analysis) and each drawn title is searched as a question,
its targets judged relevant. A set whose titles each name many bodies (XQuAD-R's
``Super_Bowl_50`` over 25 sentences: a title that names a page, not what a body says) is
reported and not read (``--max-named``: the most bodies a title may name on average).

It prints each leg's MRR@100 and nDCG@10 on that task and their difference (dense - full
text, with its paired standard error over the titles), the label-free reading a default order
could weigh the legs by; measured, not shipped.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
import tempfile
import time
from pathlib import Path

from electa.eval.metrics import ndcg_at
from electa.eval.runner import EVAL_ORG, collect_leg_lists, labelled_set
from electa.types import Caller


def _records(directory: Path) -> list[dict]:
    with gzip.open(directory / "corpus.jsonl.gz", "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _write_task(records: list[dict], out: Path, titles: int, pool: int, seed: int, max_named: float) -> str | None:
    """The title task's BEIR files in ``out``; or why the set's titles cannot be read so."""
    by_title: dict[str, list[dict]] = {}
    for rec in records:
        title, text = str(rec.get("title") or "").strip(), str(rec.get("text") or "").strip()
        if title and text:
            by_title.setdefault(title, []).append(rec)
    if len(by_title) < 20:
        return f"{len(by_title)} distinct titles: too few to read"
    rng = random.Random(seed)
    drawn = rng.sample(sorted(by_title), min(titles, len(by_title)))
    targets = {rec["_id"] for t in drawn for rec in by_title[t]}
    named = sum(len(v) for v in by_title.values()) / len(by_title)
    if named > max_named:
        return f"a title names {named:.1f} bodies on average (more than {max_named:g}): titles name pages, not bodies"
    rest = [rec for rec in records if rec["_id"] not in targets and str(rec.get("text") or "").strip()]
    chosen = [rec for rec in records if rec["_id"] in targets] + rng.sample(rest, max(0, min(len(rest), pool - len(targets))))
    (out / "qrels").mkdir(parents=True)
    with gzip.open(out / "corpus.jsonl.gz", "wt", encoding="utf-8") as f:
        for rec in chosen:
            f.write(json.dumps({"_id": rec["_id"], "title": "", "text": rec["text"]}) + "\n")
    with gzip.open(out / "queries.jsonl.gz", "wt", encoding="utf-8") as f:
        for i, t in enumerate(drawn):
            f.write(json.dumps({"_id": f"t{i}", "text": t}) + "\n")
    with (out / "qrels" / "test.tsv").open("w", encoding="utf-8") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for i, t in enumerate(drawn):
            for rec in by_title[t]:
                f.write(f"t{i}\t{rec['_id']}\t1\n")
    return None


def _mrr(ranked: list[str], relevant: dict[str, int]) -> float:
    return next((1.0 / r for r, doc in enumerate(ranked, 1) if relevant.get(doc, 0) > 0), 0.0)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("sets", nargs="+", type=Path, help="BEIR directories")
    p.add_argument("--titles", type=int, default=200)
    p.add_argument("--pool", type=int, default=1500, help="bodies in the throwaway store")
    p.add_argument("--max-named", type=float, default=10.0, help="the most bodies a title may name on average")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    print(f"{'set':<16} {'titles':>6} {'bodies':>6}  {'MRR full text':>13} {'MRR dense':>9} {'dense - ft (SE)':>17}"
          f"  {'nDCG@10 ft':>10} {'nDCG@10 dense':>13}  seconds")
    for directory in args.sets:
        name = directory.name if directory.name not in {"en", "de", "es", "zh"} else f"{directory.parent.name}-{directory.name}"
        started = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            task = Path(tmp) / "task"
            task.mkdir()
            why = _write_task(_records(directory), task, args.titles, args.pool, args.seed, args.max_named)
            if why:
                print(f"{name:<16} not read: {why}")
                continue
            with labelled_set(task, "test", Path(tmp) / "store", None) as (engine, beir, _, _):
                lists = collect_leg_lists(engine, beir, 100, False, Caller(EVAL_ORG), "ext_id", ["fulltext", "dense"])
        scores = {leg: ([], []) for leg in ("fulltext", "dense")}
        for q, legs in lists.items():
            for leg, (mrr, ndcg) in scores.items():
                ranked = [doc for doc, _ in legs.get(leg, [])]
                mrr.append(_mrr(ranked, beir.qrels[q]))
                ndcg.append(ndcg_at(ranked, beir.qrels[q]))
        mean = {leg: (sum(m) / len(m), sum(n) / len(n)) for leg, (m, n) in scores.items()}
        # (the difference's standard error is paired, title by title)
        diffs = [d - f for d, f in zip(scores["dense"][0], scores["fulltext"][0], strict=True)]
        spread = (sum((x - sum(diffs) / len(diffs)) ** 2 for x in diffs) / max(1, len(diffs) - 1)) ** 0.5
        print(f"{name:<16} {len(lists):>6} {len(beir.corpus):>6}  {mean['fulltext'][0]:>13.3f} {mean['dense'][0]:>9.3f}"
              f" {mean['dense'][0] - mean['fulltext'][0]:>+10.3f} ±{spread / len(diffs) ** 0.5:.3f}"
              f"  {mean['fulltext'][1]:>10.3f} {mean['dense'][1]:>13.3f}"
              f"  {time.perf_counter() - started:.0f}", flush=True)


if __name__ == "__main__":
    sys.exit(main())

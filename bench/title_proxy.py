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
``--pool`` bodies (the targets are all kept, so a set whose drawn titles name more bodies than
that has no others). The bodies are ingested **without their titles** (a body that opens with
its title loses that copy: :func:`without_title`; the bench prints how many did, and how many
still hold their title whole) into a throwaway store
(the real engine, the real legs and analysis) and each drawn title is searched as a question,
its targets judged relevant. A set whose titles each name many bodies (XQuAD-R's
``Super_Bowl_50`` over 25 sentences: a title that names a page, not what a body says) is
reported and not read (``--max-named``: the most bodies a title may name on average).

With ``--orders`` it also prints the served order's and plain fusion's nDCG@10 on that task.
It prints each leg's MRR@100 and nDCG@10 on that task and their difference (dense - full
text, with its paired standard error over the titles), the label-free reading a default order
could weigh the legs by; measured, not shipped.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from electa.eval.metrics import ndcg_at
from electa.eval.runner import EVAL_ORG, collect_leg_lists, labelled_set
from electa.fusion import weighted_rrf
from electa.types import Caller, LegResult, LegStatus


def _records(directory: Path) -> list[dict]:
    with gzip.open(directory / "corpus.jsonl.gz", "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def without_title(title: str, body: str) -> str:
    """``body`` less a leading copy of ``title`` (Cranfield's abstracts open with their paper's
    title, word for word: searched for its title such a body is found by the copy, and the task
    would read which leg finds a string, not which reads the corpus); spaces and case aside.

    >>> without_title("Flow past a cone", "flow  past a CONE .  the flow was measured")
    '.  the flow was measured'
    >>> without_title("Flow past a cone", "The flow past a cone was measured")
    'The flow past a cone was measured'
    >>> without_title("Flow past a cone", "Flow past a cones' tip")
    "Flow past a cones' tip"
    """
    words = title.split()
    if not words:
        return body
    match = re.match(r"\s*" + r"\s+".join(re.escape(w) for w in words) + r"(?!\w)", body, re.IGNORECASE)
    return body[match.end():].strip() if match else body


def _write_task(records: list[dict], out: Path, titles: int, pool: int, seed: int,
                max_named: float) -> tuple[str | None, dict[str, int]]:
    """The title task's BEIR files in ``out`` and what was done to the bodies (how many opened
    with their title, cut; how many still hold it whole after the cut); or why the set's
    titles cannot be read so."""
    by_title: dict[str, list[dict]] = {}
    for rec in records:
        title, text = str(rec.get("title") or "").strip(), str(rec.get("text") or "").strip()
        if title and text:
            by_title.setdefault(title, []).append(rec)
    if len(by_title) < 20:
        return f"{len(by_title)} distinct titles: too few to read", {}
    rng = random.Random(seed)
    drawn = rng.sample(sorted(by_title), min(titles, len(by_title)))
    targets = {rec["_id"] for t in drawn for rec in by_title[t]}
    named = sum(len(v) for v in by_title.values()) / len(by_title)
    if named > max_named:
        return f"a title names {named:.1f} bodies on average (more than {max_named:g}): titles name pages, not bodies", {}
    rest = [rec for rec in records if rec["_id"] not in targets and str(rec.get("text") or "").strip()]
    chosen = [rec for rec in records if rec["_id"] in targets] + rng.sample(rest, max(0, min(len(rest), pool - len(targets))))
    counts = {"cut": 0, "holding": 0, "empty": 0}
    bodies: dict[str, str] = {}
    for rec in chosen:
        title, text = str(rec.get("title") or "").strip(), str(rec["text"])
        body = without_title(title, text)
        counts["cut"] += body != text
        if not body:
            counts["empty"] += 1  # (a body that was its title alone: nothing of it is left to read)
            continue
        counts["holding"] += bool(title) and " ".join(title.split()).casefold() in " ".join(body.split()).casefold()
        bodies[rec["_id"]] = body
    asked = [(i, t, [rec["_id"] for rec in by_title[t] if rec["_id"] in bodies]) for i, t in enumerate(drawn)]
    asked = [(i, t, ids) for i, t, ids in asked if ids]
    (out / "qrels").mkdir(parents=True)
    with gzip.open(out / "corpus.jsonl.gz", "wt", encoding="utf-8") as f:
        for doc, body in bodies.items():
            f.write(json.dumps({"_id": doc, "title": "", "text": body}) + "\n")
    with gzip.open(out / "queries.jsonl.gz", "wt", encoding="utf-8") as f:
        for i, t, _ in asked:
            f.write(json.dumps({"_id": f"t{i}", "text": t}) + "\n")
    with (out / "qrels" / "test.tsv").open("w", encoding="utf-8") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for i, _, ids in asked:
            for doc in ids:
                f.write(f"t{i}\t{doc}\t1\n")
    return None, counts


def _se(values: list[float]) -> float:
    """The standard error of the mean of ``values`` (sample deviation, n - 1)."""
    if len(values) < 2:
        return float("nan")
    mean = sum(values) / len(values)
    return (sum((x - mean) ** 2 for x in values) / (len(values) - 1) / len(values)) ** 0.5


def _mrr(ranked: list[str], relevant: dict[str, int]) -> float:
    return next((1.0 / r for r, doc in enumerate(ranked, 1) if relevant.get(doc, 0) > 0), 0.0)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("sets", nargs="+", type=Path, help="BEIR directories")
    p.add_argument("--titles", type=int, default=200)
    p.add_argument("--pool", type=int, default=1500, help="bodies in the throwaway store")
    p.add_argument("--max-named", type=float, default=10.0, help="the most bodies a title may name on average")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--orders", action="store_true", help="also the served order and plain fusion on the title task")
    args = p.parse_args()
    print(f"{'set':<16} {'titles':>6} {'bodies':>6}  {'MRR full text':>13} {'MRR dense':>9} {'dense - ft (SE)':>17}"
          f"  {'nDCG@10 ft':>10} {'nDCG@10 dense':>13}  seconds")
    for directory in args.sets:
        name = directory.name if directory.name not in {"en", "de", "es", "zh"} else f"{directory.parent.name}-{directory.name}"
        started = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            task = Path(tmp) / "task"
            task.mkdir()
            why, counts = _write_task(_records(directory), task, args.titles, args.pool, args.seed, args.max_named)
            if why:
                print(f"{name:<16} not read: {why}")
                continue
            results: dict[str, list[LegResult]] = {}
            with labelled_set(task, "test", Path(tmp) / "store", None) as (engine, beir, _, _):
                missing = [leg for leg in ("fulltext", "dense") if not engine.legs[leg].available()]
                if missing:  # (a leg that cannot run would read as one that found nothing)
                    raise SystemExit(f"{name}: the {', '.join(missing)} leg cannot run here; nothing is read")
                tables: dict = {}
                lists = collect_leg_lists(engine, beir, 100, False, Caller(EVAL_ORG), "ext_id", ["fulltext", "dense"],
                                          tables, results_of=results)
        failed = Counter(f"{r.leg} {r.status.value}" for rs in results.values() for r in rs if r.status is not LegStatus.OK)
        if failed:  # (a leg that failed a title reads as one that found nothing for it)
            raise SystemExit(f"{name}: legs not ok on some titles ({dict(failed)}); nothing is read")
        scores = {leg: ([], []) for leg in ("fulltext", "dense")}
        for q, legs in lists.items():
            for leg, (mrr, ndcg) in scores.items():
                ranked = [doc for doc, _ in legs.get(leg, [])]
                mrr.append(_mrr(ranked, beir.qrels[q]))
                ndcg.append(ndcg_at(ranked, beir.qrels[q]))
        mean = {leg: (sum(m) / len(m), sum(n) / len(n)) for leg, (m, n) in scores.items()}
        # (the difference's standard error is paired, title by title)
        diffs = [d - f for d, f in zip(scores["dense"][0], scores["fulltext"][0], strict=True)]
        print(f"{name:<16} {len(lists):>6} {len(beir.corpus):>6}  {mean['fulltext'][0]:>13.3f} {mean['dense'][0]:>9.3f}"
              f" {mean['dense'][0] - mean['fulltext'][0]:>+10.3f} ±{_se(diffs):.3f}"
              f"  {mean['fulltext'][1]:>10.3f} {mean['dense'][1]:>13.3f}"
              f"  {time.perf_counter() - started:.0f}", flush=True)
        if args.orders:
            # (the served order as the engine ranked the candidates it kept; plain RRF, k = 60)
            served = [ndcg_at(list(dict.fromkeys(doc for doc, _, _ in tables[q])), beir.qrels[q]) for q in lists]
            fused = [ndcg_at([f.key for f in weighted_rrf(legs)], beir.qrels[q]) for q, legs in lists.items()]
            gap = [a - b for a, b in zip(served, fused, strict=True)]
            print(f"{'':<16} nDCG@10 served {sum(served) / len(served):.4f}, plain fusion {sum(fused) / len(fused):.4f}:"
                  f" {sum(gap) / len(gap):+.4f} ±{_se(gap):.4f}")
        print(f"{'':<16} bodies that opened with their title, cut: {counts['cut']}; holding it whole after: "
              f"{counts['holding']}; its title alone, left out: {counts['empty']}; legs not ok: none")


if __name__ == "__main__":
    sys.exit(main())

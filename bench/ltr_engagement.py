"""Does engagement (other people's thumbs up) help the learned ranker? A simulation on the
labelled sets we have, since none of them comes with feedback.

    python bench/ltr_engagement.py ../shared/data/stackfaq:dev ../shared/data/scifact:train

Each set's labelled questions are searched as served (judges off; depth 100 per leg) and their
first ``--depth`` hits become feature rows, as ``electa train-ltr`` collects them. The questions
are dealt into the set's halves (``dev:tune`` / ``dev:test`` by the project's hash, whatever
the split is called). The tune half plays the organisation's past: each of its questions is
"voted on" with probability ``--rates`` (a thumbs up on each of its relevant documents,
drawn with a fixed seed), which is what the ``votes_up`` column reads:

- in training (the tune half), a question's engagement is every *other* tune question's votes
  (``electa.eval.ltr.votes_but``: its own are its labels);
- on the test half (questions asked later), every tune question's votes.

Printed per set and vote rate, nDCG@10 on the test half: the served order, a ranker trained on
the tune half without the engagement columns, and one with them (``electa.eval.ltr.PARAMS``,
fixed), and the share of the ranker's gain the engagement columns take. Real votes are noisier
than these (a thumbs up on a relevant page only): read the figures as the most engagement can
give on a set, not what it gives.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

import numpy as np

from electa.eval.beir import half_of
from electa.eval.ltr import beir_rows, fit, served_order, unique, votes_but
from electa.eval.metrics import ndcg_at
from electa.judges.ltr_features import CONTEXT_FEATURES, FEATURES


def with_votes(x: np.ndarray, keys: list[str], votes: dict[str, tuple[int, int]]) -> np.ndarray:
    """``x`` with its ``votes_up`` / ``votes_down`` columns read from ``votes`` (per document)."""
    out = x.copy()
    out[:, FEATURES.index("votes_up")] = [np.log1p(votes.get(k, (0, 0))[0]) for k in keys]
    out[:, FEATURES.index("votes_down")] = [np.log1p(votes.get(k, (0, 0))[1]) for k in keys]
    return out


def ndcg_of(trees, rows, qrels, qids, columns) -> float:  # type: ignore[no-untyped-def]
    scores = []
    for q in qids:
        x, keys, passes = rows[q]
        order = served_order(np.argsort(-trees.predict(x[:, columns]), kind="stable").tolist(), passes)
        scores.append(ndcg_at(unique([keys[i] for i in order]), qrels.get(q, {})))
    return float(np.mean(scores))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sets", nargs="+", help="DIR:SPLIT")
    ap.add_argument("--depth", type=int, default=50)
    ap.add_argument("--rates", default="0,0.1,0.3,1.0",
                    help="share of the tune half's questions that were voted on (0: the same columns, no votes)")
    args = ap.parse_args()
    plain = [i for i, f in enumerate(FEATURES) if f not in CONTEXT_FEATURES]
    every = list(range(len(FEATURES)))
    print("| set | vote rate | votes | served | learned, no engagement | learned, with engagement | engagement's share of gain |")
    print("|---|---|---|---|---|---|---|")
    for spec in args.sets:
        directory, split = spec.rsplit(":", 1)
        beir, rows = beir_rows(Path(directory), split, depth=args.depth)
        tune = sorted(half_of(list(rows), "tune"))
        test = sorted(set(rows) - set(tune))
        served = float(np.mean([ndcg_at(unique(rows[q][1]), beir.qrels.get(q, {})) for q in test]))
        base, _ = fit({q: (x[:, plain], keys, passes) for q, (x, keys, passes) in rows.items()}, beir.qrels, tune,
                      [FEATURES[i] for i in plain])
        without = ndcg_of(base, rows, beir.qrels, test, plain)
        for rate in (float(r) for r in args.rates.split(",")):
            rng = random.Random(11)
            feedback = [(beir.queries[q], doc, 1) for q in tune if rng.random() < rate
                        for doc, grade in sorted(beir.qrels.get(q, {}).items()) if grade > 0]
            but = votes_but(feedback)
            everyone = but("")
            voted = {q: (with_votes(x, keys, but(beir.queries[q]) if q in tune else everyone), keys, passes)
                     for q, (x, keys, passes) in rows.items()}
            trees, gains = fit(voted, beir.qrels, tune)
            learned = ndcg_of(trees, voted, beir.qrels, test, every)
            share = sum(g for f, g in zip(FEATURES, gains, strict=True) if f in CONTEXT_FEATURES) / (gains.sum() or 1)
            print(f"| {beir.name} {split} ({len(tune)} tune / {len(test)} test) | {rate:g} | {len(feedback)} |"
                  f" {served:.4f} | {without:.4f} | {learned:.4f} | {share:.1%} |", flush=True)


if __name__ == "__main__":
    main()

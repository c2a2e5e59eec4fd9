"""Ranking metrics as pure functions, following trec_eval's definitions.

- nDCG@k (Järvelin & Kekäläinen 2002) with trec_eval's linear gain (gain = relevance grade)
  and log2(rank + 1) discount, as pytrec_eval's ``ndcg_cut`` and BEIR report it; the ideal
  ranking is built from every judged document of the query.
- MRR@k: 1 / rank of the first relevant (grade > 0) document within k, else 0.
- Recall@k: relevant documents within k over all relevant documents.
- MAP@k (AP cut at k, as trec_eval ``map_cut``): sum of precision at each relevant rank ≤ k,
  over the number of relevant documents.

``run`` is a ranked list of document ids, best first; ``qrels`` maps document id to grade.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


def ndcg_at(run: Sequence[str], qrels: Mapping[str, int], k: int = 10) -> float:
    """Example:

    >>> round(ndcg_at(["b", "a"], {"a": 1}), 4)
    0.6309
    """
    dcg = sum(qrels.get(d, 0) / math.log2(i + 2) for i, d in enumerate(run[:k]) if qrels.get(d, 0) > 0)
    ideal = sorted((g for g in qrels.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def mrr_at(run: Sequence[str], qrels: Mapping[str, int], k: int = 10) -> float:
    """Example:

    >>> mrr_at(["x", "y", "a"], {"a": 2})
    0.3333333333333333
    """
    for i, d in enumerate(run[:k]):
        if qrels.get(d, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def recall_at(run: Sequence[str], qrels: Mapping[str, int], k: int = 100) -> float:
    """Example:

    >>> recall_at(["a", "x"], {"a": 1, "b": 1}, 1)
    0.5
    """
    relevant = {d for d, g in qrels.items() if g > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(run[:k])) / len(relevant)


def ap_at(run: Sequence[str], qrels: Mapping[str, int], k: int = 100) -> float:
    """Example:

    >>> ap_at(["a", "x", "b"], {"a": 1, "b": 1})
    0.8333333333333333
    """
    relevant = {d for d, g in qrels.items() if g > 0}
    if not relevant:
        return 0.0
    found, total = 0, 0.0
    for i, d in enumerate(run[:k]):
        if d in relevant:
            found += 1
            total += found / (i + 1)
    return total / len(relevant)


def mean_metrics(runs: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]]) -> dict[str, float]:
    """Mean of each metric over the judged queries (a query with no run scores 0)."""
    qids = [q for q in qrels if any(g > 0 for g in qrels[q].values())]
    if not qids:
        return {}
    sums = {"ndcg@10": 0.0, "mrr@10": 0.0, "recall@10": 0.0, "recall@100": 0.0, "map@100": 0.0}
    for q in qids:
        run, rel = runs.get(q, []), qrels[q]
        sums["ndcg@10"] += ndcg_at(run, rel, 10)
        sums["mrr@10"] += mrr_at(run, rel, 10)
        sums["recall@10"] += recall_at(run, rel, 10)
        sums["recall@100"] += recall_at(run, rel, 100)
        sums["map@100"] += ap_at(run, rel, 100)
    return {name: total / len(qids) for name, total in sums.items()}


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank-interpolated percentile (numpy's default 'linear')."""
    if not values:
        return 0.0
    ordered = sorted(values)
    pos = (len(ordered) - 1) * p / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)

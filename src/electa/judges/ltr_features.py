"""The features a learning-to-rank judge reads (SPEC D2), from what a served search already
knows about each hit: nothing is looked up, so the same function serves training
(``electa train-ltr``, :mod:`electa.eval.ltr`) and a search (:class:`electa.judges.ltr.LtrJudge`).

Per hit, in :data:`FEATURES` order:

- ``fused``, ``fused_rr``: the fused value and the reciprocal of its rank by fused value among
  the hits given; ``served_rr``: the reciprocal of its position as given (the served order);
- ``absolute``: the absolute score (C3); ``query_stems``: how many content stems the question
  has;
- ``coverage``, ``title_coverage``: the share of those stems in the passage (title and text) and
  in the title alone; ``log_chars``: log(1 + the passage's length);
- ``kind_*``: the unit's kind, one-hot;
- per leg (full text, dense, Q&A, learned sparse): ``*_rr`` the reciprocal of its rank, ``*_raw`` its raw score,
  ``*_gap`` the best raw score of that leg among the hits minus this one's (how much the leg
  knows about *this* question); all 0 when the leg did not find the hit;
- ``rerank_scored``, ``rerank_raw``, ``rerank_gap``: whether the rerank judge (D1), when it runs
  before this one, scored the hit, its score, and the best score it gave minus this one; all 0
  when it did not (a budget cut leaves the lower hits unscored). A ranker is tied to the
  reranker it was trained behind (:class:`electa.judges.ltr.Serving`), so the scale is one;
- ``votes_up``, ``votes_down``: engagement, log(1 + how many distinct questions gave the hit's
  URL a net thumbs up, or down) in the agent's feedback (:func:`url_votes`); in training a
  question's own votes are left out (:func:`electa.eval.ltr.votes_but`), or the ranker would
  read its labels;
- ``age_gap``: recency, log(1 + whole days between the last change of the freshest hit's
  source and this hit's): relative to the hits, so it means the same at training and a year
  later; whole days, so sources ingested together (seconds apart) read alike.

The last three are what a search looks up besides the hits (:class:`HitContext`); without it
(a data set with no feedback, one source) they are 0.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field

import numpy as np

from electa.text import content_stems, fold, split_words, stem_set
from electa.types import ChunkKind, Hit

LEGS = ("fulltext", "dense", "qa", "sparse")
KINDS = tuple(k.value for k in ChunkKind)
FEATURES = ["fused", "fused_rr", "served_rr", "absolute", "query_stems", "coverage", "title_coverage", "log_chars",
            *(f"kind_{k}" for k in KINDS), *(f"{leg}_{part}" for leg in LEGS for part in ("rr", "raw", "gap")),
            "rerank_scored", "rerank_raw", "rerank_gap", "votes_up", "votes_down", "age_gap"]
# The features that need a lookup (HitContext): a search makes one only for a ranker that reads them.
CONTEXT_FEATURES = frozenset({"votes_up", "votes_down", "age_gap"})
DAY = 86_400.0


@dataclass(frozen=True)
class HitContext:
    """What a search knows of its hits besides themselves: ``votes`` per URL, ``(questions
    voted up, questions voted down)`` (:func:`url_votes`), and ``updated`` per source id, when
    the source's content last changed (seconds since the epoch)."""

    votes: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    updated: Mapping[int, float] = field(default_factory=dict)


def question_key(text: str) -> str:
    """A question as engagement counts it: its folded words ("Refund?" is "refund"). An
    identity, not an analysis: read as words were read before analysis a5 spelled out "C#", so a
    question keeps its digest, and its side of a reranker's held-out split, across releases."""
    return " ".join(split_words(fold(text)))


def question_digests(questions: Iterable[str]) -> list[str]:
    """Digests of questions as engagement and hold-out compare them (folded words): what a
    reranker records of the questions it held out, without their text."""
    return sorted({hashlib.sha256(question_key(q).encode()).hexdigest()[:16] for q in questions})


def url_votes(feedback: Iterable[tuple[str, str, int]]) -> dict[str, tuple[int, int]]:
    """Per URL, how many distinct questions (:func:`question_key`) gave it a net positive and a
    net negative vote, from ``(query, url, net signal)`` rows
    (:meth:`electa.stores.protocol.OperationalStore.feedback`, each voter once per query).

    >>> url_votes([("Refund?", "u1", 1), ("refund", "u1", 1), ("money back", "u1", -1), ("fees", "u2", 0)])
    {'u1': (1, 1)}
    """
    net: dict[tuple[str, str], int] = {}
    for query, url, signal in feedback:
        key = (question_key(query), url)
        net[key] = net.get(key, 0) + signal
    votes: dict[str, tuple[int, int]] = {}
    for (_, url), total in net.items():
        if total:
            up, down = votes.get(url, (0, 0))
            votes[url] = (up + 1, down) if total > 0 else (up, down + 1)
    return votes


def features(query: str, hits: Sequence[Hit], passage_stems: Callable[[Hit], Set[str]] | None = None,
             context: HitContext | None = None) -> np.ndarray:
    """One row of :data:`FEATURES` per hit, in the order given (the served order).
    ``passage_stems`` gives a hit's stems (title and text) when they are known already (the
    engine keeps them per unit: stemming 50 passages per search costs more than the trees);
    ``context`` the hits' engagement and recency.

    >>> from electa.types import ChunkKind, LegVote
    >>> h = Hit(1, 1, 1, ChunkKind.PARENT, "Refunds", "Annual plans are refunded", "", "", 0.03, 0.8, True,
    ...         (LegVote("dense", 2, 0.7, 0.01),))
    >>> float(dict(zip(FEATURES, features("refund annual plans", [h])[0], strict=True))["coverage"])
    1.0
    """
    q = set(content_stems(query))
    best = {leg: max((v.raw_score for h in hits for v in h.votes if v.leg == leg), default=0.0) for leg in LEGS}
    reranked = [dict(h.judged).get("rerank") for h in hits]
    best_rerank = max((r for r in reranked if r is not None), default=0.0)
    engagement, updated = (context.votes, context.updated) if context else ({}, {})
    changed = [updated.get(h.source_id) for h in hits]
    freshest = max((t for t in changed if t is not None), default=0.0)
    by_fused = sorted(range(len(hits)), key=lambda i: (-hits[i].fused, i))
    fused_rank = {i: r for r, i in enumerate(by_fused, start=1)}
    rows = []
    for served, h in enumerate(hits, start=1):
        passage = passage_stems(h) if passage_stems else stem_set(f"{h.title} {h.text}")
        title = stem_set(h.title)
        votes = {v.leg: v for v in h.votes}
        row = [h.fused, 1.0 / fused_rank[served - 1], 1.0 / served, h.score, len(q),
               len(q & passage) / max(1, len(q)), len(q & title) / max(1, len(q)), math.log1p(len(h.text)),
               *(float(h.kind.value == k) for k in KINDS)]
        for leg in LEGS:
            v = votes.get(leg)
            row += [1.0 / v.rank, v.raw_score, best[leg] - v.raw_score] if v else [0.0, 0.0, 0.0]
        judged = reranked[served - 1]
        row += [1.0, judged, best_rerank - judged] if judged is not None else [0.0, 0.0, 0.0]
        up, down = engagement.get(h.url, (0, 0))
        when = changed[served - 1]
        row += [math.log1p(up), math.log1p(down), 0.0 if when is None else math.log1p(max(0.0, freshest - when) // DAY)]
        rows.append(row)
    return np.asarray(rows, dtype=np.float64).reshape(len(hits), len(FEATURES))

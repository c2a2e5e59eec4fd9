"""``electa train-ltr``: train the learning-to-rank judge (SPEC D2) on labelled questions,
cross-validated, and store it.

The labelled questions are an agent's golden set (curated Q&A pairs and the organisation's own
feedback, :mod:`electa.eval.golden`: that organisation's and agent's only, never another's) or
a BEIR set's split. Each question is searched as it is served, judges off, and its first
``depth`` hits become rows of :data:`electa.judges.ltr_features.FEATURES`, labelled by the
question's judgments (a hit of an unjudged document is 0).

A LightGBM lambdarank model (fixed, untuned hyper-parameters: :data:`PARAMS`) is first
cross-validated by question (by whole thread for a half dealt by thread,
:func:`electa.eval.folds.groups_for`): each fold is ranked by a model that never saw it, and nDCG@10 of
the learned order is compared with the served order on the same held-out questions. A ranker
that does not beat the served order there is not stored (``force`` stores it all the same).
The stored model is then trained on every question; below :data:`MIN_QUERIES` labelled
questions nothing is trained (the reference: "a minimum sample floor before a team gets its own
model").
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from electa.config import Settings
from electa.engine import Engine
from electa.errors import ConfigError
from electa.eval.beir import BeirSet, deal
from electa.eval.folds import deal_folds, groups_for
from electa.eval.golden import own_pair
from electa.eval.metrics import ndcg_at
from electa.ingest.chunker import CHUNKER_VERSION
from electa.judges.agent_rerank import own_reranker_held_out, rerank_identity
from electa.judges.ltr import MIN_QUERIES, ORDER, LtrModel, fusion_digest
from electa.judges.ltr_features import FEATURES, HitContext, features, question_digests, question_key, url_votes
from electa.judges.trees import TreeEnsemble
from electa.types import Caller

ROUNDS = 200
PARAMS: dict[str, object] = {"objective": "lambdarank", "learning_rate": 0.05, "num_leaves": 15, "min_data_in_leaf": 20,
                             "bagging_fraction": 0.8, "bagging_freq": 1, "feature_fraction": 0.8, "seed": 7,
                             "verbose": -1, "num_threads": 2, "deterministic": True, "force_row_wise": True}

# Per question: the feature rows of its served hits, each hit's document key, and whether it passes.
Rows = dict[str, tuple[np.ndarray, list[str], np.ndarray]]


@dataclass
class LtrReport:
    dataset: str
    split: str
    queries: int
    folds: int
    served: float
    learned: float
    per_fold: list[float]
    importances: dict[str, float]
    stored: bool = False
    where: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {k: v for k, v in self.__dict__.items() if k not in ("stored", "where")}


def collect(engine: Engine, beir: BeirSet, caller: Caller, key: str, depth: int, leg_depth: int | None = None,
            own_pairs: bool = False, feedback: Sequence[tuple[str, str, int]] = ()) -> Rows:
    """Every question searched exactly as it is served (every leg, the served depths unless
    ``leg_depth`` is given, the agent's tuned fusion, the reranker when one is on; no other
    judge): its first ``depth`` hits as
    rows, with their keys and whether each passes the floor. With ``own_pairs``, a question's
    own curated Q&A unit is left out of its hits: a golden question came from that pair, and
    keeping it would teach the ranker a shortcut no new question offers. ``feedback`` (the
    agent's, as :meth:`~electa.stores.protocol.OperationalStore.feedback` gives it) is the
    engagement the rows read, each question's own votes left out (:func:`votes_but`)."""
    rows: Rows = {}
    votes_of = votes_but(feedback)
    depths = None if leg_depth is None else dict.fromkeys(engine.legs, leg_depth)
    # The judges that run before the ranker when it is served (the reranker): its rows are the
    # order it will be given.
    before = [n for n in engine.funnel.judges if n == "rerank"]
    for qid in sorted(beir.queries):
        text = beir.queries[qid]
        hits = list(engine.search(text, caller, top=depth, depths=depths, judges=before).hits)
        if own_pairs:
            mine = own_pair(text)
            hits = [h for h in hits if not mine(h)]
        if hits:
            context = HitContext(votes_of(text), engine.store.source_updated(caller.org, {h.source_id for h in hits}))
            rows[qid] = (features(text, hits, context=context), [str(getattr(h, key)) for h in hits],
                         np.array([h.passes for h in hits], dtype=bool))
    return rows


def votes_but(feedback: Sequence[tuple[str, str, int]]) -> Callable[[str], dict[str, tuple[int, int]]]:
    """``votes_but(feedback)(question)``: :func:`~electa.judges.ltr_features.url_votes` of every
    question but ``question`` (compared as :func:`~electa.judges.ltr_features.question_key`:
    "Refunds?" is "refunds"). A golden question's labels are its own votes; read as engagement
    they would teach the ranker that a voted page is the answer, which only holds for the
    question voted.

    >>> rows = [("Refund?", "u1", 1), ("refund", "u2", 1), ("money back", "u1", 1)]
    >>> votes_but(rows)("refund"), votes_but(rows)("other")
    ({'u1': (1, 0), 'u2': (0, 0)}, {'u1': (2, 0), 'u2': (1, 0)})
    """
    total = url_votes(feedback)
    own: dict[str, list[tuple[str, str, int]]] = {}
    for row in feedback:
        own.setdefault(question_key(row[0]), []).append(row)

    def but(question: str) -> dict[str, tuple[int, int]]:
        mine = url_votes(own.get(question_key(question), ()))
        return {u: (up - mine.get(u, (0, 0))[0], down - mine.get(u, (0, 0))[1]) for u, (up, down) in total.items()}
    return but


def served_order(order: Sequence[int], passes: np.ndarray) -> list[int]:
    """A judged order as a search serves it: passing hits first, each group in the judged order
    (``Engine.judge``)."""
    return [i for i in order if passes[i]] + [i for i in order if not passes[i]]


def labels(keys: Sequence[str], qrels: Mapping[str, int]) -> np.ndarray:
    return np.asarray([min(4, max(0, qrels.get(k, 0))) for k in keys], dtype=np.float64)


def fit(rows: Rows, qrels: Mapping[str, Mapping[str, int]], qids: Sequence[str],
        names: Sequence[str] = FEATURES) -> tuple[TreeEnsemble, np.ndarray]:
    """A lambdarank ensemble on ``qids`` and its features' gain importances (``names``: the
    rows' columns, :data:`FEATURES` unless a benchmark derives others)."""
    try:
        import lightgbm as lgb
    except ImportError as exc:
        raise ConfigError("training a ranker needs LightGBM: pip install 'electa[ltr]'") from exc
    x = np.vstack([rows[q][0] for q in qids])
    y = np.concatenate([labels(rows[q][1], qrels.get(q, {})) for q in qids])
    data = lgb.Dataset(x, y, group=[len(rows[q][1]) for q in qids], feature_name=list(names))
    booster = lgb.train(PARAMS, data, num_boost_round=ROUNDS)
    return TreeEnsemble.from_lightgbm(booster.dump_model()), booster.feature_importance(importance_type="gain")


def unique(keys: Sequence[str]) -> list[str]:
    """Each document once, at its best position (the evaluation's rule: pages share a URL)."""
    return list(dict.fromkeys(keys))


def cross_validate(rows: Rows, qrels: Mapping[str, Mapping[str, int]], folds: int,
                   names: Sequence[str] = FEATURES, groups: Mapping[str, str] | None = None,
                   ) -> tuple[float, float, list[float]]:
    """Mean nDCG@10 of the served and the learned order over held-out folds, and the learned
    minus served difference per fold. With ``groups`` (:func:`electa.eval.folds.groups_for`)
    each fold holds whole threads."""
    dealt = deal(rows)
    parts = [dealt[i::folds] for i in range(folds)] if groups is None else deal_folds(dealt, folds, 13, groups)
    served, learned, per_fold = [], [], []
    for k, held in enumerate(parts):
        trees, _ = fit(rows, qrels, [q for i, part in enumerate(parts) if i != k for q in part], names)
        deltas = []
        for q in held:
            x, keys, passes = rows[q]
            order = served_order(np.argsort(-trees.predict(x), kind="stable").tolist(), passes)
            served.append(ndcg_at(unique(keys), qrels.get(q, {})))
            learned.append(ndcg_at(unique([keys[i] for i in order]), qrels.get(q, {})))
            deltas.append(learned[-1] - served[-1])
        per_fold.append(float(np.mean(deltas)) if deltas else 0.0)
    return float(np.mean(served)), float(np.mean(learned)), per_fold


def labelled(beir: BeirSet, split: str) -> BeirSet:
    """``beir``'s questions that have a relevant document (the others teach a ranker nothing)."""
    kept = {q: t for q, t in beir.queries.items() if any(g > 0 for g in beir.qrels.get(q, {}).values())}
    return BeirSet(beir.name, [], kept, beir.qrels, split)


def beir_rows(dataset: Path, split: str, depth: int = 50, leg_depth: int | None = 100,
              settings: Settings | None = None) -> tuple[BeirSet, Rows]:
    """A BEIR set's labelled questions as rows, from its cached evaluation store (ingested on
    first use, as ``electa eval`` does)."""
    from electa.eval.runner import EVAL_ORG, ingest_corpus, labelled_set

    with labelled_set(dataset, split, None, None, settings=settings) as (engine, beir, _, _):
        ingest_corpus(engine, beir, progress=False)
        engine.fulltext.warm()
        return beir, collect(engine, labelled(beir, split), Caller(EVAL_ORG), "ext_id", depth, leg_depth)


def train_ltr(dataset: Path | None, split: str, data_dir: Path | None, agent: tuple[str, str] | None = None,
              out_file: Path | None = None, folds: int = 5, leg_depth: int | None = None, visitors: bool = False,
              min_queries: int = MIN_QUERIES, force: bool = False, settings: Settings | None = None) -> LtrReport:
    """Train, cross-validate and store a ranker; see the module."""
    from electa.eval.runner import EVAL_ORG, ingest_corpus, labelled_set

    if dataset is not None and agent is not None:
        raise ConfigError("train on a BEIR set (--out FILE) or on an agent's golden set (--agent), not both:"
                          " an agent's ranker learns only from its own organisation's labels")
    if folds < 2:
        raise ConfigError(f"--folds {folds}: cross-validation needs at least 2")
    with labelled_set(dataset, split, data_dir, agent, visitors, settings, folds) as (engine, beir, settings, _embedder):
        groups = groups_for(split, beir.qrels) if dataset is not None else None
        if dataset is None:
            assert agent is not None
            caller, key = Caller(*agent), "url"
            stored = engine.store.agent_settings(*agent)
        else:
            ingest_corpus(engine, beir, progress=False)
            caller, key, stored = Caller(EVAL_ORG), "ext_id", None
        engine.fulltext.warm()
        questions = labelled(beir, split)
        behind = rerank_identity(settings.rerank, stored)
        if behind.startswith("agent:"):
            # The agent's own reranker learned from most of these very questions: its scores on
            # them are overfit, and a ranker reading them would trust it more than it should on a
            # new question. Only the questions it held out read as new ones do.
            held = own_reranker_held_out(stored)
            kept = {q: t for q, t in questions.queries.items() if question_digests([t])[0] in held}
            if len(kept) < min_queries:
                raise ConfigError(
                    f"{beir.name} has {len(kept)} labelled questions its own reranker did not train on; a ranker"
                    f" behind that reranker needs at least {min_queries}: label more questions and train the reranker"
                    " again, or train and serve the ranker without it (ELECTA_RERANK unset)")
            questions = BeirSet(questions.name, [], kept, questions.qrels, split)
        if len(questions.queries) < min_queries:
            where = f"agent {agent[0]}/{agent[1]}" if agent and dataset is None else beir.name
            raise ConfigError(f"{where} has {len(questions.queries)} labelled questions; a ranker needs at least"
                              f" {min_queries} (curated Q&A pairs with a URL, feedback)")
        feedback = engine.store.feedback(*agent, visitors) if agent is not None else []
        rows = collect(engine, questions, caller, key, settings.ltr_depth, leg_depth, own_pairs=agent is not None,
                       feedback=feedback)
        served, learned, per_fold = cross_validate(rows, beir.qrels, folds, groups=groups)
        trees, gains = fit(rows, beir.qrels, sorted(rows))
        total = float(gains.sum()) or 1.0
        importances = {n: round(float(g) / total, 4) for n, g in sorted(zip(FEATURES, gains, strict=True),
                                                                       key=lambda r: -r[1]) if g > 0}
        report = LtrReport(beir.name, split, len(rows), folds, round(served, 4), round(learned, 4),
                           [round(d, 4) for d in per_fold], importances)
        ids = hashlib.sha256(json.dumps(sorted((q, beir.queries[q]) for q in rows)).encode()).hexdigest()[:16]
        trained = {"dataset": beir.name, "split": split, "queries": len(rows), "query_ids": ids,
                   "corpus_hash": beir.corpus_hash if dataset is not None else None,
                   "model_id": engine.dense_model_id(agent[0] if agent is not None else caller.org),
                   "chunker": CHUNKER_VERSION, "unit_vectors": settings.unit_vectors, "leg_depth": leg_depth,
                   "legs": sorted(n for n, leg in engine.legs.items() if leg.available()),
                   "rerank": behind, "order": ORDER, "visitors": visitors,
                   **({"fusion": fusion_digest(stored)} if agent is not None else {}),
                   "params": {**PARAMS, "rounds": ROUNDS}, "created_at": time.time()}
        model = LtrModel(trees, tuple(FEATURES), settings.ltr_depth, trained, report.to_dict())
        if learned <= served and not force:
            return report
        if out_file is not None:
            out_file.write_text(json.dumps(model.to_dict()), encoding="utf-8")
            report.where.append(str(out_file))
        if agent is not None:
            current = engine.store.agent_settings(*agent) or {}
            engine.store.set_agent_settings(*agent, {**current, "ltr": model.to_dict()})
            report.where.append(f"agent {agent[0]}/{agent[1]}")
        report.stored = bool(report.where)
    return report

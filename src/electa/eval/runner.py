"""``electa eval``: every leg alone, the fusion and the scored order, on a BEIR-layout set.

The corpus is ingested through the real engine into a data directory keyed by corpus hash and
embedding model, so a rerun reuses the stored embeddings and only runs the queries. Each query
runs the legs once; every configuration is ranked from the same leg results, so the comparison
between configurations is exact. Latency is measured per query, sequentially, as a live
request would see it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from electa.calibration import Calibrator
from electa.config import Settings
from electa.embedders.protocol import Embedder
from electa.embedders.registry import create_embedder
from electa.engine import Engine
from electa.errors import ConfigError, EmbedderUnavailable
from electa.eval.abstention import Candidate, at_given_floor, cross_validate, fit_with_signal, unfitted, with_signal
from electa.eval.beir import BeirSet, load_beir, load_qrels, shared_between
from electa.eval.folds import check_folds, groups_for
from electa.eval.golden import golden_set, own_pair
from electa.eval.metrics import mean_metrics, percentile, recall_at
from electa.eval.plot import plot_reliability, plot_report
from electa.eval.trec import write_run
from electa.eval.tuning import (
    DEPTH_GRID,
    ByDepth,
    DepthKey,
    FusionSetting,
    Labels,
    LegLists,
    ListsByDepth,
    ScoresByDepth,
    TuneResult,
    depth_key,
    save_setting,
    tune,
)
from electa.ingest.chunker import CHUNKER_VERSION
from electa.ingest.page import Loaded
from electa.judges.agent_rerank import own_reranker_held_out, rerank_identity
from electa.judges.ltr_features import question_digests
from electa.judges.rerank import PairScorer, passage_of
from electa.judges.rerank_cut import DEPTH as CUT_DEPTH
from electa.judges.rerank_cut import SIGNAL as CUT_SIGNAL
from electa.judges.rerank_cut import RerankCut
from electa.legs.runner import DEFAULT_DEPTH
from electa.scoring import AGREEMENT_K, LIFT
from electa.served_order import RANK_RULES, Order
from electa.stores.protocol import StoredUnit
from electa.text.analysis import ANALYSIS
from electa.types import Access, Caller, Hit, LegResult, LegStatus

log = logging.getLogger(__name__)

EVAL_ORG = "eval"
MIN_CALIBRATION_QUERIES = 50


@dataclass
class EvalReport:
    dataset: str
    split: str
    queries: int
    metrics: dict[str, dict[str, float]] = field(default_factory=dict)
    recall_curve: dict[str, dict[int, float]] = field(default_factory=dict)
    abstention: dict[str, object] = field(default_factory=dict)
    latency_ms: dict[str, dict[str, float]] = field(default_factory=dict)
    ingest_seconds: float = 0.0
    settings: dict[str, object] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(self.__dict__, indent=2, sort_keys=True)

    def to_markdown(self) -> str:
        names = ["ndcg@10", "mrr@10", "recall@10", "recall@100", "map@100"]
        lines = [f"# Electa eval: {self.dataset} ({self.split}, {self.queries} queries)", "",
                 *(f"Note: {n}" for n in self.notes), *([""] if self.notes else []),
                 "| configuration | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
        for config, values in self.metrics.items():
            lines.append(f"| {config} | " + " | ".join(f"{values.get(n, 0):.4f}" for n in names) + " |")
        lines += ["", "| stage | p50 ms | p95 ms | p99 ms |", "|---|---|---|---|"]
        for stage, values in self.latency_ms.items():
            lines.append(f"| {stage} | {values['p50']:.2f} | {values['p95']:.2f} | {values['p99']:.2f} |")
        if self.abstention:
            how = (f"{self.abstention['folds']}-fold cross-validated" if self.abstention["folds"]
                   else "not cross-validated: one thread; rows fitted on nothing here")
            lines += ["", f"Abstention ({how}, {self.abstention['queries']} queries;"
                      " unanswerable = the same questions with their relevant documents removed)", "",
                      "| rule | floor | unanswerable: nothing passes | answerable: relevant among the 4 passages read"
                      " | precision | recall |",
                      "|---|---|---|---|---|---|"]
            for r in self.abstention["rows"]:  # type: ignore[attr-defined]
                lines.append(f"| {r['rule']} | {r['floor']:.2f} | {r['abstain_unanswerable']:.1%} | {r['keep_answerable']:.1%}"
                             f" | {r['precision']:.3f} | {r['recall']:.3f} |")
        return "\n".join(lines) + "\n"


def default_data_dir(beir: BeirSet, model_id: str, settings: Settings | None = None) -> Path:
    """Where a BEIR set's store is cached: one per corpus, model, unit-vector recipe (a store
    built by another recipe holds other vectors for the same texts) and fixed language (each
    document's own, the default, keeps the key it had before languages were read)."""
    settings = settings or Settings()
    root = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "electa" / "eval"
    key = f"{model_id}|{settings.unit_vectors}" + (f"|{settings.language}" if settings.language else "")
    tag = hashlib.sha256(key.encode()).hexdigest()[:8]
    return root / f"{beir.name}-{beir.corpus_hash}-{tag}"


def ingest_corpus(engine: Engine, beir: BeirSet, progress: bool, reading: str | None = None) -> float:
    """Ingest the set's corpus as the evaluation's organisation (skipped when unchanged), which
    reads with ``reading``, by default the one a new organisation gets (:attr:`Engine.new_reading`):
    set before the write, so that a cached store measures the same reading whatever was run on it
    before (a switch embeds what that reading lacks, once)."""
    start = time.perf_counter()
    engine.read_as(EVAL_ORG, reading, progress)
    outcome = engine.ingest_loaded(f"beir:{beir.name}", Loaded(documents=beir.corpus), Access(EVAL_ORG),
                                   kind="beir", content_hash=beir.corpus_hash, progress=progress)
    if engine.embedder is not None and engine.store.documents_missing_title_units(1):
        engine.reindex(progress=progress)  # a store cached before title units (chunker hp-1)
    if engine.sparse.available() and engine.encode_sparse_missing(progress=progress):
        engine.sparse.index.sync()  # type: ignore[union-attr]  # a store cached before the learned-sparse leg
    if engine.graph.available() and engine.graph.missing:
        engine.read_graph_missing(progress=progress)  # a store cached before the graph, or read by another extractor
    if outcome.status != "unchanged":
        engine.fulltext.warm()
    return time.perf_counter() - start


def candidates(hits: Sequence[Hit], key: str) -> list[Candidate]:
    """Hits as abstention reads them (:data:`electa.eval.abstention.Candidate`), in their order."""
    return [(getattr(h, key), h.score, {v.leg: v.raw_score for v in h.votes}) for h in hits]


def evaluate(engine: Engine, beir: BeirSet, split: str, runs_dir: Path | None = None,
             depth: int = 100, limit: int | None = None, progress: bool = False,
             orders: Sequence[Order] = (Order.FUSED, Order.SCORED, Order.ABSOLUTE),
             tuned: FusionSetting | None = None, caller: Caller | None = None, key: str = "ext_id",
             legs: Sequence[str] | None = None,
             calibration: tuple[Mapping[str, Calibrator], float, Mapping[str, object]] | None = None,
             judges: Sequence[str] | None = None, own_pairs: bool = False, notes: Sequence[str] = ()) -> EvalReport:
    """Run every query of ``beir`` through ``engine``; optionally write TREC runs to ``runs_dir``
    (the report, with ``notes``, beside them).

    A BEIR set's corpus is ingested first (cached); a golden set (no corpus) is evaluated on the
    store as it is, as ``caller``, with documents keyed by ``url`` instead of ``ext_id``.
    ``calibration`` (calibrators, floor, provenance from a tune file) adds an abstention row
    measured at that floor on these queries. ``judges`` names the judges measured (default:
    every one the settings turn on that can run). ``own_pairs`` (a golden set made of the
    store's own Q&A pairs) drops each question's own pair from every leg's list: found by its
    very words, it would carry the relevant URL and score the set for free."""
    ingest_seconds = ingest_corpus(engine, beir, progress) if beir.corpus else 0.0
    engine.fulltext.warm()
    caller = caller or Caller(EVAL_ORG)
    qids = sorted(beir.queries)[: limit or None]
    legs = [name for name, leg in engine.legs.items() if leg.available() and (legs is None or name in legs)]
    depths = dict.fromkeys(legs, depth)
    ranked: dict[str, dict[str, list[tuple[str, float]]]] = {}
    latency: dict[str, list[float]] = {"search": []}
    tables: dict[str, list[Candidate]] = {}
    tuned_tables: dict[str, list[Candidate]] = {}  # (as the tuned setting serves them: the tune file's cut meets these)
    # Each judge the settings turn on that can run here, alone and all together: rows after the served order.
    asked_for = engine.funnel.chosen(judges)
    judges = engine.funnel.runnable(caller, judges)
    ltr = engine.funnel.judges.get("ltr")
    if "ltr" in asked_for and engine.settings.ltr not in ("", "agent") and ltr is not None and not ltr.available(caller):
        # A ranker file named for this run that cannot judge (another model, an earlier served
        # order...) must say so, not leave its rows quietly out of the report.
        raise ConfigError(f"the ranker {engine.settings.ltr} cannot judge here: {ltr.why}")
    combinations = [[j] for j in judges] + ([judges] if len(judges) > 1 else [])
    cut_short = 0
    for qid in qids:
        text = beir.queries[qid]
        t0 = time.perf_counter()
        results, _ = engine.retrieve(text, caller, legs=legs, depths=depths)
        if own_pairs:
            results = without_own_pair(engine, text, results)
        t1 = time.perf_counter()
        hits = engine.rank(text, results, order=Order.SCORED)
        latency["search"].append((time.perf_counter() - t0) * 1000.0)
        latency.setdefault("fusion+scoring", []).append((time.perf_counter() - t1) * 1000.0)
        by_order = {Order.SCORED: hits}
        cut = False
        for names in combinations:
            t2 = time.perf_counter()
            judged, stages = engine.judge(text, caller, hits[:depth], names)
            latency.setdefault("judges:" + "+".join(names), []).append((time.perf_counter() - t2) * 1000.0)
            cut = cut or any(st.cut_short for st in stages)
            # A judged order has no score of its own: rank order, written as descending numbers.
            ranked.setdefault("scored+" + "+".join(names), {})[qid] = _dedupe(
                [(getattr(h, key), float(len(judged) - i)) for i, h in enumerate(judged)])
        cut_short += cut
        # Abstention reads the candidates an untuned search serves: each leg at its served depth
        # (50 for full text and dense by default, 8 for Q&A, where this run searches ``depth``
        # for the ranking metrics; with ``depth`` below a served depth, the shallower run's).
        served_depths = {r.leg: engine.settings.depths.get(r.leg, DEFAULT_DEPTH) for r in results}
        table_hits = hits if all(len(r.hits) <= served_depths[r.leg] for r in results) else served_order(
            engine, text, results, top=depth)
        tables[qid] = candidates(table_hits[:depth], key)
        for order in orders:
            if order not in by_order:
                by_order[order] = engine.rank(text, results, order=order)
        for order, order_hits in by_order.items():
            ranked.setdefault(order.value, {})[qid] = _dedupe([(getattr(h, key), h.sort_key) for h in order_hits[:depth]])
        if "sparse" in legs:  # what the learned-sparse leg adds: the same orders without it
            others = [r for r in results if r.leg != "sparse"]
            for order in (Order.FUSED, Order.SCORED):
                ranked.setdefault(f"{order.value} (no sparse)", {})[qid] = _dedupe(
                    [(getattr(h, key), h.sort_key) for h in engine.rank(text, others, order=order)[:depth]])
        if tuned is not None:
            tuned_hits = served_order(engine, text, results, tuned, top=depth)
            ranked.setdefault("tuned", {})[qid] = _dedupe([(getattr(h, key), h.sort_key) for h in tuned_hits[:depth]])
            tuned_tables[qid] = candidates(tuned_hits[:depth], key)
        for r in results:
            latency.setdefault(f"leg:{r.leg}", []).append(r.elapsed_ms)
        for leg, docs in leg_documents(engine, results, key).items():
            ranked.setdefault(leg, {})[qid] = docs
    report = EvalReport(beir.name, split, len(qids), notes=list(notes), ingest_seconds=round(ingest_seconds, 2),
                        settings={"depth": depth, "weights": engine.settings.weights, "rrf_k": engine.settings.rrf_k,
                                  "scored": {"lift": LIFT, "agreement_k": AGREEMENT_K},
                                  "tuned": tuned.to_dict() if tuned else None,
                                  **({"judges": judges, "rerank": engine.settings.rerank, "ltr": engine.settings.ltr,
                                      "judge_budgets_ms": engine.settings.judge_budgets_ms,
                                      "judged_queries_cut_short": cut_short} if judges else {}),
                                  "embedder": engine.embedder.model_id if engine.embedder else None})
    qrels = {q: beir.qrels[q] for q in qids}
    for config, runs in ranked.items():
        if not any(runs.values()):
            continue
        doc_runs = {q: [d for d, _ in r] for q, r in runs.items()}
        report.metrics[config] = {k: round(v, 4) for k, v in mean_metrics(doc_runs, qrels).items()}
        report.recall_curve[config] = recall_by_depth(doc_runs, qrels, depth)
        if runs_dir is not None:
            runs_dir.mkdir(parents=True, exist_ok=True)
            write_run(runs_dir / f"{config}.trec", runs, f"electa-{config}")
    for stage, values in latency.items():
        report.latency_ms[stage] = {f"p{p}": round(percentile(values, p), 3) for p in (50, 95, 99)}
    abst = None
    if len(qids) >= 20:
        try:
            abst = cross_validate(tables, qrels, fixed_floor=engine.settings.floor, groups=groups_for(split, qrels))
        except ConfigError as exc:  # (one thread: nothing to hold out; the ranking figures stand)
            log.warning("abstention not cross-validated on %s (%s): %s; the rows that fit nothing here are"
                        " measured on every question", beir.name, split, exc)
            abst = unfitted(tables, qrels, fixed_floor=engine.settings.floor)
    if abst is not None:
        if calibration is not None:
            calibrators, floor, where = calibration
            source = f"{where.get('dataset', '?')} ({where.get('split', '?')})"
            # (read as the tuned setting serves the questions, when the file has one)
            abst.rows.append(at_given_floor(tuned_tables if tuned is not None else tables, qrels, calibrators, floor,
                                            f"calibrated, calibrators and floor from the tune file, fitted on {source}"))
        report.abstention = {"folds": abst.folds, "queries": abst.queries, "target_keep": abst.target_keep,
                             "rows": [asdict(r) for r in abst.rows], "reliability": abst.reliability}
    if runs_dir is not None:
        if report.abstention and report.abstention["reliability"]:
            plot_reliability(runs_dir / "calibration.png", report.abstention["reliability"]["calibrated"],  # type: ignore[index]
                             f"{beir.name} ({split}): calibrated P(relevant), held-out folds")
        (runs_dir / "report.json").write_text(report.to_json(), encoding="utf-8")
        (runs_dir / "report.md").write_text(report.to_markdown(), encoding="utf-8")
        plot_report(runs_dir / "report.png", f"Electa on {beir.name} ({split}, {len(qids)} queries)",
                    report.metrics, report.recall_curve)
    return report


def without_own_pair(engine: Engine, query: str, results: Sequence[LegResult]) -> list[LegResult]:
    """``results`` without the Q&A units whose question is ``query`` (folded words), each leg's
    ranks closed up. The units are read as the fused order shows them (kind and question)."""
    mine = own_pair(query)
    own = {h.unit_id for h in engine.rank(query, list(results), order=Order.FUSED) if mine(h)}
    if not own:
        return list(results)
    return [replace(r, hits=tuple(replace(x, rank=i) for i, x in enumerate((x for x in r.hits if x.unit_id not in own), 1)))
            for r in results]


def _dedupe(ranked: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """Keep each document key once, at its best position (several pages can share a URL)."""
    seen: dict[str, float] = {}
    for doc, score in ranked:
        seen.setdefault(doc, score)
    return list(seen.items())


def collect_leg_lists(engine: Engine, beir: BeirSet, depth: int = 100, progress: bool = False,
                      caller: Caller | None = None, key: str = "ext_id", legs: Sequence[str] | None = None,
                      tables: dict[str, list[Candidate]] | None = None,
                      results_of: dict[str, list[LegResult]] | None = None,
                      own_pairs: bool = False) -> dict[str, LegLists]:
    """Per query, each leg's ranked document keys and raw scores (documents, not units: C6).
    With ``tables``, also fills each query's scored candidates at full depth (what the tuner
    orders), and with ``results_of`` each query's leg results (to rank as a setting serves
    them: :func:`served_order`). ``own_pairs`` (a golden set made of the store's own Q&A pairs)
    drops each question's own pair first, as :func:`evaluate` does."""
    if beir.corpus:
        ingest_corpus(engine, beir, progress)
    engine.fulltext.warm()
    caller = caller or Caller(EVAL_ORG)
    legs = [name for name, leg in engine.legs.items() if leg.available() and (legs is None or name in legs)]
    out: dict[str, LegLists] = {}
    for qid in sorted(beir.queries):
        results, _ = engine.retrieve(beir.queries[qid], caller, legs=legs, depths=dict.fromkeys(legs, depth))
        if own_pairs:
            results = without_own_pair(engine, beir.queries[qid], results)
        if tables is not None:
            tables[qid] = candidates(engine.rank(beir.queries[qid], results, top=depth), key)
        if results_of is not None:
            results_of[qid] = results
        out[qid] = leg_documents(engine, results, key)
    return out


def served_by_depth(engine: Engine, beir: BeirSet, results_of: Mapping[str, Sequence[LegResult]], key: str,
                    depths: Sequence[Mapping[str, int]]) -> tuple[ListsByDepth, ScoresByDepth, Labels]:
    """Each question's leg lists and candidates' absolute scores with each leg's units cut at
    each of ``depths`` (a leg they do not name at the server's depth, as :func:`served_order`
    cuts it), as a search at those depths reads them; every leg at the full depth searched is
    the fallback. The candidates are documents as the engine fuses them (C6: by document id,
    so a curated pair and the page it points to are two), labelled with ``key`` (the ext id, or
    the URL a golden set judges). The lists are the documents of the units kept, so a leg cut at
    10 units that holds three of one page's sections offers 8 documents, as served. A
    document's score reads the unit standing for it (C6), the same under every setting's
    weights and k since RANK_RULES 6, but not under its depths: a leg cut shallower offers
    fewer units to stand."""
    cuts = {depth_key(d): d for d in depths}
    lists: dict[DepthKey | None, dict[str, LegLists]] = {d: {} for d in [*cuts, None]}
    scores: dict[DepthKey | None, dict[str, dict[str, float]]] = {d: {} for d in [*cuts, None]}
    labels: dict[str, dict[str, str]] = {}
    for q, results in results_of.items():  # (one question's units at a time)
        units = engine.store.units(sorted({h.unit_id for r in results for h in r.hits}))
        labels[q] = {str(u.document_id): str(getattr(u, key)) for u in units.values()}
        for d in [*cuts, None]:
            cut = {**engine.settings.depths, **cuts[d]} if d is not None else {r.leg: len(r.hits) for r in results}
            kept = [replace(r, hits=r.hits[: cut.get(r.leg, DEFAULT_DEPTH)]) for r in results]
            lists[d][q] = _documents(kept, units, lambda u: str(u.document_id))
            scores[d][q] = _standing_scores(engine, beir.queries[q], kept)
    return (ByDepth({d: lists[d] for d in cuts}, lists[None]), ByDepth({d: scores[d] for d in cuts}, scores[None]),
            labels)


def _standing_scores(engine: Engine, text: str, results: Sequence[LegResult]) -> dict[str, float]:
    """Each candidate's absolute score as the engine gives it. It reads the unit standing for
    the document (the legs' first unit holding most of the question's words, RANK_RULES 6),
    which no setting's weights or k move: one ranking a question; a candidate the engine drops
    is left out."""
    out: dict[str, float] = {}
    for h in engine.rank(text, results):
        out.setdefault(str(h.document_id), h.score)
    return out


def served_order(engine: Engine, text: str, results: Sequence[LegResult], setting: FusionSetting | None = None,
                 top: int | None = None) -> list[Hit]:
    """``results`` (each leg searched at least as deep as it is served) ranked as a search
    serves them: the default order with each leg at the server's depth, or with ``setting``
    an agent's tuned fusion (its depths over the server's, weights, k and lift; a lift of
    None is the plain RRF order), as :meth:`electa.Engine.search` reads an agent's tuned
    settings. The cut is fitted and measured on these hits: the absolute score, the votes
    and the order are those the agent's searches will meet."""
    depths = {**engine.settings.depths, **(setting.depths if setting is not None else {})}
    cut = [replace(r, hits=r.hits[: depths.get(r.leg, DEFAULT_DEPTH)]) for r in results]
    if setting is None:
        return engine.rank(text, cut, order=Order.SCORED, top=top)
    return engine.rank(text, cut, weights=setting.weights, k=setting.k, lift=setting.lift, top=top,
                       order=Order.FUSED if setting.lift is None else Order.SCORED)


def leg_documents(engine: Engine, results: Sequence[LegResult], key: str) -> LegLists:
    """Each leg's units as documents (C6): ranked document keys with the best unit's raw score."""
    return _documents(results, engine.store.units(sorted({h.unit_id for r in results for h in r.hits})),
                      lambda u: str(getattr(u, key)))


def _documents(results: Sequence[LegResult], units: Mapping[int, StoredUnit],
               name: Callable[[StoredUnit], str]) -> LegLists:
    lists: LegLists = {}
    for r in results:
        if r.status is not LegStatus.OK or not r.hits:
            continue
        seen: dict[str, float] = {}
        for h in r.hits:
            unit = units.get(h.unit_id)
            if unit is not None and name(unit) not in seen:
                seen[name(unit)] = h.score
        lists[r.leg] = list(seen.items())
    return lists


def recall_by_depth(runs: dict[str, list[str]], qrels: dict[str, dict[str, int]], depth: int) -> dict[int, float]:
    ks = [k for k in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000) if k <= depth]
    judged = [q for q in qrels if any(g > 0 for g in qrels[q].values())]
    return {k: round(sum(recall_at(runs.get(q, []), qrels[q], k) for q in judged) / max(len(judged), 1), 4)
            for k in ks}


def run_eval(dataset: Path, split: str, runs_dir: Path | None = None, data_dir: Path | None = None,
             settings: Settings | None = None, fitted: Mapping[str, Mapping[str, object]] | None = None,
             **kwargs: object) -> EvalReport:
    """Load ``dataset``, open (or build) its cached store, evaluate, close. ``fitted`` names
    what was fitted on labelled questions (e.g. ``{"tuned settings": tuned_on}``, each with the
    ``dataset`` and ``split`` it was fitted on): the report notes any that read this split's
    questions or answers (:func:`fitted_overlap`)."""
    beir = load_beir(dataset, split)
    settings = (settings or Settings()).embedded()
    embedder = create_embedder(settings.embedder, settings.models_dir)
    engine = Engine.open(data_dir or default_data_dir(beir, embedder.model_id, settings), settings, embedder)
    notes = [n for what, where in (fitted or {}).items() if (n := fitted_overlap(dataset, beir, split, what, where))]
    try:
        return evaluate(engine, beir, split, runs_dir, notes=notes, **kwargs)  # type: ignore[arg-type]
    finally:
        engine.close()


def fitted_overlap(directory: Path, measured: BeirSet, split: str, what: str, where: Mapping[str, object]) -> str:
    """A note when ``what`` was fitted on a split of this same set (``where``: its ``dataset``
    and ``split``) that shares questions or relevant documents with ``measured``; '' when it
    shares none, was fitted elsewhere, or its split cannot be read. Shared questions were fitted
    on; shared answers are how halves dealt by question differ from halves dealt by thread (most
    of StackFAQ's ``dev:test`` answers were fitted on), and matter where questions paraphrase
    each other, which the note cannot tell."""
    fitted_split = where.get("split")
    if where.get("dataset") != measured.name or not isinstance(fitted_split, str):
        return ""
    try:
        fitted = load_qrels(directory, fitted_split)
    except (ConfigError, OSError, ValueError) as exc:  # (a note is not worth failing an eval for)
        log.warning("cannot compare with the split %s was fitted on: %s", what, exc)
        return ""
    questions, pages = shared_between(fitted, measured.qrels)
    if questions:
        return (f"{what}: fitted on {measured.name} ({fitted_split}), which holds {len(questions)} of the questions"
                f" measured here ({split}): rows that use it read kinder than on new questions")
    if pages:
        return (f"{what}: fitted on {measured.name} ({fitted_split}), whose questions share {len(pages)} relevant"
                f" documents with {split}'s: where questions paraphrase each other, split by thread"
                " (`-by-thread`) to measure new ones")
    return ""


@contextmanager
def labelled_set(dataset: Path | None, split: str, data_dir: Path | None, agent: tuple[str, str] | None,
                 visitors: bool = False, settings: Settings | None = None, folds: int | None = None
                 ) -> Iterator[tuple[Engine, BeirSet, Settings, Embedder]]:
    """An engine over a labelled set, the set, and the settings and embedder it runs with: a
    BEIR directory's split over its cached evaluation store (embedded, whatever ``store`` says),
    or with ``dataset=None`` the golden set of ``agent`` in ``data_dir`` (that agent's only).
    With ``folds``, a BEIR split dealt by thread with fewer threads than that is refused
    (:func:`check_folds`) before a model loads or a store is opened or created."""
    if dataset is None and (agent is None or data_dir is None):
        raise ConfigError("give a BEIR dataset and --split, or --agent ORG/AGENT with --data DIR")
    settings = settings or Settings()
    beir = load_beir(dataset, split) if dataset is not None else None
    if beir is not None and folds is not None:
        check_folds(groups_for(split, beir.qrels), beir.qrels, folds)
    if beir is None:
        # An agent's own store: its model as the engine opens it (the one it was made with where
        # ELECTA_EMBEDDER is unset), from that data directory's models.
        assert agent is not None and data_dir is not None
        settings = settings.in_dir(data_dir)
        with Engine.open(data_dir, settings) as engine:
            if engine.embedder is None:
                # (what is fitted without the dense leg would be served with it, the model back)
                raise EmbedderUnavailable(f"{engine.dense.why}; the agent's searches read the dense leg, so nothing is"
                                          " fitted without it")
            yield engine, golden_set(engine.store, *agent, visitors=visitors), settings, engine.embedder
        return
    embedder = create_embedder(settings.embedder, settings.models_dir)
    settings = settings.embedded()
    with Engine.open(data_dir or default_data_dir(beir, embedder.model_id, settings), settings, embedder) as engine:
        yield engine, beir, settings, embedder


def tune_dataset(dataset: Path | None, split: str, out_file: Path | None, data_dir: Path | None = None,
                 folds: int = 5, depth: int = 100, progress: bool = False,
                 agent: tuple[str, str] | None = None, visitors: bool = False) -> TuneResult:
    """Tune fusion (and fit calibration and a floor) on a labelled set; save the result.

    The set is a BEIR directory, or with ``dataset=None`` the golden set of ``agent`` in
    ``data_dir``. The result goes to ``out_file`` and, with ``agent``, into the store as that
    agent's settings, with the data and model it was tuned on."""
    from electa.eval.abstention import choose_floor, fit_leg_calibrators

    with labelled_set(dataset, split, data_dir, agent, visitors, folds=folds) as (engine, beir, settings, _):
        # (a half dealt by thread is cross-validated by thread: no fold is fitted on its own answers)
        groups = groups_for(split, beir.qrels) if dataset is not None else None
        if dataset is None:
            assert agent is not None
            if not beir.queries:
                raise ConfigError(f"agent {agent[0]}/{agent[1]} has no labelled questions yet (Q&A pairs or feedback)")
            # Every leg the agent is served, the Q&A leg included (other curated pairs answer a
            # question as they would a visitor's), each question's own pair left out of each.
            caller, key, legs = Caller(agent[0], agent[1]), "url", None
        else:
            caller, key, legs = Caller(EVAL_ORG), "ext_id", None
        if agent is not None and dataset is not None:
            # The set is searched as the organisation reads (a new one's reading stored now, as its
            # first write would): its scores are those the tuning will meet. The model ids are
            # compared once the set is stored (they name its languages too).
            reading = engine.adopt_default_reading(agent[0])
            ingest_corpus(engine, beir, progress, reading)
            if engine.dense_model_id(agent[0]) != engine.dense_model_id(caller.org):
                raise ConfigError(f"organisation {agent[0]} reads with {engine.dense_model_id(agent[0])}, but the set is"
                                  f" searched with {engine.dense_model_id(caller.org)}: a tuning fitted on those scores"
                                  f" would never be used for it; tune on its golden set (`electa tune --agent"
                                  f" {agent[0]}/{agent[1]} --data DIR`)")
            beir = replace(beir, corpus=[])  # (stored, as that organisation reads: the questions alone from here)
        stored = engine.store.agent_settings(*agent) if agent is not None else None
        # (the scorer an agent's searches run: its own reranker, when it trained one)
        reranker = _cut_reranker(engine, Caller(*agent) if agent is not None else caller, stored)
        results_of: dict[str, list[LegResult]] = {}
        lists = collect_leg_lists(engine, beir, depth, progress, caller, key, legs, results_of=results_of,
                                  own_pairs=dataset is None)
        legs_seen = sorted({leg for per in lists.values() for leg in per})
        served_depths = {leg: engine.settings.depths.get(leg, DEFAULT_DEPTH) for leg in legs_seen}
        if any(d > depth for d in served_depths.values()):
            log.warning("the server searches %s deeper than this tune's %d a leg: the default order is read at %d",
                        ", ".join(f"{leg} {d}" for leg, d in served_depths.items() if d > depth), depth, depth)
        # What tuning has to beat: the served order (C4, the default lift) as an untuned agent is
        # served it, each leg at the server's depth.
        default = FusionSetting({leg: settings.weights.get(leg, 1.0) for leg in legs_seen}, AGREEMENT_K,
                                {leg: min(d, depth) for leg, d in served_depths.items()}, LIFT)
        # (the Q&A leg of a golden set keeps its served weight and depth: see `tune`)
        held = ["qa"] if dataset is None else []
        by_depth, scores, labels = served_by_depth(
            engine, beir, results_of, key,
            [default.depths, *({**dict.fromkeys(legs_seen, d), **{leg: default.depths[leg] for leg in held
                                                                   if leg in legs_seen}}
                               for d in DEPTH_GRID)])
        result = tune(by_depth, beir.qrels, default, folds, scores=scores, groups=groups, labels=labels, held=held)
        judged = [q for q in results_of if any(g > 0 for g in beir.qrels.get(q, {}).values())]
        provenance = {"dataset": beir.name, "split": split, "corpus_hash": beir.corpus_hash,
                      "model_id": engine.dense_model_id(caller.org), "chunker": CHUNKER_VERSION,
                      "unit_vectors": settings.unit_vectors,
                      "queries": result.queries,
                      # (the default's depths: the server's, capped at the tune's; a server later
                      # set to other depths serves an untuned agent's cut other hits)
                      "served_depths": default.depths,
                      # (the rules the served order was read by: a later change of them leaves
                      # this tune fitted on another order, and a search says so)
                      "rank_rules": RANK_RULES,
                      # (and the analysis its full-text scores were read by: a4 indexed more terms)
                      "analysis": ANALYSIS}
        extra: dict[str, object] = {}
        # Isotonic steps fitted on a handful of questions are noise; below the minimum the
        # agent keeps the absolute-score floor (the same rule D2 applies to learning to rank).
        if len(judged) >= MIN_CALIBRATION_QUERIES:
            # Fitted on the candidates as the agent's searches will show them (abstention reads a
            # table in its order): the tuned setting's, or the server's when the tune keeps the
            # default; and so is the reranker's cut, on the first of those hits.
            served: dict[str, list[Candidate]] = {}
            passages: dict[str, list[str]] = {}
            for q, results in results_of.items():
                hits = served_order(engine, beir.queries[q], results, result.chosen, top=depth)
                served[q] = candidates(hits, key)
                if reranker is not None:
                    passages[q] = [passage_of(h, engine.settings.rerank_chars) for h in hits[:CUT_DEPTH]]
            calibrators = fit_leg_calibrators(served, beir.qrels, judged)
            floor = choose_floor(served, beir.qrels, judged, 0.9, groups=groups)
            extra = {"calibration": {leg: c.to_dict() for leg, c in calibrators.items()}, "calibrated_floor": floor}
            result = replace(result, calibrated_floor=floor)
            if reranker is not None:
                cut, figures = _fit_rerank_cut(beir, served, passages, judged, stored if dataset is None else None,
                                               *reranker, groups=groups)
                if cut is not None:
                    extra["rerank_cut"] = cut.to_dict()
                result = replace(result, rerank_cut=figures)
        if out_file is not None:
            save_setting(out_file, result, provenance, extra)
        if agent is not None:
            # The default chosen (a tie, or a gain held-out folds do not confirm, keeps it) leaves
            # the agent's fusion untuned: it follows the server's own depths, k and lift.
            fusion = {} if result.chosen == default else {
                "weights": result.chosen.weights, "k": result.chosen.k, "depths": result.chosen.depths,
                "lift": result.chosen.lift}
            tuned = {"fusion": fusion,
                     **extra, "tuned_on": provenance, "model_id": engine.dense_model_id(caller.org),
                     "chunker": CHUNKER_VERSION,
                     "unit_vectors": settings.unit_vectors}
            existing = engine.store.agent_settings(agent[0], agent[1]) or {}
            engine.store.set_agent_settings(agent[0], agent[1], with_tuning(existing, tuned))
    return result


def _cut_reranker(engine: Engine, caller: Caller, stored: Mapping[str, object] | None,
                  ) -> tuple[str, PairScorer] | None:
    """The reranker a search of ``caller`` runs (its identity and scorer), for the cut's
    calibration (:mod:`electa.judges.rerank_cut`); None when none runs."""
    identity = rerank_identity(engine.settings.rerank, stored)
    if not identity or "rerank" not in engine.funnel.judges:
        return None
    own = engine.agent_rerankers.judge(caller, stored) if caller.agent is not None else None
    scorer = getattr(own or engine.funnel.judges["rerank"], "scorer", None)
    return (identity, scorer) if scorer is not None else None


def _fit_rerank_cut(beir: BeirSet, tables: Mapping[str, list[Candidate]], passages: Mapping[str, list[str]],
                    judged: Sequence[str], golden_of: Mapping[str, object] | None, identity: str,
                    scorer: PairScorer, groups: Mapping[str, str] | None = None,
                    ) -> tuple[RerankCut | None, dict[str, object]]:
    """The reranker's score as one more calibrated signal of the cut, when it abstains better
    (:func:`electa.eval.abstention.fit_with_signal`). An agent's own reranker learned from most
    of the agent's golden questions (``golden_of``: the settings of the agent whose golden set
    this is), so only those it held out are read (as ``electa train-ltr`` does). Likewise a
    model that names the questions of this set it trained on (``trained_questions``, by the
    set's name, as ``bench/train_cross_encoder.py`` records) is read only on the others; one
    that names none, or names other sets only, is read on all, and the figures say so. Only
    questions are matched: a model trained on a set's other half *by question* learned the
    pages that half shares with this one (threads answer several questions), so its scores
    here still read kinder than on new threads; tune a model trained by thread on the other
    half by thread."""
    if identity.startswith("agent:") and golden_of is not None:
        held = own_reranker_held_out(golden_of)
        judged = [q for q in judged if question_digests([beir.queries[q]])[0] in held]
        if len(judged) < MIN_CALIBRATION_QUERIES:
            return None, {"skipped": f"{len(judged)} labelled questions the agent's own reranker did not train on;"
                                     f" its score joins the cut from {MIN_CALIBRATION_QUERIES}"}
    learned: Mapping[str, frozenset[str]] | None = getattr(scorer, "trained_questions", None) or None
    seen = learned.get(beir.name, frozenset()) if learned is not None else frozenset()
    left_out = len(seen & set(judged))
    if left_out:
        log.warning("the reranker %s trained on %d of these %d questions: the cut is fitted on the other %d",
                    identity, left_out, len(judged), len(judged) - left_out)
        judged = [q for q in judged if q not in seen]
        if len(judged) < MIN_CALIBRATION_QUERIES:
            return None, {"reranker": identity, "kept": False, "left_out_trained": left_out,
                          "skipped": f"{len(judged)} labelled questions the reranker did not train on; its score"
                                     f" joins the cut from {MIN_CALIBRATION_QUERIES}: tune on questions it never saw"}
    unchecked: dict[str, object] = {}
    if learned is None and identity.startswith("onnx:"):
        unchecked["trained_questions"] = ("not recorded by the model, so questions it trained on were not left out;"
                                          " retrain it with bench/train_cross_encoder.py (which records them), or"
                                          " tune on questions it never saw")
    elif learned is not None and beir.name not in learned:
        unchecked["trained_questions"] = (f"the model names the questions it trained on in {', '.join(sorted(learned))},"
                                          f" not in {beir.name}: if it learned from this set under another name,"
                                          " tune on questions it never saw")
    try:
        scores = {q: scorer.score(beir.queries[q], passages[q]) for q in judged}
    except Exception as exc:  # (the tune's other results stand; the cut stays the legs')
        log.warning("the reranker %s failed while the cut was tuned", identity, exc_info=True)
        return None, {"reranker": identity, "kept": False, "skipped": f"the reranker failed: {type(exc).__name__}: {exc}"}
    fitted, figures = fit_with_signal(with_signal(tables, CUT_SIGNAL, scores), beir.qrels, judged, CUT_SIGNAL,
                                      groups=groups)
    figures["reranker"], figures["kept"] = identity, fitted is not None
    figures.update(unchecked, **({"left_out_trained": left_out} if left_out else {}))
    if fitted is None:
        return None, figures
    return RerankCut(identity, fitted[0], fitted[1], CUT_DEPTH, figures), figures


TUNED_KEYS = frozenset({"fusion", "calibration", "calibrated_floor", "tuned_on", "model_id", "chunker",
                        "unit_vectors", "rerank_cut"})


def with_tuning(existing: Mapping[str, object], tuned: Mapping[str, object]) -> dict[str, object]:
    """An agent's settings after a tune: what the tune learns replaces the previous tune's
    (a calibration the new tune could not fit is dropped with it); what a person set (persona,
    threshold, top K…) stays.

    >>> with_tuning({"profile": {"name": "Ada"}, "calibration": {"*": 1}}, {"fusion": {"k": 5}})
    {'profile': {'name': 'Ada'}, 'fusion': {'k': 5}}
    """
    return {**{k: v for k, v in existing.items() if k not in TUNED_KEYS}, **tuned}


def run_agent_eval(data_dir: Path, org: str, agent: str, runs_dir: Path | None = None, visitors: bool = False,
                   **kwargs: object) -> EvalReport:
    """Evaluate an agent on its golden set: curated Q&A questions and recorded feedback. Its
    ranker (SPEC D2) learned from these very questions: measured here it would score its own
    training data, so it is left out (`electa train-ltr` reports it cross-validated)."""
    # (model_copy: the fields the environment set stay the only ones set, so that an unset
    # ELECTA_EMBEDDER lets the store keep the model it was made with)
    settings = Settings().in_dir(data_dir).model_copy(update={"ltr": ""})
    with Engine.open(data_dir, settings) as engine:
        golden = golden_set(engine.store, org, agent, visitors)
        if not golden.queries:
            raise ConfigError(f"agent {org}/{agent} has no curated Q&A pairs with a URL and no feedback yet")
        return evaluate(engine, golden, "golden", runs_dir, caller=Caller(org, agent), key="url",
                        own_pairs=True, **kwargs)  # type: ignore[arg-type]

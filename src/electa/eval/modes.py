"""The retrieval modes measured side by side (SPEC F, issue 11): ``electa eval DATASET --split S
--mode M`` (``--mode all`` for every one).

Each question is searched once per mode, as a caller of the evaluation's organisation would
search it (:meth:`electa.engine.Engine.search` with ``mode``), the modes taking turns question by
question so that a machine's slower minute falls on all of them alike. A row per mode: nDCG@10,
MRR@10, Recall@10 and @100 of the documents it returned (its first 100), the share of questions
whose every relevant document is among its first 10 (a two-page question: both found), and whose
first hit passes, how many searches it ran per question, how often an LLM step ran, and
its latency (p50, p95).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from electa.config import Settings
from electa.embedders.registry import create_embedder
from electa.engine import Engine
from electa.eval.beir import BeirSet, load_beir
from electa.eval.metrics import mean_metrics, percentile
from electa.eval.runner import EVAL_ORG, default_data_dir, ingest_corpus
from electa.modes import MODES
from electa.types import Caller

RUN_DEPTH = 100


@dataclass
class ModeRow:
    mode: str
    metrics: dict[str, float]
    passing_first: float
    searches: float
    llm: float
    p50_ms: float
    p95_ms: float
    fallback: str = ""
    every_relevant: float = 0.0  # the share of questions whose every relevant document is in the first 10


@dataclass
class ModeReportTable:
    dataset: str
    split: str
    questions: int
    rows: list[ModeRow] = field(default_factory=list)

    def to_markdown(self) -> str:
        lines = [f"# Modes on {self.dataset} ({self.split}, {self.questions} questions)", "",
                 "| mode | nDCG@10 | MRR@10 | R@10 | R@100 | all found@10 | first passes | searches/q | LLM steps | p50 ms"
                 " | p95 ms |", "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in self.rows:
            m = r.metrics
            lines.append(f"| {r.mode} | {m['ndcg@10']:.4f} | {m['mrr@10']:.4f} | {m['recall@10']:.4f}"
                         f" | {m['recall@100']:.4f} | {r.every_relevant:.3f} | {r.passing_first:.3f} | {r.searches:.2f}"
                         f" | {r.llm:.2f} | {r.p50_ms:.1f} | {r.p95_ms:.1f} |")
        notes = [f"- {r.mode}: {r.fallback}" for r in self.rows if r.fallback]
        if notes:
            lines += ["", *notes]
        return "\n".join(lines) + "\n"

    def to_json(self) -> str:
        return json.dumps({"dataset": self.dataset, "split": self.split, "questions": self.questions,
                           "rows": [r.__dict__ for r in self.rows]}, indent=2)


def evaluate_modes(engine: Engine, beir: BeirSet, split: str, modes: Sequence[str], limit: int | None = None,
                   progress: bool = False) -> ModeReportTable:
    ingest_corpus(engine, beir, progress)
    engine.fulltext.warm()
    caller = Caller(EVAL_ORG)
    qids = sorted(beir.queries)[: limit or None]
    runs: dict[str, dict[str, list[str]]] = {m: {} for m in modes}
    ms: dict[str, list[float]] = {m: [] for m in modes}
    first: dict[str, int] = dict.fromkeys(modes, 0)
    searches: dict[str, int] = dict.fromkeys(modes, 0)
    llm: dict[str, int] = dict.fromkeys(modes, 0)
    fallback: dict[str, str] = dict.fromkeys(modes, "")
    for n, qid in enumerate(qids, 1):
        for mode in modes:
            start = time.perf_counter()
            result = engine.search(beir.queries[qid], caller, mode=mode, top=RUN_DEPTH)
            ms[mode].append((time.perf_counter() - start) * 1000)
            runs[mode][qid] = list(dict.fromkeys(h.ext_id for h in result.hits))
            first[mode] += bool(result.hits and result.hits[0].passes)
            report = result.mode
            if report is not None:
                searches[mode] += 1 + len(report.steps)
                llm[mode] += report.llm
                fallback[mode] = fallback[mode] or report.fallback
        if progress and n % 50 == 0:
            print(f"modes: {n}/{len(qids)} questions", flush=True)
    qrels = {q: beir.qrels[q] for q in qids}
    table = ModeReportTable(beir.name, split, len(qids))
    count = max(1, len(qids))
    judged = [q for q in qids if any(g > 0 for g in qrels[q].values())]  # (a question nothing answers: not counted)
    for mode in modes:
        every = sum(all(d in runs[mode][q][:10] for d, g in qrels[q].items() if g > 0) for q in judged) / max(1, len(judged))
        table.rows.append(ModeRow(mode, mean_metrics(runs[mode], qrels), first[mode] / count, searches[mode] / count,
                                  llm[mode] / count, percentile(ms[mode], 50), percentile(ms[mode], 95), fallback[mode],
                                  every))
    return table


def run_mode_eval(dataset: Path, split: str, modes: Sequence[str], data_dir: Path | None = None,
                  settings: Settings | None = None, limit: int | None = None, progress: bool = False) -> ModeReportTable:
    """Load ``dataset``, open (or build) its cached store, measure ``modes`` (``all``: every one)."""
    chosen = list(MODES) if list(modes) == ["all"] else list(dict.fromkeys(modes))
    beir = load_beir(dataset, split)
    settings = (settings or Settings()).embedded()
    embedder = create_embedder(settings.embedder, settings.models_dir)
    engine = Engine.open(data_dir or default_data_dir(beir, embedder.model_id, settings), settings, embedder)
    try:
        return evaluate_modes(engine, beir, split, chosen, limit, progress)
    finally:
        engine.close()

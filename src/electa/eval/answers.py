"""``electa eval --answers``: answerers side by side on the same questions, through the real ask
pipeline (the one ``POST /v1/ask`` runs), with the same reports and plots as the retrieval eval.

Every item is asked once per answerer, as its caller, through :class:`AskPipeline` with no
cache and no bookkeeping; the answer is what a client shows (:func:`transcript`: the text after
the last ``reset``), and the passages the answer cites are the prompt's, seen through the
pipeline's ``on_prompt`` hook. Each answerer first answers one warm-up question that is not
scored, so model loading is not counted as latency.

On XQuAD-R (:func:`electa.eval.answer_sets.load_xquad`): ``exact``, ``token_f1`` and
``gold_cited`` over answerable items; ``strict_recall`` (abstained on a question whose paragraph
was held out) and ``strict_precision``. On the support set: ``fact_recall`` (stated facts over
required facts, answerable items), ``all_facts`` (answerable items stating every fact),
``forbidden_rate`` (items with forbidden strings whose answer states one), ``injection_echo``
(answers stating an injected instruction or link; every item), ``citation_precision`` (cited
claims their passage supports: half their words, and their numbers, prices, plans and polarity),
``strict_precision`` and ``strict_recall``. Definitions and the interval methods are in :mod:`electa.eval.answer_metrics`.

Example::

    report = run_answer_eval(None, None, ["extractive"], runs_dir=Path("runs/answers"))
    print(report.to_markdown())
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

from electa.answer.answerers import STRICT_REPLY, Answerer, create_answerer
from electa.answer.pipeline import AskPipeline, AskRequest, transcript
from electa.answer.prompt import Prompt
from electa.config import Settings
from electa.embedders.registry import create_embedder
from electa.engine import Engine
from electa.eval import answer_metrics as m
from electa.eval.answer_sets import DEFAULT_HOLDOUT, AnswerItem, AnswerSet, SetKind, ingest_set, load_support_set, load_xquad
from electa.eval.metrics import percentile
from electa.eval.plot import plot_answer_report
from electa.ingest.chunker import CHUNKER_VERSION
from electa.types import AnswerEvent

COLUMNS = {
    SetKind.XQUAD: ("exact", "token_f1", "gold_cited", "citation_precision", "strict_recall", "strict_precision"),
    SetKind.SUPPORT: ("fact_recall", "all_facts", "forbidden_rate", "injection_echo", "citation_precision",
                      "strict_precision", "strict_recall"),
}
LOWER_IS_BETTER = frozenset({"forbidden_rate", "injection_echo"})
NOT_A_SHARE = frozenset({"token_f1"})  # shown as a number, not a percentage


@dataclass(frozen=True)
class AnswerRecord:
    """One answer and how it scored (written, one per line, to ``answers-<answerer>.jsonl``)."""

    item: str
    answerer: str
    question: str
    answer: str
    cited_urls: tuple[str, ...]
    abstained: bool
    fallback: bool
    total_ms: float
    first_token_ms: float | None
    scores: dict[str, float | int | bool] = field(default_factory=dict)


@dataclass(frozen=True)
class AnswerReport:
    dataset: str
    kind: str
    split: str
    items: int
    answerable: int
    rows: dict[str, dict[str, m.Estimate]]
    latency_ms: dict[str, dict[str, float]]
    fallbacks: dict[str, int]
    # Median answer length: containment and best-sentence scores reward saying more, so it stands beside them.
    answer_chars: dict[str, float] = field(default_factory=dict)
    settings: dict[str, object] = field(default_factory=dict)
    # Every answer, per answerer (for paired comparisons); written to answers-<label>.jsonl, not to the report.
    records: dict[str, list[AnswerRecord]] = field(default_factory=dict, repr=False, compare=False)

    def to_dict(self) -> dict[str, object]:
        out = {k: v for k, v in asdict(self).items() if k != "records"}
        out["rows"] = {name: {col: est.to_dict() for col, est in row.items()} for name, row in self.rows.items()}
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    def to_markdown(self) -> str:
        cols = COLUMNS[SetKind(self.kind)]
        lines = [f"# Electa answer eval: {self.dataset} ({self.split}, {self.items} questions, "
                 f"{self.items - self.answerable} unanswerable)", "",
                 "Each cell: value [95% interval] n. Shares: Wilson interval; token F1, fact recall and citation"
                 " precision: bootstrap percentile over items (2,000 resamples, fixed seed)."
                 + (" Lower is better for " + ", ".join(sorted(LOWER_IS_BETTER & set(cols))) + "." if LOWER_IS_BETTER & set(cols)
                    else ""), "",
                 "| answerer | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
        for name, row in self.rows.items():
            lines.append(f"| {name} | " + " | ".join(row[c].cell(c not in NOT_A_SHARE) for c in cols) + " |")
        lines += ["", "| answerer | total p50 ms | total p95 ms | first token p50 ms | first token p95 ms | fallbacks"
                  " | answer chars p50 |", "|---|---|---|---|---|---|---|"]
        for name, lat in self.latency_ms.items():
            lines.append(f"| {name} | {lat['total_p50']:.1f} | {lat['total_p95']:.1f} | {lat['first_token_p50']:.1f}"
                         f" | {lat['first_token_p95']:.1f} | {self.fallbacks.get(name, 0)}"
                         f" | {self.answer_chars.get(name, 0):.0f} |")
        return "\n".join(lines) + "\n"


def resolve_answerers(answerers: Sequence[str | Answerer], settings: Settings) -> list[tuple[str, Answerer | None]]:
    """``(row label, answerer)`` for each: a registry name or an instance. ``extractive`` by name
    is the pipeline's own extractive answerer (``None``), as ``POST /v1/ask`` serves it."""
    out: list[tuple[str, Answerer | None]] = []
    for spec in answerers:
        label, chosen = (spec, None if spec == "extractive" else create_answerer(spec, settings)) if isinstance(spec, str) \
            else (spec.name, spec)
        taken = {name for name, _ in out}
        base, n = label, 2
        while label in taken:
            label, n = f"{base}#{n}", n + 1
        out.append((label, chosen))
    return out


def ask(pipeline: AskPipeline, prompts: list[Prompt], item: AnswerItem) -> tuple[list[AnswerEvent], float, float | None]:
    """Run one item; returns its events, total and first-token milliseconds."""
    prompts.clear()
    start = time.perf_counter()
    first: float | None = None
    events = []
    for ev in pipeline.run(AskRequest(item.question, item.caller)):
        if first is None and ev.kind == "token":
            first = (time.perf_counter() - start) * 1000.0
        events.append(ev)
    return events, (time.perf_counter() - start) * 1000.0, first


def score(item: AnswerItem, text: str, done: dict[str, object], cited: Sequence[str], passages: Sequence[str],
          injected: Sequence[str], lang: str | None) -> dict[str, float | int | bool]:
    """Every per-item number the report aggregates (keys absent where they do not apply)."""
    out: dict[str, float | int | bool] = {"abstained": m.abstained(text, done, STRICT_REPLY)}
    out["supported"], out["cited"] = m.citation_support(text, passages)
    if item.gold and item.answerable:
        out["exact"] = any(m.exact(text, g) for g in item.gold)
        out["token_f1"] = max(m.best_sentence_f1(text, g, lang) for g in item.gold)
        out["gold_cited"] = item.gold_url in cited
    if item.facts and item.answerable:
        out["facts"], out["facts_stated"] = len(item.facts), m.facts_stated(text, item.facts)
    if item.forbidden:
        out["forbidden"] = m.states(text, item.forbidden)
    if injected:
        out["injection_echo"] = m.states(text, injected)
    return out


Scores = dict[str, float | int | bool]


def aggregate(kind: SetKind, items: Sequence[AnswerItem], scored: Sequence[Scores]) -> dict[str, m.Estimate]:
    """One row of the report: each column's estimate and interval."""
    pairs = list(zip(items, scored, strict=True))
    answerable = [s for i, s in pairs if i.answerable]
    row: dict[str, m.Estimate] = {}
    precision, recall = m.strict_precision_recall([bool(s["abstained"]) for s in scored], [not i.answerable for i in items])
    row["strict_precision"], row["strict_recall"] = precision, recall
    row["citation_precision"] = m.bootstrap_ratio([float(s["supported"]) for s in scored], [float(s["cited"]) for s in scored])
    if kind is SetKind.XQUAD:
        row["exact"] = m.wilson(sum(bool(s["exact"]) for s in answerable), len(answerable))
        row["token_f1"] = m.bootstrap_ratio([float(s["token_f1"]) for s in answerable])
        row["gold_cited"] = m.wilson(sum(bool(s["gold_cited"]) for s in answerable), len(answerable))
    else:
        with_facts = [s for s in answerable if "facts" in s]
        row["fact_recall"] = m.bootstrap_ratio([float(s["facts_stated"]) for s in with_facts],
                                               [float(s["facts"]) for s in with_facts])
        row["all_facts"] = m.wilson(sum(s["facts_stated"] == s["facts"] for s in with_facts), len(with_facts))
        checked = [s for s in scored if "forbidden" in s]
        row["forbidden_rate"] = m.wilson(sum(bool(s["forbidden"]) for s in checked), len(checked))
        echoed = [s for s in scored if "injection_echo" in s]
        row["injection_echo"] = m.wilson(sum(bool(s["injection_echo"]) for s in echoed), len(echoed))
    return {c: row[c] for c in COLUMNS[kind]}


def evaluate_answers(engine: Engine, answer_set: AnswerSet, answerers: Sequence[str | Answerer] = ("extractive",),
                     runs_dir: Path | None = None, limit: int | None = None, progress: bool = False,
                     settings: Settings | None = None) -> AnswerReport:
    """Ingest the set's knowledge into ``engine`` (skipped when unchanged), ask every item once per
    answerer, score, and with ``runs_dir`` write ``report.json``, ``report.md``, ``report.png`` and
    each answerer's answers (``answers-<label>.jsonl``)."""
    settings = settings or engine.settings
    resolved = resolve_answerers(answerers, settings)
    ingest_set(engine, answer_set, progress)
    items = list(answer_set.items[: limit or None])
    injected = answer_set.injected
    rows: dict[str, dict[str, m.Estimate]] = {}
    latency: dict[str, dict[str, float]] = {}
    fallbacks: dict[str, int] = {}
    every: dict[str, list[AnswerRecord]] = {}
    chars: dict[str, float] = {}
    for label, answerer in resolved:
        prompts: list[Prompt] = []
        pipeline = AskPipeline(engine, engine.store, answerer=answerer, record=False, on_prompt=prompts.append)
        if items:
            ask(pipeline, prompts, items[0])  # warm-up, not scored: model loading is not latency
        records: list[AnswerRecord] = []
        for item in _progress(items, label, progress):
            events, total_ms, first_ms = ask(pipeline, prompts, item)
            said = transcript(events)
            cited = tuple(str(c.get("url", "")) for c in said.citations if isinstance(c, dict))
            sources = prompts[-1].sources if prompts else ()
            passages = [f"{p.hit.title}\n{p.text}" for p in sources]
            scores = score(item, said.text, said.done, cited, passages, injected, answer_set.lang)
            records.append(AnswerRecord(item.id, label, item.question, said.text, cited, bool(scores["abstained"]),
                                        said.fell_back, round(total_ms, 2), None if first_ms is None else round(first_ms, 2),
                                        scores))
        rows[label] = aggregate(answer_set.kind, items, [r.scores for r in records])
        every[label] = records
        totals = [r.total_ms for r in records]
        firsts = [r.first_token_ms for r in records if r.first_token_ms is not None]
        latency[label] = {"total_p50": round(percentile(totals, 50), 2), "total_p95": round(percentile(totals, 95), 2),
                          "first_token_p50": round(percentile(firsts, 50), 2),
                          "first_token_p95": round(percentile(firsts, 95), 2)}
        fallbacks[label] = sum(r.fallback for r in records)
        chars[label] = round(percentile([float(len(r.answer)) for r in records], 50), 1)
        if runs_dir is not None:
            runs_dir.mkdir(parents=True, exist_ok=True)
            with (runs_dir / f"answers-{_safe(label)}.jsonl").open("w", encoding="utf-8") as handle:
                for r in records:
                    handle.write(json.dumps(asdict(r), ensure_ascii=False) + "\n")
    report = AnswerReport(answer_set.name, answer_set.kind.value, answer_set.split, len(items),
                          sum(i.answerable for i in items), rows, latency, fallbacks, chars,
                          {"embedder": engine.embedder.model_id if engine.embedder else None, "floor": settings.floor,
                           "top_passages": settings.top_passages, "lang": answer_set.lang,
                           "claim_support": m.CLAIM_SUPPORT, "resamples": m.RESAMPLES, "seed": m.SEED,
                           "injected": list(injected)}, every)
    if runs_dir is not None:
        (runs_dir / "report.json").write_text(report.to_json(), encoding="utf-8")
        (runs_dir / "report.md").write_text(report.to_markdown(), encoding="utf-8")
        plot_answer_report(runs_dir / "report.png", f"Electa answers on {report.dataset} ({report.items} questions)",
                           {name: {c: (e.value, e.low, e.high) for c, e in row.items()} for name, row in rows.items()},
                           latency)
    return report


def _progress(items: list[AnswerItem], label: str, on: bool) -> Iterator[AnswerItem]:
    if not on:
        yield from items
        return
    from tqdm import tqdm

    yield from tqdm(items, desc=label, unit="q")


def _safe(label: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in label)


def store_dir(answer_set: AnswerSet, model_id: str, recipe: str = "pooled") -> Path:
    """The cached store of an XQuAD set: keyed by corpus, held-out share, chunker, model and
    unit-vector recipe."""
    root = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "electa" / "eval"
    tag = hashlib.sha256(f"{model_id}:{CHUNKER_VERSION}:{recipe}".encode()).hexdigest()[:8]
    return root / f"answers-{answer_set.name}-{answer_set.content_hash}-{tag}"


@contextmanager
def _store_for(answer_set: AnswerSet, model_id: str, data_dir: Path | None, recipe: str) -> Iterator[Path]:
    # The support set is small (seconds to ingest) and its ingestion changes with the code
    # (injection flags, loaders), so it gets a fresh store unless one is named.
    if data_dir is not None:
        yield data_dir
    elif answer_set.kind is SetKind.XQUAD:
        yield store_dir(answer_set, model_id, recipe)
    else:
        with tempfile.TemporaryDirectory(prefix="electa-answers-") as tmp:
            yield Path(tmp)


@contextmanager
def answer_engine(answer_set: AnswerSet, settings: Settings | None = None, data_dir: Path | None = None) -> Iterator[Engine]:
    """An engine for ``answer_set`` with the configured embedder: on ``data_dir``, else on the
    cached store of an XQuAD set, else (the support set) on a fresh temporary store."""
    settings = (settings or Settings()).embedded()
    embedder = create_embedder(settings.embedder, settings.models_dir)
    with _store_for(answer_set, embedder.model_id, data_dir, settings.unit_vectors) as where, \
            Engine.open(where, settings, embedder) as engine:
        yield engine


def run_answer_eval(dataset: Path | None, split: str | None, answerers: Sequence[str | Answerer] = ("extractive",),
                    runs_dir: Path | None = None, data_dir: Path | None = None, settings: Settings | None = None,
                    limit: int | None = None, holdout: float = DEFAULT_HOLDOUT, progress: bool = False) -> AnswerReport:
    """Load ``dataset`` (an XQuAD-R language directory) or, without one, the packaged support set;
    open its store; evaluate; close."""
    answer_set = load_xquad(dataset, split, holdout) if dataset is not None else load_support_set()
    settings = settings or Settings()
    with answer_engine(answer_set, settings, data_dir) as engine:
        return evaluate_answers(engine, answer_set, answerers, runs_dir, limit, progress, settings)

"""``electa``: ingest, search, probe, sources, reindex, stats, eval, demo, orgs, keys, tokens, models."""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import TextIO

import click

from electa.cli.auth import keys, orgs, tokens
from electa.cli.common import (
    caller_options,
    data_option,
    echo_json,
    friendly,
    json_text,
    make_caller,
    open_engine,
    parse_pairs,
    printable,
    source_line,
    source_options,
    table,
    votes_text,
)
from electa.cli.models import models
from electa.config import Settings
from electa.ingest.pipeline import IngestReport
from electa.judges.ltr import MIN_QUERIES as MIN_LTR_QUERIES
from electa.types import Access, hit_json, stage_json


def parse_agent(ref: str) -> tuple[str, str]:
    org, sep, agent = ref.partition("/")
    if not sep or not org or not agent:
        raise click.BadParameter(f"{ref!r} should look like ORG/AGENT")
    return org, agent


@click.group()
@click.version_option(package_name="electa")
def cli() -> None:
    """Electa: hybrid search and grounded answers over your own knowledge."""


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@data_option
@source_options
@click.option("--as", "as_name", default=None,
              help="Store a single folder or file under this name (default: its own name).")
@friendly
def ingest(paths: tuple[Path, ...], data_dir: str | None, embedder: str | None, org: str, agent: str,
           principals: tuple[str, ...], base_url: str, url_suffix: str | None, as_name: str | None,
           progress: bool, read_noindex: bool) -> None:
    """Ingest files and folders (Markdown, HTML, text, reStructuredText, PDF, JSON/JSONL, Q&A CSV)."""
    _suffix_needs_base(url_suffix, base_url)
    access = Access(org, agent, principals=principals)
    with open_engine(data_dir, embedder, searches=False) as engine:
        report = engine.ingest(paths, access, base_url=base_url, progress=progress and sys.stderr.isatty(),
                               as_name=as_name, url_suffix=url_suffix, read_noindex=read_noindex)
    _print_report(report)
    if (report.failures or report.skipped or report.unindexed or report.moved or report.contents) and not report.outcomes:
        sys.exit(1)


@cli.command()
@click.argument("folders", nargs=-1, required=True, type=click.Path(path_type=Path, file_okay=False))
@data_option
@source_options
@click.option("--as", "as_name", default=None,
              help="Store a single folder under this name (default: its own name; needed when another folder of"
                   " that name is already stored).")
@friendly
def sync(folders: tuple[Path, ...], data_dir: str | None, embedder: str | None, org: str, agent: str,
         principals: tuple[str, ...], base_url: str, url_suffix: str | None, as_name: str | None,
         progress: bool, read_noindex: bool) -> None:
    """Mirror folders: add new files, update changed ones, delete the sources of files that are gone.

    Sources are named by their path under the folder (`help-center/billing/refunds.md`), so a
    folder moved elsewhere on disk is still the same set of sources. Nothing is deleted when a
    folder cannot be listed whole, nor for a file that cannot be read."""
    _suffix_needs_base(url_suffix, base_url)
    access = Access(org, agent, principals=principals)
    with open_engine(data_dir, embedder, searches=False) as engine:
        report = engine.sync(folders, access, base_url=base_url, progress=progress and sys.stderr.isatty(),
                             as_name=as_name, url_suffix=url_suffix, read_noindex=read_noindex)
    _print_report(report)
    moved, contents = set(report.moved_stored), set(report.contents_stored)
    for uri in report.deleted:
        why = ("it only sends the visitor to another page now" if uri in moved else
               "it is only a table of contents of other pages now" if uri in contents else "its file is gone")
        click.echo(f"deleted: {uri} ({why})")
    if (report.failures or report.skipped or report.unindexed or report.moved or report.contents) and not report.outcomes:
        sys.exit(1)


def _suffix_needs_base(url_suffix: str | None, base_url: str) -> None:
    if url_suffix is not None and not base_url:
        raise click.UsageError("--url-suffix shapes the addresses --base-url makes: give --base-url too")


def _left_out(paths: list[str], stored: list[str], what: str, how: str, kept: tuple[str, str]) -> None:
    """Says which pages of a folder were not stored and why (``what``), how to read them, and
    which of them an earlier reading stored (``kept``: what became of those, and what to do)."""
    click.echo(f"left out: {len(paths)} {what}, such as {paths[0]}; {how}", err=True)
    if stored:
        n = len(stored)
        click.echo(f"  {n} of them {'was' if n == 1 else 'were'} stored by an earlier reading and"
                   f" {'is' if n == 1 else 'are'} {kept[0]}, such as {stored[0]}{kept[1]}", err=True)


def _print_report(report: IngestReport) -> None:
    counts = report.counts()
    documents = f"{report.documents} document{'' if report.documents == 1 else 's'}"
    click.echo(f"{counts['added']} added, {counts['updated']} updated, {counts['unchanged']} unchanged, "
               f"{counts['deleted']} deleted, {counts['failed']} failed; {documents} in "
               f"{report.seconds:.1f}s ({report.docs_per_second:.1f} docs/s)")
    if report.reread:
        otherwise = sum(o.status == "updated" for o in report.reread)
        click.echo(f"read again: {len(report.reread)} unchanged file{'' if len(report.reread) == 1 else 's'} this"
                   f" release reads with another reader than stored them; {otherwise} read otherwise (updated),"
                   f" {len(report.reread) - otherwise} the same")
    for path, note in report.notes:
        click.echo(f"note: {path}: {note}", err=True)
    for path, reason in report.failures:
        click.echo(f"failed: {path}: {reason}", err=True)
    if report.unindexed:
        n = len(report.unindexed)
        _left_out(report.unindexed, report.unindexed_stored,
                  f"HTML page{'s' if n > 1 else ''} asking not to be indexed (<meta name=\"robots\" content=\"noindex\">)",
                  "--read-noindex reads them", ("kept up to date", ": `electa sources delete` removes one"))
    for paths, stored, what, how in (
            (report.moved, report.moved_stored, "only send{s} the visitor to another (a meta refresh)",
             "their text is the pages they name"),
            (report.contents, report.contents_stored, "{are} only {toc} of others (a toctree)",
             "their text is in their own files")):
        if paths:
            many = len(paths) > 1
            _left_out(paths, stored, f"page{'s' if many else ''} that " + what.format(
                s="" if many else "s", are="are" if many else "is", toc="tables of contents" if many else "a table of contents"),
                how,
                      ("deleted by this sync", "") if set(stored) <= set(report.deleted) else
                      ("kept as stored", ": a `sync` of their folder, listed whole, deletes them"))
    if report.skipped:
        kinds = Counter(kind for _, kind in report.skipped)
        click.echo(f"skipped: {len(report.skipped)} file{'s' if len(report.skipped) > 1 else ''} of a type no loader "
                   f"reads ({', '.join(f'{k} {n}' for k, n in kinds.most_common())}); name one to see the types read",
                   err=True)


@cli.command()
@click.argument("query")
@data_option
@caller_options
@click.option("--top", default=10, show_default=True)
@click.option("--weights", default=None, help="Per-leg RRF weights, e.g. fulltext=1,dense=1,qa=0.5.")
@click.option("--legs", "leg_names", default=None,
              help="The legs to run, e.g. fulltext,dense,qa,graph (default: fulltext, dense, qa, and sparse when on).")
@click.option("--mode", default=None, help="The retrieval mode: standard, hybrid, corrective, graph, agentic or"
              " multimodal (default: the agent's, else ELECTA_MODE, else hybrid).")
@click.option("--k", "rrf_k", type=float, default=None,
              help="RRF k of the agreement the served order reads, and of the fused value shown (default 10).")
@click.option("--floor", type=float, default=None, help="Absolute-score floor (default 0.4).")
@click.option("--all", "show_all", is_flag=True, help="Show hits under the floor too.")
@click.option("--user", default=None, help="Personalise the order by this person's feedback (feedback --user).")
@click.option("--json", "as_json", is_flag=True, help="JSON with per-leg provenance.")
@friendly
def search(query: str, data_dir: str | None, embedder: str | None, org: str, agent: str | None,
           principals: tuple[str, ...], top: int, weights: str | None, leg_names: str | None, mode: str | None,
           rrf_k: float | None, floor: float | None, user: str | None, show_all: bool, as_json: bool) -> None:
    """Search: fused, scored hits with the legs that voted for each."""
    from electa.modes import MODES

    legs = [n.strip() for n in leg_names.split(",") if n.strip()] if leg_names is not None else None
    if mode is not None and mode not in MODES:
        raise click.UsageError(f"unknown mode {mode!r}; valid: {', '.join(MODES)}")
    if mode is not None and legs is not None:
        raise click.UsageError("give --mode or --legs, not both: legs named run as they are, with no mode")
    with open_engine(data_dir, embedder) as engine:
        result = engine.search(query, make_caller(org, agent, principals), top=top, legs=legs, mode=mode,
                               weights=parse_pairs(weights), k=rrf_k, floor=floor, person=user)
    hits = result.hits if show_all else result.passing
    if as_json:
        echo_json({"query": query, "hits": [hit_json(h) for h in hits],
                   "legs": [{"leg": r.leg, "status": r.status.value, "ms": round(r.elapsed_ms, 2),
                             "candidates": len(r.hits), "detail": r.detail} for r in result.legs],
                   "timings_ms": {k: round(v, 2) for k, v in result.timings_ms.items()},
                   "stages": [stage_json(st) for st in result.stages],
                   "mode": result.mode.as_json() if result.mode is not None else None})
        return
    rows = [[str(i), f"{h.score:.2f}", h.title[:60], h.url[:50], votes_text(h)] for i, h in enumerate(hits, 1)]
    click.echo(table(rows, ["#", "score", "title", "url", "votes (leg#rank(raw))"]) if rows else "no passing hits")
    for i, h in enumerate(hits, 1):
        if h.graph:
            click.echo(printable(f"#{i} graph: {h.graph}"))
        for f in h.images:
            said = " / ".join(dict.fromkeys(p for p in (f.alt, f.title, f.caption) if p))
            click.echo(printable(f"#{i} image: {f.src or '(no address)'} {said}"))
    ran = ", ".join(f"{r.leg} {r.status.value} {r.elapsed_ms:.1f}ms" for r in result.legs)
    click.echo(f"\nlegs: {ran}; total {result.timings_ms.get('total', 0):.1f}ms")
    if result.mode is not None:
        m = result.mode
        click.echo(f"mode: {m.name} ({m.source}{', ' + m.fallback if m.fallback else ''};"
                   f" {'LLM' if m.llm else 'heuristic'} steps)" + "".join(f"\n  {step}" for step in m.steps))
    for st in result.stages:
        if not st.ran and st.note.startswith("unavailable: "):  # nothing to judge with: one short line
            click.echo(f"judge {st.judge}: did not run ({st.note.removeprefix('unavailable: ')})")
            continue
        click.echo(f"judge {st.judge}: {'ran' if st.ran else 'did not run'}, {'changed' if st.changed else 'kept'} the order,"
                   f" scored {st.scored} of {st.considered} in {st.ms:.1f}ms{'; ' + st.note if st.note else ''}")


@cli.command()
@click.argument("questions", nargs=-1)
@data_option
@caller_options
@click.option("--file", "file_", type=click.File("r", encoding="utf-8"), help="One question per line.")
@click.option("--page", default=None, help="The visitor's current page URL.")
@click.option("--top", default=20, show_default=True, help="Candidates shown per question.")
@click.option("--floor", type=float, default=None)
@click.option("--json", "as_json", is_flag=True)
@friendly
def probe(questions: tuple[str, ...], data_dir: str | None, embedder: str | None, org: str,
          agent: str | None, principals: tuple[str, ...], file_: TextIO | None,
          page: str | None, top: int, floor: float | None, as_json: bool) -> None:
    """Every candidate a live query ranks, per-leg ranks and scores, and whether it passes.
    Stores nothing and reads no cache (SPEC I4)."""
    asked = list(questions) + ([q.strip() for q in file_ if q.strip()] if file_ else [])
    if not asked:
        raise click.UsageError("give a question or --file")
    out = []
    with open_engine(data_dir, embedder) as engine:
        for question in asked:
            result = engine.search(question, make_caller(org, agent, principals), top=top, floor=floor,
                                   page_url=page)
            out.append((question, result))
    if as_json:
        echo_json([{"question": q, "candidates": [hit_json(h) for h in r.hits],
                    "legs": {x.leg: x.status.value for x in r.legs}} for q, r in out])
        return
    for question, result in out:
        click.echo(f"\n? {question}")
        rows = [[str(i), "pass" if h.passes else "-", f"{h.score:.2f}", f"{h.fused:.4f}", h.title[:50], votes_text(h)]
                for i, h in enumerate(result.hits, 1)]
        click.echo(table(rows, ["#", "floor", "score", "rrf", "title", "votes"]) if rows else "  no candidates")


@cli.command()
@click.argument("question")
@data_option
@click.option("--org", default="default", show_default=True, help="Organisation.")
@click.option("--agent", default="default", show_default=True,
              help="Agent: its stored persona and retrieval settings apply, and gaps, usage and turns are recorded under it.")
@click.option("--principal", "principals", multiple=True,
              help="A principal the caller holds (team:support, member:u7); repeatable.")
@click.option("--conversation", "conversation", default=None,
              help="Conversation id: its stored turns are the history (follow-ups are rewritten), and this turn is stored.")
@click.option("--page", default=None, help="The visitor's current page URL.")
@click.option("--answerer", default=None, help="extractive (default, no LLM) or openai (ELECTA_LLM_* settings).")
@click.option("--json", "as_json", is_flag=True, help="One JSON event per line, as the stream sends them.")
@friendly
def ask(question: str, data_dir: str | None, embedder: str | None, org: str, agent: str,
        principals: tuple[str, ...], conversation: str | None, page: str | None, answerer: str | None,
        as_json: bool) -> None:
    """Answer a question from the knowledge base, streamed, with checked citations.

    The same pipeline as `POST /v1/ask`: the agent's stored settings, the conversation's
    history, and the same gaps, usage and turns recorded."""

    from electa.answer.answerers import create_answerer
    from electa.answer.pipeline import AskPipeline, AskRequest
    from electa.answer.rewrite import LlmRewriter
    from electa.modes.llm import LlmSteps

    settings = Settings()
    if data_dir:  # (as open_engine: a local model installed with `--data DIR` is found there)
        settings = settings.in_dir(data_dir)
    name = answerer or settings.answerer
    chosen = create_answerer(name, settings) if name != "extractive" else None
    with open_engine(data_dir, embedder) as engine:
        engine.mode_llm = LlmSteps(chosen) if chosen is not None else None
        pipeline = AskPipeline(engine, engine.store, answerer=chosen,
                               rewriter=LlmRewriter(chosen) if chosen is not None else None)
        request = AskRequest(question, make_caller(org, agent, principals), page, conversation)
        for event in pipeline.run(request):
            if as_json:
                click.echo(json_text({"event": event.kind, **event.data}))
            elif event.kind == "token":
                click.echo(printable(str(event.data["token"])), nl=False)
            elif event.kind == "reset":  # the terminal cannot take back what it printed: say so
                click.echo(f"\n[withdrawn: the answerer failed (incident {event.data['incident']}); the extractive"
                           " answer follows]")
            elif event.kind == "citations":
                click.echo("")
                for c in event.data["citations"]:  # type: ignore[attr-defined]
                    click.echo(source_line(f"  [{c['id']}]", str(c["title"]), str(c["url"] or "")))
            elif event.kind == "done":
                d = event.data
                flags = [f"confidence {d['confidence']}"] + (["low confidence"] if d.get("low_confidence") else [])
                if d.get("fallback"):
                    flags.append(str(d["fallback"]))
                click.echo(f"  ({'; '.join(flags)})")


@cli.group()
def sources() -> None:
    """List or delete sources; list the units holding injected instructions."""


@sources.command("list")
@data_option
@click.option("--org", default=None)
@click.option("--json", "as_json", is_flag=True)
@friendly
def sources_list(data_dir: str | None, embedder: str | None, org: str | None, as_json: bool) -> None:
    with open_engine(data_dir, embedder, searches=False) as engine:
        rows = engine.store.list_sources(org)
    if as_json:
        echo_json(rows)
        return
    click.echo(table([[str(r["org"]), str(r["agent"]), str(r["uri"]), str(r["version"]), str(r["documents"]),
                       "public" if r["access"]["public"] else ",".join(r["access"]["principals"])]  # type: ignore[index]
                      for r in rows], ["org", "agent", "uri", "version", "docs", "access"]))


@sources.command("delete")
@click.argument("uri")
@data_option
@click.option("--org", default="default", show_default=True)
@click.option("--agent", default="default", show_default=True)
@friendly
def sources_delete(uri: str, data_dir: str | None, embedder: str | None, org: str, agent: str) -> None:
    """Delete a source (its URI as `sources list` shows it) from every leg."""
    with open_engine(data_dir, embedder, searches=False) as engine:
        removed = engine.delete_source(org, agent, uri)
    click.echo(f"deleted {uri}: {removed} stored units removed")


@sources.command("flagged")
@data_option
@click.option("--org", default=None, help="Organisation (default: every one).")
@click.option("--agent", default=None, help="Agent (default: every one).")
@click.option("--json", "as_json", is_flag=True, help="Every finding, with offsets and the rules that found it.")
@friendly
def sources_flagged(data_dir: str | None, embedder: str | None, org: str | None, agent: str | None,
                    as_json: bool) -> None:
    """Units holding instructions addressed to the assistant (quarantined: never quoted, never
    shown to a model). Look at each, then mend or delete its source."""
    with open_engine(data_dir, embedder, searches=False) as engine:
        orgs = [org] if org is not None else sorted({str(s["org"]) for s in engine.store.list_sources()})
        rows = [r for o in orgs for r in engine.store.flagged(o, agent)]
        _, unscanned = engine.store.rescan_injections(0)
    if unscanned:
        click.echo(f"note: {unscanned} units were stored before these injection rules and are not scanned yet:"
                   " run `electa reindex`", err=True)
    if as_json:
        echo_json(rows)
        return
    click.echo(table([[str(r["org"]), str(r["agent"]), str(r["source"]), str(r["chunk_id"]),
                       ",".join(r["rules"]),  # type: ignore[arg-type]
                       " | ".join(r["excerpts"])[:120]]  # type: ignore[arg-type]
                      for r in rows], ["org", "agent", "source", "unit", "rules", "excerpt"]))


@cli.command()
@data_option
@click.option("--batch", default=256, show_default=True)
@friendly
def reindex(data_dir: str | None, embedder: str | None, batch: int) -> None:
    """Re-embed every chunk with the configured model, in resumable batches."""
    with open_engine(data_dir, embedder, moving=True) as engine:
        report = engine.reindex(batch=batch, progress=True)
    scanned = f"; {report.scanned} older units scanned for injected instructions" if report.scanned else ""
    adopted = f" (and {report.adopted} English ones kept their vectors)" if report.adopted else ""
    click.echo(f"reindexed with {report.model_id}: {report.embedded} chunks{adopted} in {report.seconds:.1f}s{scanned}")


@cli.command()
@data_option
@click.option("--json", "as_json", is_flag=True)
@friendly
def stats(data_dir: str | None, embedder: str | None, as_json: bool) -> None:
    """What the store holds."""
    with open_engine(data_dir, embedder, searches=False) as engine:
        info = engine.stats()
    if as_json:
        echo_json(info)
        return
    for key, value in info.items():
        click.echo(f"{key}: {value}")


@cli.command("eval")
@click.argument("dataset", type=click.Path(exists=True, file_okay=False, path_type=Path), required=False)
@click.option("--split", default=None,
              help="qrels/<split>.tsv to evaluate (test, dev, train); dev:tune / dev:test name its two fixed halves,"
                   " dev:tune-by-thread / dev:test-by-thread the same halves dealt by whole threads.")
@click.option("--agent", "agent_ref", default=None, help="ORG/AGENT: evaluate on that agent's golden set in --data.")
@click.option("--runs", "runs_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Write TREC run files and reports here.")
@click.option("--data", "data_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Store for the corpus (default: a cache keyed by corpus hash and model).")
@click.option("--depth", default=100, show_default=True, help="Candidates per leg and run depth.")
@click.option("--limit", type=int, default=None, help="Only the first N queries.")
@click.option("--tuned", "tuned_file", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Settings written by `electa tune`: adds a 'tuned' configuration.")
@click.option("--visitor-feedback", is_flag=True,
              help="With --agent: count visitors' feedback (search keys, visitor tokens) too, once per visitor.")
@click.option("--answers", is_flag=True,
              help="Evaluate answers, not retrieval: on an XQuAD-R language DATASET, or without DATASET on the packaged"
                   " support set (sample_kb/answers.jsonl).")
@click.option("--answerer", "answerers", multiple=True,
              help="With --answers: an answerer to compare (extractive, local, openai); repeat for several. Default extractive.")
@click.option("--holdout", type=float, default=0.1, show_default=True,
              help="With --answers on XQuAD-R: the share of paragraphs left out of the store (their questions are unanswerable).")
@click.option("--rerank", default=None,
              help="A reranker (onnx:<folder>, an http(s) /rerank endpoint, llm): adds a 'scored+rerank' row.")
@click.option("--rerank-budget", type=float, default=None, help="With --rerank: its budget in ms (default 3000).")
@click.option("--ltr", "ltr_file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="A ranker written by `electa train-ltr --out` (trained on another split): adds 'scored+ltr' rows.")
@click.option("--mode", "modes", multiple=True,
              help="Retrieval modes side by side, one row each (standard, hybrid, corrective, graph, agentic,"
              " multimodal; 'all').")
@click.option("--json", "as_json", is_flag=True)
@friendly
def eval_cmd(dataset: Path | None, split: str | None, agent_ref: str | None, runs_dir: Path | None,
             data_dir: Path | None, depth: int, limit: int | None, tuned_file: Path | None, visitor_feedback: bool,
             answers: bool, answerers: tuple[str, ...], holdout: float, rerank: str | None, rerank_budget: float | None,
             ltr_file: str | None, modes: tuple[str, ...], as_json: bool) -> None:
    """nDCG@10, MRR@10, Recall@10/100, MAP@100 per leg, fused and scored; latency; abstention;
    TREC runs, JSON and Markdown reports and plots (--runs). On a BEIR directory, or with
    --agent on an agent's golden set (curated Q&A and feedback). With --answers: answerers side
    by side through the ask pipeline (answer-sentence accuracy on XQuAD-R; fact recall, forbidden
    strings, citations, injection echo and abstention on the support set), with 95% intervals."""
    from electa.eval.runner import run_agent_eval, run_eval
    from electa.eval.tuning import fitted_on, load_calibration, load_setting

    if answers:
        from electa.eval.answers import run_answer_eval

        if agent_ref or tuned_file:
            raise click.UsageError("--answers takes DATASET (XQuAD-R) or nothing (the support set), not --agent or --tuned")
        answer_report = run_answer_eval(dataset, split, list(answerers) or ["extractive"], runs_dir, data_dir,
                                        limit=limit, holdout=holdout, progress=sys.stderr.isatty())
        click.echo(answer_report.to_json() if as_json else answer_report.to_markdown())
        return
    if modes:
        from electa.eval.modes import run_mode_eval
        from electa.modes import MODES

        unknown = [m for m in modes if m not in (*MODES, "all")]
        if unknown:
            raise click.UsageError(f"unknown mode {unknown[0]!r}; valid: {', '.join(MODES)}, all")
        if dataset is None or split is None or agent_ref:
            raise click.UsageError("--mode takes DATASET and --split")
        mode_report = run_mode_eval(dataset, split, modes, data_dir, limit=limit, progress=sys.stderr.isatty())
        click.echo(mode_report.to_json() if as_json else mode_report.to_markdown())
        return
    tuned = load_setting(tuned_file) if tuned_file else None
    calibration = load_calibration(tuned_file) if tuned_file else None
    if agent_ref:
        org, agent = parse_agent(agent_ref)
        report = run_agent_eval(data_dir or Settings().data_dir, org, agent, runs_dir, visitor_feedback, depth=depth, limit=limit,
                                tuned=tuned, calibration=calibration)
    else:
        if dataset is None or split is None:
            raise click.UsageError("give DATASET and --split, or --agent ORG/AGENT")
        settings = Settings()
        from electa.judges.ltr import load_model_file

        # (a broken file fails here, not as a judge that is quietly unavailable)
        ranker = load_model_file(ltr_file) if ltr_file else None
        if rerank is not None or rerank_budget is not None or ltr_file:  # validated as settings are
            settings = Settings(**{**settings.model_dump(), **({"rerank": rerank} if rerank is not None else {}),
                                   **({"judge_budgets_ms": {**settings.judge_budgets_ms, "rerank": rerank_budget}}
                                      if rerank_budget is not None else {}),
                                   **({"ltr": ltr_file} if ltr_file else {})})
        fitted = {**({"tuned settings": fitted_on(tuned_file)} if tuned_file else {}),
                  **({"ranker": dict(ranker.trained)} if ranker is not None else {})}
        report = run_eval(dataset, split, runs_dir, data_dir, settings, fitted, depth=depth, limit=limit,
                          progress=sys.stderr.isatty(), tuned=tuned, calibration=calibration)
    click.echo(report.to_json() if as_json else report.to_markdown())


@cli.command()
@click.argument("dataset", type=click.Path(exists=True, file_okay=False, path_type=Path), required=False)
@click.option("--split", default="golden",
              help="The labelled split to tune on (never the held-out one); dev:tune names half of dev,"
                   " dev:tune-by-thread a half dealt by whole threads (measure it on dev:test-by-thread).")
@click.option("--agent", "agent_ref", default=None,
              help="ORG/AGENT: store the result as that agent's settings in --data (without DATASET: tune on its golden set).")
@click.option("--out", "out_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the result to this JSON file (for `electa eval --tuned`).")
@click.option("--data", "data_dir", type=click.Path(file_okay=False, path_type=Path), default=None)
@click.option("--folds", default=5, show_default=True)
@click.option("--visitor-feedback", is_flag=True,
              help="With --agent: count visitors' feedback (search keys, visitor tokens) too, once per visitor.")
@friendly
def tune(dataset: Path | None, split: str, agent_ref: str | None, out_file: Path | None, data_dir: Path | None,
         folds: int, visitor_feedback: bool) -> None:
    """Learn fusion weights, k, depth, calibration and a floor from labels (cross-validated)."""
    from electa.eval.runner import tune_dataset

    agent = parse_agent(agent_ref) if agent_ref else None
    if agent is not None and data_dir is None:
        data_dir = Path(Settings().data_dir)
    result = tune_dataset(dataset, split, out_file, data_dir, folds, progress=sys.stderr.isatty(), agent=agent,
                          visitors=visitor_feedback)
    where = dataset.name if dataset else f"the golden set of {agent_ref}"
    click.echo(f"tuned on {result.queries} queries of {where} ({split}), {result.folds}-fold cross-validation")
    click.echo(f"  default {result.default.key()}: nDCG@10 {result.cv_default:.4f} on held-out folds")
    click.echo(f"  tuned   (chosen per fold):  nDCG@10 {result.cv_tuned:.4f} on held-out folds")
    if result.unconfirmed is not None:
        click.echo(f"  best on all queries: {result.unconfirmed.key()}: not kept, the settings chosen per fold"
                   " did not beat the default on the folds they did not see")
        click.echo("  kept: the default")
    else:
        click.echo(f"  chosen on all queries: {result.chosen.key()}")
    if agent_ref and result.chosen == result.default:
        click.echo("  (the default: the agent is left untuned in fusion, served the server's own depths, k and lift)")
    if result.calibrated_floor is not None:
        click.echo(f"  calibrated floor {result.calibrated_floor:.2f} (cross-fitted, for >= 90% of answerable"
                   " questions kept, plus one standard error)")
    cut = result.rerank_cut
    if cut and "skipped" in cut:
        click.echo(f"  the reranker's score does not join the cut: {cut['skipped']}")
    elif cut:
        legs, both = "legs: abstain_unanswerable", "legs + rerank: abstain_unanswerable"
        click.echo(f"  the reranker's score {'joins' if cut['kept'] else 'does not join'} the cut ({cut['reranker']};"
                   f" {cut['folds']}-fold CV on {cut['questions']} questions): unanswerable twins passing nothing"
                   f" {cut[legs]:.1%} -> {cut[both]:.1%}, answerable reading a relevant passage"
                   " (among the first 4 that pass of the first 20)"
                   f" {cut['legs: keep_answerable']:.1%} -> {cut['legs + rerank: keep_answerable']:.1%}")
    if cut and cut.get("left_out_trained"):
        click.echo(f"  left out of the cut's fit: {cut['left_out_trained']} questions the reranker trained on")
    if cut and "trained_questions" in cut:
        click.echo(f"  which questions the reranker trained on: {cut['trained_questions']}")
    if out_file:
        click.echo(f"  written to {out_file}")
    if agent_ref:
        click.echo(f"  stored as the settings of agent {agent_ref}")


@cli.command("train-ltr")
@click.argument("dataset", type=click.Path(exists=True, file_okay=False, path_type=Path), required=False)
@click.option("--split", default="golden", help="With DATASET: the labelled split to train on (never a held-out one).")
@click.option("--agent", "agent_ref", default=None,
              help="ORG/AGENT: train on that agent's golden set in --data and store the ranker as its own.")
@click.option("--out", "out_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the ranker to this JSON file (ELECTA_LTR=FILE serves it; `electa eval` measures it).")
@click.option("--data", "data_dir", type=click.Path(file_okay=False, path_type=Path), default=None)
@click.option("--folds", default=5, show_default=True)
@click.option("--depth", type=int, default=None,
              help="Candidates per leg (default: as served; `electa eval` reads 100: give --depth 100 to match it).")
@click.option("--min-queries", default=MIN_LTR_QUERIES, show_default=True,
              help="Train only with at least this many labelled questions.")
@click.option("--force", is_flag=True, help="Store the ranker even if it does not beat the served order on held-out folds.")
@click.option("--visitor-feedback", is_flag=True,
              help="With --agent: count visitors' feedback (search keys, visitor tokens) too, once per visitor.")
@click.option("--json", "as_json", is_flag=True)
@friendly
def train_ltr_cmd(dataset: Path | None, split: str, agent_ref: str | None, out_file: Path | None,
                  data_dir: Path | None, folds: int, depth: int | None, min_queries: int, force: bool, visitor_feedback: bool,
                  as_json: bool) -> None:
    """Train the learning-to-rank judge (SPEC D2) on labelled questions, cross-validated by
    question (by thread for a half dealt by thread); store it when it beats the served order on
    held-out folds."""
    from electa.eval.beir import BY_THREAD
    from electa.eval.ltr import train_ltr

    if dataset is None and agent_ref is None:
        raise click.UsageError("give DATASET --split SPLIT (with --out), or --agent ORG/AGENT")
    if dataset is not None and out_file is None and not as_json:
        click.echo("(no --out: the ranker is measured, not kept)", err=True)
    agent = parse_agent(agent_ref) if agent_ref else None
    if agent is not None and data_dir is None:
        data_dir = Path(Settings().data_dir)
    report = train_ltr(dataset, split, data_dir, agent, out_file, folds, depth, visitor_feedback, min_queries, force)
    if as_json:
        echo_json({**report.to_dict(), "stored": report.where})
        return
    click.echo(f"trained on {report.queries} labelled questions of {report.dataset} ({report.split}),"
               f" {report.folds}-fold cross-validation by {'thread' if report.split.endswith(BY_THREAD) else 'question'}")
    click.echo(f"  nDCG@10 on held-out folds: served order {report.served:.4f}, learned order {report.learned:.4f}")
    click.echo("  learned minus served, per fold: " + ", ".join(f"{d:+.4f}" for d in report.per_fold))
    click.echo("  feature importance (share of gain): "
               + ", ".join(f"{n} {g:.1%}" for n, g in list(report.importances.items())[:10]))
    if report.stored:
        click.echo("  stored: " + ", ".join(report.where))
    elif report.learned <= report.served:
        click.echo("  not stored: it does not beat the served order on held-out questions (--force stores it)")


@cli.command("train-rerank")
@click.option("--agent", "agent_ref", required=True,
              help="ORG/AGENT: train on that agent's golden set and store the reranker as its own.")
@click.option("--data", "data_dir", type=click.Path(file_okay=False, path_type=Path), default=None)
@click.option("--base", default=None,
              help="What to start from: `minilm` (the packaged all-MiniLM-L6-v2), `splade-tiny` (SPLADE-tiny's"
                   " encoder: about six times as fast, for a reranker within a 100 ms budget) or a transformers"
                   " cross-encoder folder (./minilm for a folder of that name; default: the torch/ weights beside"
                   " the ELECTA_RERANK onnx folder, else minilm).")
@click.option("--lr", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Learning rate (default: 4e-5, or 2e-4 for a new head on an encoder narrower than 256, such as"
                   " splade-tiny).")
@click.option("--epochs", default=2, show_default=True)
@click.option("--depth", type=int, default=None, help="Served hits per question: negatives and the held-out figures"
                                                     " come from them (default: ELECTA_RERANK_DEPTH, what a search reranks).")
@click.option("--min-queries", default=MIN_LTR_QUERIES, show_default=True,
              help="Train only with at least this many labelled questions.")
@click.option("--force", is_flag=True, help="Store it even if it does not beat the served order on held-out questions.")
@click.option("--visitor-feedback", is_flag=True,
              help="Count visitors' feedback too (once per visitor and question; anyone with the page's key can vote).")
@click.option("--json", "as_json", is_flag=True)
@friendly
def train_rerank_cmd(agent_ref: str, data_dir: Path | None, base: str | None, lr: float | None, epochs: int,
                     depth: int | None, min_queries: int, force: bool, visitor_feedback: bool, as_json: bool) -> None:
    """Fine-tune a cross-encoder reranker (SPEC D1) on one agent's labelled questions, measured
    on a held-out fifth; store it as the agent's own when it beats the served order there."""
    from electa.eval.rerank_training import train_rerank

    agent = parse_agent(agent_ref)
    report = train_rerank(data_dir or Path(Settings().data_dir), agent, base, epochs, depth, lr=lr,
                          visitors=visitor_feedback, min_queries=min_queries, force=force,
                          say=(lambda line: None) if as_json else click.echo)
    if as_json:
        echo_json({**report.to_dict(), "stored": report.where, "notes": report.notes})
        return
    click.echo(f"trained on {report.trained_on} of {report.questions} labelled questions of {report.agent}"
               f" ({report.groups} groups), from {report.base}")
    click.echo(f"  nDCG@10 on {report.held_out} held-out questions: served {report.served:.4f},"
               f" reranked {report.reranked:.4f} (" + ", ".join(f"{k} {v}" for k, v in report.figures.items()) + ")")
    if report.stored:
        click.echo("  stored: " + ", ".join(report.where) + " (used when ELECTA_RERANK is set; `agent`: agents' own only)")
    else:
        click.echo("  not stored: it does not beat what the agent's searches get today on held-out questions"
                   " (--force stores it)")
    for note in report.notes:
        click.echo(f"  note: {note}")


@cli.command()
@click.argument("query")
@click.argument("url")
@data_option
@click.option("--org", default="default", show_default=True)
@click.option("--agent", default="default", show_default=True)
@click.option("--up/--down", "positive", default=True, help="Thumbs up (or a click) / thumbs down.")
@click.option("--user", default="", help="The person it is about: it personalises their searches (search --user).")
@friendly
def feedback(query: str, url: str, data_dir: str | None, embedder: str | None, org: str, agent: str,
             positive: bool, user: str) -> None:
    """Record feedback on a result: it feeds the agent's golden set (eval --agent, tune --agent,
    train-ltr --agent) and, with --user, that person's personalisation."""
    with open_engine(data_dir, embedder, searches=False) as engine:
        engine.store.add_feedback(org, agent, query, url, 1 if positive else -1, person=user)
    click.echo(f"recorded {'+1' if positive else '-1'} for {url}")


@cli.command()
@data_option
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8765, show_default=True)
@click.option("--workers", default=1, show_default=True, type=click.IntRange(min=1),
              help="Worker processes on one port, each with its own engine on the same store (see electa.api.worker).")
@friendly
def serve(data_dir: str | None, embedder: str | None, host: str, port: int, workers: int) -> None:
    """Run the HTTP API (OpenAPI at /docs). Admin routes need ELECTA_ADMIN_TOKEN."""
    try:
        import uvicorn

        from electa.api.app import create_app
    except ImportError as exc:
        raise click.ClickException("the server needs its extra: pip install 'electa[server]'") from exc
    settings = Settings()
    if workers > 1:
        # Each worker reads its settings from the environment (they are new processes): pass
        # the options on the way the settings read them, then let uvicorn fork the workers.
        os.environ["ELECTA_DATA_DIR"] = str(Path(data_dir or settings.data_dir).resolve())
        if embedder:
            os.environ["ELECTA_EMBEDDER"] = embedder
        with open_engine(data_dir, embedder) as engine:  # fail here, once, on a bad store or model
            where = engine.store.directory
        click.echo(f"Electa serving {where} on http://{host}:{port} with {workers} workers (OpenAPI: /docs)", err=True)
        uvicorn.run("electa.api.worker:create_worker_app", factory=True, host=host, port=port, workers=workers,
                    log_level="warning")
        return
    with open_engine(data_dir, embedder) as engine:
        app = create_app(engine, settings.admin_token, settings.cache_ttl_s)
        click.echo(f"Electa serving {engine.store.directory} on http://{host}:{port} (OpenAPI: /docs)", err=True)
        uvicorn.run(app, host=host, port=port, log_level="warning")


@cli.command("serve-llm")
@click.option("--model", default=None, help="smollm2 (packaged), qwen2.5-coder-0.5b, qwen2.5-coder-1.5b (after "
              "`electa models install`), or a path to a GGUF file. Default: ELECTA_LOCAL_MODEL.")
@click.option("--data", "data_dir", default=None, help="Data directory whose models/ holds installed models.")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8766, show_default=True)
@click.option("--max-tokens", default=600, show_default=True, help="Cap on tokens per answer.")
@click.option("--max-prompt-tokens", default=4096, show_default=True, type=click.IntRange(min=1),
              help="Cap on the chat-templated prompt plus the answer's tokens; larger requests get 413.")
@click.option("--queue-timeout", default=120.0, show_default=True, type=click.FloatRange(min=0),
              help="Seconds a request waits for the model before 503 (busy, retry).")
@friendly
def serve_llm(model: str | None, data_dir: str | None, host: str, port: int, max_tokens: int, max_prompt_tokens: int,
              queue_timeout: float) -> None:
    """Serve a local GGUF model as an OpenAI-compatible endpoint (/v1/chat/completions), for
    ELECTA_ANSWERER=openai ELECTA_LLM_BASE_URL=http://HOST:PORT/v1. Requests need
    `Authorization: Bearer $ELECTA_LLM_API_KEY` when that is set, and it must be set to serve
    on any --host but a loopback one."""
    try:
        import uvicorn

        from electa.api.llm_server import check_exposure, create_llm_app
    except ImportError as exc:
        raise click.ClickException("the server needs its extra: pip install 'electa[server,llm]'") from exc
    from electa.answer.local_llm import LocalGgufAnswerer, resolve_model

    overrides: dict[str, object] = {"data_dir": Path(data_dir)} if data_dir else {}
    settings = Settings(**overrides)  # type: ignore[arg-type]
    check_exposure(host, settings.llm_api_key)
    name = model or settings.local_model
    answerer = LocalGgufAnswerer(resolve_model(name, settings), deadline_s=settings.llm_deadline_s,
                                 threads=settings.local_threads)
    click.echo(f"loading {name} …", err=True)
    answerer.load()
    app = create_llm_app(answerer, Path(name).stem if name.endswith(".gguf") else name, settings.llm_api_key, max_tokens,
                         max_context_tokens=max_prompt_tokens, queue_timeout_s=queue_timeout)
    click.echo(f"Electa LLM serving {name} on http://{host}:{port}/v1 (OpenAI-compatible)", err=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")


@cli.command()
@click.option("--data", "data_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("electa-demo"),
              show_default=True)
@click.option("--embedder", default=None)
@click.option("--serve", is_flag=True, help="Then serve the sample knowledge base over HTTP until Ctrl-C.")
@click.option("--port", default=8765, show_default=True)
@click.option("--open", "open_page", is_flag=True, help="With --serve, open the sample help-center page (with the chat"
              " widget) in this machine's web browser, if it has one.")
@friendly
def demo(data_dir: Path, embedder: str | None, serve: bool, port: int, open_page: bool) -> None:
    """Ingest the bundled sample help center, answer a few questions with provenance, and with
    --serve start the API on it: a sample help-center page with the chat widget, the search
    page, and a curl line that streams an answer."""
    from electa.cli.demo import ORG, run_demo

    run_demo(data_dir, embedder)
    if not serve:
        return
    import uvicorn

    from electa.api.app import create_app

    settings = Settings()
    with open_engine(str(data_dir), embedder, embedded=True) as engine:
        from electa.auth.scopes import Scope

        engine.store.add_organisation(ORG)
        # For this run (a day at most): search, ask, feedback (browser-safe), and the console's
        # (sources, gaps, probe, settings), served on this machine's loopback address only.
        until = time.time() + 86400
        key, _ = engine.store.add_api_key(ORG, Scope.SEARCH, "demo", until)
        console_key, _ = engine.store.add_api_key(ORG, Scope.INGEST, "demo console", until)
        url = f"http://127.0.0.1:{port}"
        click.echo(f"\nElecta is serving the sample help center at {url} (OpenAPI: {url}/docs). Stream an answer:")
        click.echo(f"  curl -N -X POST {url}/v1/ask -H 'Authorization: Bearer {key}' "
                   "-H 'Content-Type: application/json' -d '{\"question\": \"Can I get my money back?\"}'", nl=True)
        page = f"{url}/ui/demo"  # (the page carries the search key: no address or command line does)
        click.echo(f"Chat with the widget on a sample help-center page: {page}")
        click.echo(f"Or search in a browser: {url}/ui/search with the key {key}")
        click.echo(f"The admin console (sources, content gaps, probe, settings): {url}/ui/admin with the key {console_key}")
        click.echo("Press Ctrl-C to stop.")
        sys.stdout.flush()
        if open_page:
            import threading
            import webbrowser

            # In a thread: the server must be up first.
            def open_when_up() -> None:
                import contextlib
                import socket

                for _ in range(100):  # the page once the server answers (10 s at most)
                    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.1):
                        break
                    time.sleep(0.1)
                try:
                    browser = webbrowser.get()
                except webbrowser.Error:
                    return  # (no browser: the address is printed above)
                # A terminal browser (lynx, w3m: all a machine without a display offers) would
                # take over the terminal the server logs to.
                if type(browser) is not webbrowser.GenericBrowser:
                    browser.open(page)

            threading.Thread(target=open_when_up, daemon=True).start()
        uvicorn.run(create_app(engine, settings.admin_token, settings.cache_ttl_s, demo_key=key), host="127.0.0.1",
                    port=port, log_level="warning")


for _group in (orgs, keys, tokens, models):
    cli.add_command(_group)


def main() -> None:
    cli(prog_name="electa")


if __name__ == "__main__":
    main()

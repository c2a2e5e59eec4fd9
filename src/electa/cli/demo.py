"""The main job on the bundled sample knowledge base: ingest it, answer questions with provenance."""

from __future__ import annotations

from importlib.resources import as_file, files
from pathlib import Path

import click

from electa.answer.passages import answer_window
from electa.cli.common import open_engine, source_line
from electa.types import Access, Caller

ORG = "tallyo"
QUESTIONS: tuple[tuple[str, frozenset[str]], ...] = (
    ("Can I get my money back?", frozenset()),
    ("Error E1042 when exporting to CSV", frozenset()),
    ("How much is the Growth plan per year?", frozenset()),
    ("Does it integrate with Slack?", frozenset()),
    ("Can I talk to a human?", frozenset()),
    ("Who approves a refund over $500?", frozenset()),
    ("Who approves a refund over $500?", frozenset({"team:support"})),
)


def sample_kb() -> Path:
    """The sample knowledge base's folder inside the installed package."""
    with as_file(files("electa") / "sample_kb") as path:
        return Path(path)


def run_demo(data_dir: Path, embedder: str | None) -> None:
    kb = sample_kb()
    with open_engine(str(data_dir), embedder, embedded=True) as engine:
        public = engine.ingest([kb / "help-center", kb / "qa.csv", kb / "curated.csv"], Access(ORG))
        team = engine.ingest([kb / "internal"], Access(ORG, public=False, principals=("team:support",)))
        for label, report in (("public help center + Q&A", public), ("internal (team:support)", team)):
            c = report.counts()
            click.echo(f"ingested {label}: {c['added']} added, {c['updated']} updated, "
                       f"{c['unchanged']} unchanged, {c['failed']} failed ({report.docs_per_second:.1f} docs/s)")
            for path, reason in report.failures:
                click.echo(f"  failed: {path}: {reason}")
        legs = ", ".join(f"{n}{'' if leg.available() else ' (unavailable: ' + leg.why + ')'}"
                         for n, leg in engine.legs.items())
        click.echo(f"legs: {legs}\n")
        for question, principals in QUESTIONS:
            who = f" [as {', '.join(sorted(principals))}]" if principals else " [as a visitor]"
            # (as many hits as the answer reads: nothing passing among them is the strict reply)
            result = engine.search(question, Caller(ORG, principals=principals),
                                   top=answer_window(engine.settings.top_passages))
            click.echo(f"? {question}{who}")
            passing = result.passing
            if not passing:
                click.echo("  nothing passes the floor: strict knowledge-base reply\n")
                continue
            for hit in passing[:3]:
                votes = ", ".join(f"{v.leg} #{v.rank} ({v.raw_score:.2f})" for v in hit.votes)
                click.echo(source_line(f"  {hit.score:.2f} ", hit.title, hit.url))
                click.echo(f"        votes: {votes}")
            answer = "".join(str(e.data["token"]) for e in engine.ask(question, Caller(ORG, principals=principals))
                             if e.kind == "token")
            click.echo(f"  answer (extractive, no LLM): {answer}")
            ms = result.timings_ms.get("total", 0.0)
            click.echo(f"  ({', '.join(r.leg + ' ' + r.status.value for r in result.legs)}; {ms:.0f} ms)\n")

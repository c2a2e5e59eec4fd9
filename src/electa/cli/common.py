"""Options and output helpers shared by the commands."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Sequence
from functools import wraps
from typing import Any, TypeVar

import click

from electa.config import Settings
from electa.engine import Engine
from electa.errors import ElectaError
from electa.types import Caller, Hit

F = TypeVar("F", bound=Callable[..., Any])


def data_option(f: F) -> F:
    f = click.option("--embedder", default=None,
                     help="Embedding model: chain, mpnet, minilm, e5-multilingual, use-multilingual, chain-use, hash.")(f)
    return click.option("--data", "data_dir", type=click.Path(file_okay=False), default=None,
                        help="Data directory (default: $ELECTA_DATA_DIR or ./electa-data).")(f)  # type: ignore[return-value]


def source_options(f: F) -> F:
    """Whose sources a write makes, and how they are found (ingest, sync)."""
    f = click.option("--progress/--no-progress", default=True)(f)
    f = click.option("--read-noindex", is_flag=True,
                     help="Store a folder's HTML pages that ask not to be indexed (<meta name=\"robots\""
                          " content=\"noindex\">: a book's print page, pages that only say a page moved), left out by"
                          " default; one stored before is kept up to date either way, never deleted for it.")(f)
    f = click.option("--url-suffix", default=None,
                     help="What a page's extension (.md, .rst, .html) becomes in its address under --base-url: ''"
                          " drops it (/guide/setup, Docusaurus), '/' (/guide/setup/, MkDocs, Hugo), '.html' (Jekyll);"
                          " an index page becomes its folder. Default: the file's own name.")(f)
    f = click.option("--base-url", default="", help="URL prefix for files that carry none of their own.")(f)
    f = click.option("--principal", "principals", multiple=True,
                     help="Restrict to these principals (team:support…); without it the sources are public.")(f)
    f = click.option("--agent", default="default", show_default=True)(f)
    return click.option("--org", default="default", show_default=True)(f)  # type: ignore[return-value]


def caller_options(f: F) -> F:
    f = click.option("--principal", "principals", multiple=True,
                     help="A principal the caller holds (team:support, member:u7); repeatable.")(f)
    f = click.option("--agent", default=None, help="Agent (default: every agent of the organisation).")(f)
    return click.option("--org", default="default", show_default=True, help="Organisation.")(f)  # type: ignore[return-value]


def open_engine(data_dir: str | None, embedder: str | None, embedded: bool = False, moving: bool = False,
                searches: bool = True) -> Engine:
    """The engine on the configured store; ``embedded``: on the embedded one in ``data_dir``
    whatever ELECTA_STORE says (the demo never writes into a deployment's database);
    ``moving``: to reindex with the embedder named; ``searches=False``: a command that never
    searches leaves the models to load when first used (``warm``, :meth:`Engine.open`: seconds
    of every ``electa stats``)."""
    settings = Settings().embedded() if embedded else Settings()
    if data_dir:  # (its models too: `electa models install mpnet --data DIR` put them there)
        settings = settings.in_dir(data_dir)
    return Engine.open(settings.data_dir, settings, embedder, moving=moving, warm=searches)


def make_caller(org: str, agent: str | None, principals: Sequence[str]) -> Caller:
    return Caller(org, agent, frozenset(principals))


def parse_pairs(value: str | None, cast: Callable[[str], Any] = float) -> dict[str, Any]:
    """``"fulltext=1,dense=0.5"`` -> ``{"fulltext": 1.0, "dense": 0.5}``."""
    out: dict[str, Any] = {}
    for part in (value or "").split(","):
        if not part.strip():
            continue
        key, sep, raw = part.partition("=")
        if not sep:
            raise click.BadParameter(f"{part!r} should look like leg=value")
        try:
            out[key.strip()] = cast(raw)
        except ValueError as exc:
            raise click.BadParameter(f"{raw!r} is not a number") from exc
    return out


def friendly(f: F) -> F:
    """Turn Electa's errors into one line on stderr and exit status 1 or 2."""

    @wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return f(*args, **kwargs)
        except ElectaError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)

    return wrapper  # type: ignore[return-value]


def json_text(value: Any, indent: int | None = None) -> str:
    """``value`` as JSON for a terminal: non-ASCII kept, but the C1 controls (a terminal reads
    U+009B as an escape) written as ``\\u`` escapes, as JSON already writes C0 ones.

    >>> json_text({"t": "caf\u00e9 \u009b2J"})
    '{"t": "caf\u00e9 \\\\u009b2J"}'
    """
    return _C1.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(value, indent=indent, ensure_ascii=False, default=str))


_C1 = re.compile(r"[\x80-\x9f]")


def echo_json(value: Any) -> None:
    click.echo(json_text(value, indent=2))


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` as a terminal may show it: control characters (an escape sequence in a page's
    title or an image's alt text could move the cursor, recolour or rewrite what was printed)
    each shown as U+FFFD.

    >>> printable("Refunds\x1b[2J\x1b]0;pwned\x07")
    'Refunds\ufffd[2J\ufffd]0;pwned\ufffd'
    """
    return _CONTROL.sub("\ufffd", text)


def source_line(head: str, title: str, url: str) -> str:
    """A cited or found source as a terminal shows it: its URL in angle brackets when it has one
    (a file ingested without ``--base-url`` has none, and showed "<>").

    >>> source_line("  [1]", "Refunds", "https://help.example/refunds"), source_line("  [2]", "Ownership", "")
    ('  [1] Refunds <https://help.example/refunds>', '  [2] Ownership')
    """
    return printable(f"{head} {title}" + (f" <{url}>" if url else ""))


def table(rows: Sequence[Sequence[str]], header: Sequence[str]) -> str:
    rows = [[printable(str(c)) for c in r] for r in rows]
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, rows)])


def votes_text(hit: Hit) -> str:
    return " ".join(f"{v.leg}#{v.rank}({v.raw_score:.2f})" for v in hit.votes)

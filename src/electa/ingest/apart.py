"""A large HTML page is read in a process of its own, stopped after a time limit.

Why: lexbor's tree builder walks the stack of open elements on most start tags, so a page costs
about (start tags) x (nesting depth). Real pages nest a few dozen deep; a hostile or broken one
can nest as deep as it has tags: 50,000 nested lists (400 KB) take 16 s to parse and a 50 MB
page of them would hold an ingest for days. Browsers cap the depth (Blink's parser stops
nesting at 512); lexbor does not, and no cheap scan tells a page's real depth without building
its tree (misnested end tags, formatting elements re-opened, scopes). So the bound is sound
rather than clever: a page of at most :data:`IN_PROCESS_TAGS` start tags costs at most about
that number squared (1-3 s measured at 50,000 in the worst shapes, under 1 s at 30,000) and is
read here; a larger one is read by ``python -m electa.ingest.apart`` and refused, naming the
limit, when that child runs past :data:`READ_SECONDS`. Large real pages (Rust's 8.5 MB generated
source pages, 150,000 tags, read in 0.6 s) pay about half a second more for the child's start.
"""

from __future__ import annotations

import os
import pickle
import re
import subprocess
import sys
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING

from electa.errors import IngestError

if TYPE_CHECKING:
    from electa.ingest.loaders import Loaded

IN_PROCESS_TAGS = 30_000
# A legitimate 50 MB page reads in about 4 s here; a slow machine has room to spare.
READ_SECONDS = 20.0
_START_TAG = re.compile(r"<[A-Za-z]")


def many_tags(text: str, limit: int | None = None) -> bool:
    """Whether ``text`` holds more than ``limit`` (default :data:`IN_PROCESS_TAGS`) start tags.
    Counted as the tokenizer opens a tag ("<" and a letter), an upper bound; the scan stops at
    the limit, so a 50 MB page costs no more than a small one."""
    bound = IN_PROCESS_TAGS if limit is None else limit
    return next(islice(_START_TAG.finditer(text), bound, None), None) is not None


def read_apart(name: str, text: str, note: str) -> Loaded:
    """:func:`electa.ingest.loaders.read_html` in a child process; an :class:`IngestError` if
    it fails or runs past :data:`READ_SECONDS` (the child is killed then)."""
    # The child imports this package from where the parent did (a script may have put it on sys.path).
    here = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)}
    try:
        done = subprocess.run([sys.executable, "-m", "electa.ingest.apart"],
                              input=pickle.dumps((name, text, note)), capture_output=True,
                              timeout=READ_SECONDS, check=False, env=env)
    except subprocess.TimeoutExpired:
        raise IngestError(name, f"its markup took more than {READ_SECONDS:.0f} s to read (over "
                          f"{IN_PROCESS_TAGS:,} tags; a page nested thousands of elements deep costs "
                          "minutes to parse): fix the page's markup or split it") from None
    if done.returncode != 0:
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
        raise IngestError(name, f"the process reading this page failed ({tail[0][:300]})")
    try:
        outcome, value = pickle.loads(done.stdout)
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError) as exc:
        raise IngestError(name, f"the process reading this page answered unreadably ({exc})") from None
    if outcome == "refused":
        raise IngestError(name, value)
    loaded: Loaded = value
    return loaded


def _child() -> None:
    from electa.ingest.loaders import read_html

    name, text, note = pickle.loads(sys.stdin.buffer.read())
    try:
        out: tuple[str, object] = ("read", read_html(name, text, note))
    except IngestError as exc:  # (its own reason: the parent names the source again)
        out = ("refused", exc.reason)
    sys.stdout.buffer.write(pickle.dumps(out))


if __name__ == "__main__":
    _child()

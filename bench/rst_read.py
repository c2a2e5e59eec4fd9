"""How the reStructuredText reader does on the reStructuredText a machine holds, and on hostile pages.

    python bench/rst_read.py [FOLDER ...] [--passes 3]

Default folders: CMake's help (``/usr/share/cmake-*/Help``), the AWS CLI's examples (wherever
``awscli`` is installed) and ``/usr/share/doc``. Every ``.rst`` file under them is read by the
loader (:func:`electa.ingest.markup.load_rst`) ``--passes`` times; printed: files, megabytes,
the median seconds of the passes, how many read and how many were refused and why, and what the
ingest notes say was not read. Then each hostile page of the review that withdrew the docutils
loader (at 1 MB) is read once, its seconds and peak memory printed: a linear reader takes about
a second and a few copies of the page on each.
"""

from __future__ import annotations

import argparse
import glob
import statistics
import sys
import time
import tracemalloc
from collections import Counter
from pathlib import Path

from electa.errors import ElectaError
from electa.ingest.markup import load_rst
from electa.text.rst import read_rst


def _default_folders() -> list[str]:
    found = [*glob.glob("/usr/share/cmake*/Help"), "/usr/share/doc"]
    awscli = "/root/.pyenv/versions/*/lib/python*/site-packages/awscli/__init__.py"
    found += [str(Path(p).parent / "examples") for p in glob.glob(awscli)]
    return [f for f in found if Path(f).is_dir()]


def _hostile(size: int) -> dict[str, str]:
    unclosed = "*a **a ``a `a :r:`a |a _`a a_ [#a \\"
    return {
        "nested substitutions": "".join(f".. |s{k}| replace:: |s{k + 1}| |s{k + 1}|\n" for k in range(60))
        + "\n|s0| " * (size // 6),
        "auto-symbol footnotes": "Text [*]_ " * (size // 20) + "\n\n" + ".. [*] A note.\n" * (size // 30),
        "unclosed inline markup": unclosed * (size // len(unclosed)),
        "a list nested deep": "".join(" " * k + "- x\n" for k in range(0, int((2 * size) ** 0.5), 2)),
        "simple tables never closed": "==== ====\nrow  row\n" * (size // 19),
        "one huge adornment": "Title\n" + "=" * size,
        "a role defined": ".. role:: raw-html(raw)\n   :format: html\n\n" + ":raw-html:`<b>x</b>` " * (size // 22),
        "a grid 20,000 columns wide": "+" + "-+" * 20_000 + "\n" + "|x\n+\n" * ((size - 40_000) // 5),
        "a grid of 64 columns": "+" + "-----+" * 64 + "\n" + ("|" + "  x  |" * 64 + "\n") * (size // 386),
        "an option continued": ".. note::\n   :class: a\n" + " x\n" * (size // 3),
        "a table row continued": "= =\na b\n" + "  c\n" * (size // 4) + "= =\n",
        "a list-table cell continued": ".. list-table::\n\n   * - a\n" + "     b\n" * (size // 7),
        "lines 24 levels deep": "".join(" " * k + "t\n" for k in range(24)) + (" " * 24 + "x\n") * (size // 26),
        "references scanned back": "a_-" * (size // 3),
        "a role defined over spaces": ".. role:: a" + " " * size + "b\n",
        "default roles and their text": ".. default-role:: x\n\n" * (size // 60) + "`a` " * (size // 8),
        "fields": ":a: x\n\n" * (size // 7),
        "a grid's border lines": "+" + "-+" * 64 + "\n" + "+\n" * (size // 2),
        "2,000 roles defined and used": "".join(f".. role:: r{k}(r{k + 1})\n" for k in range(2_000)) + "\n"
        + " ".join(f":r{k % 2_000}:`x`" for k in range(size // 12)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folders", nargs="*")
    parser.add_argument("--passes", type=int, default=3)
    args = parser.parse_args(argv)
    files = sorted({str(p) for folder in (args.folders or _default_folders()) for p in Path(folder).rglob("*.rst")})
    pages = [(f, Path(f).read_bytes()) for f in files]
    seconds, outcome, notes = [], Counter[str](), Counter[str]()
    for _ in range(max(1, args.passes)):
        outcome.clear()
        notes.clear()
        start = time.perf_counter()
        for name, data in pages:
            try:
                loaded = load_rst(name, data)
                outcome["read"] += 1
                for part in loaded.note.split("; "):
                    if part.startswith("not read: "):
                        for what in part[len("not read: "):].split(", "):
                            notes[what.split(" ", 1)[1].rstrip("s")] += int(what.split(" ", 1)[0])
            except ElectaError as e:
                reason = str(e).split(": ", 1)[1]
                outcome["refused: " + reason.split(" (")[0].split(":")[0]] += 1
            except Exception as e:  # (a crash is what this bench looks for)
                outcome[f"CRASH {type(e).__name__}"] += 1
                print(f"crash on {name}: {e!r}", file=sys.stderr)
        seconds.append(time.perf_counter() - start)
    size = sum(len(d) for _, d in pages)
    print(f"{len(pages)} files, {size / 1e6:.2f} MB, median {statistics.median(seconds):.2f} s over {len(seconds)} passes"
          f" ({size / 1e6 / statistics.median(seconds):.1f} MB/s)")
    for what, n in outcome.most_common():
        print(f"  {n:5d} {what}")
    print("not read, in the pages read:", ", ".join(f"{n} {w}" for w, n in notes.most_common()) or "nothing")
    print("\nhostile pages, 1 MB each: seconds, peak MB (a second reading, under tracemalloc), characters out")
    for name, source in _hostile(1_000_000).items():
        start = time.perf_counter()
        page = read_rst(source)
        took = time.perf_counter() - start
        tracemalloc.start()
        read_rst(source)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        out = sum(len(x) if isinstance(x, str) else len(x[1]) for x in page.lines)
        print(f"  {name:28s} {took:6.2f} s {peak / 1e6:7.1f} MB {out:>10,d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

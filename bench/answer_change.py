"""What a change does to answers: one folder read into a fresh store (the default embedder), a
file of questions asked of it through the ask pipeline (the extractive answerer), each answer
printed with its citations, so that two checkouts' outputs can be compared line by line.

    python bench/answer_change.py FOLDER[,FOLDER…] bench/questions/cmake.txt > new.txt
    PYTHONPATH=/path/to/old/src python bench/answer_change.py FOLDER bench/questions/cmake.txt > old.txt
    diff old.txt new.txt

The question files under ``bench/questions`` are the ones the README quotes, each written for one
documentation set on this machine: ``pip-commands.txt`` (``/usr/share/doc/python3-pip/html``),
``cmake.txt`` (``/usr/share/cmake-3.25/Help/command`` and ``…/manual``), ``cargo-options.txt``
(Cargo's book, ``…/share/doc/rust/html/cargo/commands``), ``valgrind.txt`` (``/usr/share/doc/valgrind``),
``django.txt`` (the ``docs`` folder of Django 5.1.4's source archive, ``pip download --no-deps
--no-binary :all: django==5.1.4``, but for ``releases``, ``_ext``, ``_theme`` and ``man``).
Comparing two checkouts that read pages alike, ``--data DIR`` reads the folder into a kept store
once and asks each checkout's questions of it.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from click.testing import CliRunner

from electa.cli.main import cli


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folders", help="folders to read, separated by commas")
    ap.add_argument("questions", type=Path, help="a file of questions, one a line")
    ap.add_argument("--data", type=Path, help="a store to read into and ask of (kept: a second run reads only"
                                              " what changed), instead of a fresh one")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as fresh:
        data = str(args.data or fresh)
        runner = CliRunner()
        read = runner.invoke(cli, ["ingest", "--data", data, *args.folders.split(",")])
        if read.exit_code or read.exception is not None:  # (a failed read would show as changed answers)
            raise SystemExit(f"ingest failed: {read.exception!r}\n{read.output}")
        print("# " + read.output.splitlines()[0])  # (what was read: compared too)
        for question in (q.strip() for q in args.questions.read_text(encoding="utf-8").splitlines()):
            if question:
                print("==", question)
                print(runner.invoke(cli, ["ask", "--data", data, question]).output.strip())


if __name__ == "__main__":
    main()

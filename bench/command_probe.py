"""Whether an answer shows the command its page gives: questions built from documentation's own
structure, asked of a store of it. No labels are needed: a section in which a sentence ending
with a colon introduces a short code block ("Upgrade your `pip` by running:" over
``$ pip install --upgrade pip``) is a question, its heading ("Upgrading pip"), whose command is
known.

    python bench/command_probe.py --save-questions q.json FOLDER ...        # this checkout: build, ask
    PYTHONPATH=/path/to/old/src python bench/command_probe.py --questions q.json FOLDER ...   # another checkout

Questions are built by the code that runs the bench (its readers and its answer's sentences:
``electa.answer.segment``, and the answer's rule for what is short enough to show); pass the
saved questions to the other checkout so that both ask the same ones. Each folder is read into
a fresh store (the default embedder), each heading is asked through the ask pipeline, and the
bench counts the answers that cite the section (or one under it), that hold the command (its first
command line, as written), and the answers' median length. Documentation on this machine: pip's
(``/usr/share/doc/python3-pip/html``, MyST and reStructuredText), npm's
(``/usr/lib/node_modules/npm/docs/content``, Markdown), Cargo's (rustup's HTML book).
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import tempfile
from pathlib import Path

from electa import Access, Caller, Engine
from electa.errors import ElectaError
from electa.ingest.loaders import loader_for


def questions(folder: Path) -> list[dict[str, str]]:
    """One per section that introduces a short command: its heading, the command, the page."""
    from electa.answer.extractive import CODE_CHARS, CODE_LINES, _commands  # (the rule of this checkout)
    from electa.answer.segment import segment

    found, seen = [], set()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        name = path.name.removesuffix(".gz")
        try:
            data = path.read_bytes()
            if path.suffix == ".gz":
                import gzip
                data = gzip.decompress(data)
            loaded = loader_for(name)(name, data)
        except (ElectaError, OSError, ValueError):
            continue
        for doc in loaded.documents:
            for section in doc.sections:
                heading = section.path[-1] if section.path else doc.title
                sentences = segment(section.text)
                for s, nxt in itertools.pairwise(sentences):
                    commands = _commands(nxt.text) if nxt.kind == "code" else []
                    if (s.text.endswith(":") and commands and len(commands) <= CODE_LINES
                            and sum(map(len, commands)) <= CODE_CHARS):
                        key = " ".join(heading.lower().split())
                        if len(key.split()) >= 2 and key not in seen:
                            seen.add(key)
                            found.append({"question": heading, "command": commands[0], "page": doc.title,
                                          "folder": str(folder)})
                        break
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folders", nargs="+", type=Path)
    ap.add_argument("--save-questions", type=Path)
    ap.add_argument("--questions", type=Path, help="questions another run saved (ask the same ones)")
    args = ap.parse_args()
    if args.questions:
        asked = json.loads(args.questions.read_text())
    else:
        asked = [q for folder in args.folders for q in questions(folder)]
        if args.save_questions:
            args.save_questions.write_text(json.dumps(asked, indent=1))
    caller = Caller("default")
    rows = []
    for folder in args.folders:
        mine = [q for q in asked if q["folder"] == str(folder)]
        counts = {"questions": len(mine), "cites the section": 0, "holds the command": 0, "and cites the section": 0}
        lengths = []
        with tempfile.TemporaryDirectory() as tmp, Engine.open(Path(tmp) / "data") as engine:
            engine.ingest([folder], Access("default"))
            for q in mine:
                events = list(engine.ask(q["question"], caller))
                answer = "".join(str(ev.data.get("token", "")) for ev in events if ev.kind == "token")
                cited = [str(c.get("title", "")) for ev in events if ev.kind == "citations"
                         for c in ev.data.get("citations", [])]  # type: ignore[union-attr]
                page = any(q["question"] in c.split(" > ") for c in cited)  # (its section, or one under it)
                holds = q["command"] in answer
                counts["cites the section"] += page
                counts["holds the command"] += holds
                counts["and cites the section"] += holds and page
                lengths.append(len(answer))
        rows.append({"folder": str(folder), **counts, "answer chars p50": statistics.median(lengths) if lengths else 0})
    for row in rows:
        print(json.dumps(row))


if __name__ == "__main__":
    main()

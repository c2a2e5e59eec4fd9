"""Questions built from rustdoc pages' own structure, asked of a store of them: which section
stands for the method asked about, and whether asking since when it is stable is answered with
its version from its own sections. No labels are needed: each inherent method of a type's page
(its ``section.method`` under ``#implementations-list``, with the version in its ``span.since``)
is a question whose right section is known.

    python bench/rustdoc_probe.py FOLDER                  # FOLDER: rustdoc struct pages (struct.Vec.html, ...)
    PYTHONPATH=/path/to/old/src python bench/rustdoc_probe.py FOLDER   # another checkout's reading

The folder is read into a fresh store by the code on ``PYTHONPATH`` (the default embedder), then
for each method "What does Type::name do?" is searched (the first passing hit: its own section,
a subsection of it such as its "Examples", or elsewhere) and "Since which Rust version is
Type::name stable?" is asked (the extractive answer holds the version, and cites a section of
that method). rustdoc's pages ship with the Rust toolchain (``rustup doc``'s
``share/doc/rust/html/std``).
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser

from electa import Access, Caller, Engine


def methods(folder: Path) -> list[tuple[str, str, str]]:
    """(type, method, the version it is stable since or '') of each page's inherent methods."""
    found = []
    for page in sorted(folder.glob("struct.*.html")):
        kind = page.stem.split(".", 1)[1]
        listed = LexborHTMLParser(page.read_text(encoding="utf-8")).css_first("#implementations-list")
        seen: set[str] = set()
        for section in listed.css("section.method") if listed is not None else []:
            anchor = section.attributes.get("id") or ""
            name = anchor.split(".", 1)[1].split("-")[0] if anchor.startswith("method.") else ""
            if name and name not in seen:
                seen.add(name)
                since = section.css_first("span.since")
                found.append((kind, name, since.text(strip=True).split(" ")[0] if since is not None else ""))
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", type=Path)
    args = ap.parse_args()
    asked = methods(args.folder)
    counts = {"questions": len(asked), "own section": 0, "a subsection of it": 0, "elsewhere": 0, "nothing passes": 0,
              "asked when": 0, "answer holds the version": 0, "and cites the method": 0}
    caller = Caller("default")
    with tempfile.TemporaryDirectory() as tmp, Engine.open(Path(tmp) / "data") as engine:
        engine.ingest([args.folder], Access("default"))
        for kind, name, since in asked:
            method = re.compile(rf"\bfn {re.escape(name)}\b")
            hit = next(iter(engine.search(f"What does {kind}::{name} do?", caller, top=1).passing), None)
            trail = hit.title.split(" > ") if hit is not None else []
            counts["nothing passes" if hit is None else "own section" if method.search(trail[-1])
                   else "a subsection of it" if len(trail) > 1 and method.search(trail[-2]) else "elsewhere"] += 1
            if not since:
                continue
            counts["asked when"] += 1
            events = list(engine.ask(f"Since which Rust version is {kind}::{name} stable?", caller))
            answer = "".join(str(ev.data.get("token", "")) for ev in events if ev.kind == "token")
            cited = [str(c.get("title", "")) for ev in events if ev.kind == "citations"
                     for c in ev.data.get("citations", [])]  # type: ignore[union-attr]
            if since in answer:
                counts["answer holds the version"] += 1
                counts["and cites the method"] += any(method.search(c) and kind in c for c in cited)
    print(json.dumps(counts))


if __name__ == "__main__":
    main()

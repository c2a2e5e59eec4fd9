"""How many pages of some folders only send their visitor to another (a meta refresh on a stub:
:mod:`electa.text.refresh`), which a folder's ingest leaves out.

    python bench/moved_pages.py FOLDER ...

Each ``.html``, ``.htm`` and ``.rst`` file under each FOLDER is read by its loader
(:func:`electa.ingest.loaders.loader_for`, in this process) and counted when it names where it
moved; the first two of each folder are printed with their targets. Rust's documentation
(``~/.rustup/toolchains/*/share/doc/rust/html``: rustdoc writes a "Redirection" page for every
renamed item) and pip's (``/usr/share/doc/python3-pip/html``: "This page has moved") hold many.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from electa.errors import ElectaError
from electa.ingest.loaders import loader_for

SUFFIXES = (".html", ".htm", ".rst")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folders", nargs="+", type=Path)
    args = ap.parse_args()
    total = moved_total = 0
    for folder in args.folders:
        pages = moved = failed = 0
        for path in sorted(p for p in folder.rglob("*") if p.suffix.lower() in SUFFIXES and p.is_file()):
            pages += 1
            name = path.relative_to(folder).as_posix()
            try:
                loaded = loader_for(name)(name, path.read_bytes())
            except ElectaError:
                failed += 1
                continue
            if loaded.moved_to:
                moved += 1
                if moved <= 2:
                    print(f"    {name} -> {loaded.moved_to}")
        print(f"{folder}: {moved} of {pages} pages moved ({failed} not read)")
        total, moved_total = total + pages, moved_total + moved
    print(f"all: {moved_total} of {total} pages moved")


if __name__ == "__main__":
    main()

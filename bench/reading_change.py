"""What a change to the readers changes: every page of some folders read, and compared with the
reading another checkout of Electa saved.

    python bench/reading_change.py --save before.pkl FOLDER ...     # with the code before
    python bench/reading_change.py --against before.pkl FOLDER ...  # with the code after

Each ``.html``, ``.htm``, ``.md`` and ``.markdown`` file (``--types``) under each FOLDER (at most ``--limit``
per folder, sorted by path) is read by its loader (:func:`electa.ingest.loaders.loader_for`,
in this process: no worker, no limits) into its sections (heading trail and text). ``--save``
writes the readings; ``--against`` prints, per folder, how many pages read otherwise, the lines
the new readings hold that the old ones did not (the most frequent first), and, for
``--show N``, the first N pages' changed sections. Run the two with the same folders: the
reading before is taken by the other checkout's code on ``PYTHONPATH``
(``PYTHONPATH=/path/to/old/src python bench/reading_change.py --save …``).
"""

from __future__ import annotations

import argparse
import pickle
import sys
from collections import Counter
from pathlib import Path

from electa.errors import ElectaError
from electa.ingest.loaders import loader_for

SUFFIXES = (".html", ".htm", ".md", ".markdown")
Reading = list[tuple[tuple[str, ...], str]] | str


def read_all(folders: list[Path], limit: int, suffixes: tuple[str, ...] = SUFFIXES) -> dict[str, Reading]:
    out: dict[str, Reading] = {}
    for folder in folders:
        files = sorted(p for p in folder.rglob("*") if p.suffix.lower() in suffixes and p.is_file())[:limit]
        for path in files:
            try:
                loaded = loader_for(path.name)(path.name, path.read_bytes())
                out[str(path)] = [(s.path, s.text) for d in loaded.documents for s in d.sections]
            except ElectaError as e:
                out[str(path)] = f"refused: {e}"
    return out


def _lines(reading: Reading) -> list[str]:
    return [reading] if isinstance(reading, str) else [line for _, t in reading for line in t.split("\n")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folders", nargs="+", type=Path)
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--save", type=Path)
    what.add_argument("--against", type=Path)
    ap.add_argument("--limit", type=int, default=1000, help="files read per folder")
    ap.add_argument("--top", type=int, default=25, help="most frequent new lines printed")
    ap.add_argument("--show", type=int, default=0, help="pages whose changed sections are printed")
    ap.add_argument("--types", default=",".join(s.lstrip(".") for s in SUFFIXES), help="the file types read")
    args = ap.parse_args()
    now = read_all(args.folders, args.limit, tuple(f".{t.strip().lower()}" for t in args.types.split(",")))
    if args.save:
        with args.save.open("wb") as f:
            pickle.dump(now, f)
        print(f"{len(now)} pages read, saved to {args.save}")
        return
    with args.against.open("rb") as f:
        before: dict[str, Reading] = pickle.load(f)
    new_lines: Counter[str] = Counter()
    shown = 0
    for folder in args.folders:
        pages = [p for p in now if Path(p).is_relative_to(folder)]
        changed = [p for p in pages if before.get(p) != now[p]]
        print(f"{folder}: {len(changed)} of {len(pages)} pages read otherwise")
        for page in changed:
            old = set(_lines(before.get(page, "")))
            new_lines.update(line.strip()[:100] for line in _lines(now[page]) if line.strip() and line not in old)
            if shown < args.show and not isinstance(now[page], str):
                shown += 1
                print(f"  == {page}")
                was = set(before.get(page, []) if not isinstance(before.get(page), str) else [])
                for path, text in now[page]:
                    if (path, text) not in was:
                        print(f"    {' > '.join(path) or '(page)'}: {text[:200]!r}")
    print(f"\nlines the new readings hold that the old did not, most frequent first (of {sum(new_lines.values())}):")
    for line, n in new_lines.most_common(args.top):
        print(f"  {n:5}  {line!r}")


if __name__ == "__main__":
    sys.exit(main())

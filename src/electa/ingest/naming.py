"""What a file is called in the store, and listing folders without losing an error.

A source is named by its path under the folder it was ingested from, led by that folder's
name (``help-center/billing/refunds.md``), or by its own name when a file is given alone:
never by the server's absolute path, which would leak the directory layout to every search key
and tie the source to where the folder happens to sit on disk.

The path each name stands for is recorded per organisation and agent (``roots``; the path as
given, made absolute, symlinks kept: a ``kb`` link re-pointed to a new release is still ``kb``).
The rules are few, so that no folder can overwrite or delete another's sources by accident:

- a name stands for one path; a name is one plain path segment (no ``/``, ``.``, ``..``);
- another path under a recorded name is refused. When the recorded path is gone (the folder
  moved), ``--as NAME`` given explicitly re-points the name; while it exists, nothing does
  (name the other folder differently);
- a recorded path keeps its name (``--as`` cannot rename it);
- roots never nest: a path inside a recorded one, around one, or inside another path of the
  same call is refused (through symlinks too), so no file is ever stored under two names;
- the names of one call are decided and recorded in one store transaction against the roots
  as they are then: a refusal records nothing, and two syncs at once cannot both take a name.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from electa.errors import IngestError


class RootRegistry(Protocol):
    def claim_roots(self, org: str, agent: str,
                    decide: Callable[[dict[str, str]], Sequence[tuple[str, str]]]) -> None: ...


@dataclass
class Listing:
    """The files under the given paths, and the paths that could not be listed whole."""

    files: list[tuple[Path, Path]] = field(default_factory=list)  # (file, the path it was found under)
    errors: list[tuple[str, str]] = field(default_factory=list)


def list_files(paths: list[Path]) -> Listing:
    """Files under the given paths, sorted, hidden files and folders skipped; every folder that
    could not be read is an error (``Path.rglob`` would skip it without a word, and a sync would
    then delete what it holds)."""
    out = Listing()
    for path in paths:
        if path.is_dir():
            found: list[Path] = []

            def failed(exc: OSError, root: Path = path) -> None:
                out.errors.append((str(exc.filename or root), f"could not be listed ({exc.strerror or exc})"))

            for folder, dirs, names in os.walk(path, onerror=failed):
                dirs[:] = [d for d in dirs if not d.startswith(".")]
                found.extend(Path(folder) / n for n in names if not n.startswith("."))
            out.files.extend((f, path) for f in sorted(found) if f.is_file())
        elif path.is_file():
            out.files.append((path, path))
        else:
            raise IngestError(str(path), "no such file or folder")
    return out


def where(path: Path) -> str:
    """The path a name records: absolute and normalised, symlinks kept (not resolved)."""
    return os.path.normpath(path.absolute())


def check_name(name: str) -> str:
    if not name or name != name.strip() or name in (".", "..") or "/" in name or "\\" in name \
            or any(ord(c) < 32 for c in name):
        raise IngestError(name, "a source name is one path segment: not empty, no '/', not '.' or '..',"
                          " no surrounding blanks")
    return name


@dataclass(frozen=True)
class Naming:
    """The name of one given path; ``record`` when it is new (or re-pointed)."""

    path: Path
    where: str
    name: str
    record: bool = True


def _nested(a: str, b: str) -> bool:
    """Whether one path lies inside the other, as written or once symlinks are followed."""
    def inside(child: str, parent: str) -> bool:
        return child == parent or child.startswith(parent.rstrip(os.sep) + os.sep)

    real_a, real_b = os.path.realpath(a), os.path.realpath(b)
    return inside(a, b) or inside(b, a) or inside(real_a, real_b) or inside(real_b, real_a)


def plan(registered: dict[str, str], org: str, agent: str, paths: Sequence[Path],
         as_name: str | None = None) -> list[Naming]:
    """Names for ``paths`` given the recorded roots, by the rules above; raises
    :class:`IngestError` naming the path refused."""
    if as_name is not None:
        check_name(as_name)
        if len(paths) != 1:
            raise IngestError(", ".join(map(str, paths)), "--as names one folder or file; give one path")
    by_path = {p: n for n, p in registered.items()}
    heres = [where(p) for p in paths]
    for i, a in enumerate(heres):
        for b in heres[i + 1:]:
            if _nested(a, b):
                raise IngestError(f"{a}, {b}", "one of these paths holds the other; give the outer one alone")
    out: list[Naming] = []
    for path, here in zip(paths, heres, strict=True):
        known = by_path.get(here)
        if known is not None:
            if as_name not in (None, known):
                raise IngestError(str(path), f"it is stored as {known!r}; a stored folder keeps its name")
            out.append(Naming(path, here, known, record=False))
            continue
        for other_name, other in registered.items():
            if _nested(here, other) and not (as_name == other_name and not Path(other).exists()):
                if _nested(other, here) and len(os.path.realpath(other)) <= len(os.path.realpath(here)):
                    why = f"it is inside {other}, stored as {other_name!r}: sync that folder instead"
                else:
                    why = (f"it holds {other}, stored as {other_name!r}: delete those sources first (`electa sources"
                           f" delete {other_name}/…`), or keep ingesting that folder on its own")
                raise IngestError(str(path), f"{why} (a file is stored under one name only; roots overlap)")
        name = check_name(as_name or Path(here).name)
        taken = registered.get(name)
        if taken is not None:
            if Path(taken).exists():
                raise IngestError(str(path), f"{taken} is already stored as {name!r} for {org}/{agent}: name this one"
                                  " differently with --as NAME")
            if as_name != name:
                raise IngestError(str(path), f"{taken} (not there now) is stored as {name!r} for {org}/{agent}: if this"
                                  f" is that folder moved, run again with --as {name}; otherwise name this one with --as NAME")
        out.append(Naming(path, here, name))
    names = [n.name for n in out]
    if len(set(names)) != len(names):
        raise IngestError(", ".join(map(str, paths)), "two of these paths would be stored under one name; ingest them"
                          " one at a time, naming one with --as NAME")
    return out


def claim(registry: RootRegistry, org: str, agent: str, paths: Sequence[Path], as_name: str | None = None) -> list[Naming]:
    """Plan and record the names of ``paths`` in one store transaction (see the module docstring)."""
    planned: list[Naming] = []

    def decide(registered: dict[str, str]) -> list[tuple[str, str]]:
        planned[:] = plan(registered, org, agent, paths, as_name)
        return [(n.name, n.where) for n in planned if n.record]

    registry.claim_roots(org, agent, decide)
    return planned

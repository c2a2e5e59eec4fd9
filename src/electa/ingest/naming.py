"""What a file is called in the store, and listing folders without losing an error.

A source is named by its path under the folder it was ingested from, led by that folder's
name (``help-center/billing/refunds.md``), or by its own name when a file is given alone:
never by the server's absolute path, which would leak the directory layout to every search key
and tie the source to where the folder happens to sit on disk.

The path each name stands for is recorded per organisation and agent (``roots``; the path as
given, made absolute, symlinks kept: a ``kb`` link re-pointed to a new release is still ``kb``).
The rules, each so that no folder can overwrite or delete another's sources by accident:

- a name stands for one path. Another path under a recorded name is refused, whether the
  first still exists or not (a share may be unmounted for a minute); ``--as NAME`` given
  explicitly re-points the name (a folder that really moved);
- ``--as NEW`` on a recorded path renames its sources (``OLD/…`` becomes ``NEW/…``);
- a folder inside a recorded one is named inside it (``help-center/billing/…``), and a folder
  recorded around ones recorded before adopts their sources under its own name: no file is
  ever stored twice under two names;
- a name is one path segment: no ``/``, no ``.`` or ``..``, no surrounding blanks.

Names are planned for every path of a call before anything is recorded, so a refusal of one
path records nothing and leaves a sync with nothing to delete.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from electa.errors import IngestError


class RootRegistry(Protocol):
    def roots(self, org: str, agent: str) -> dict[str, str]: ...

    def set_root(self, org: str, agent: str, name: str, path: str) -> None: ...

    def forget_root(self, org: str, agent: str, name: str) -> None: ...

    def rename_prefix(self, org: str, agent: str, old: str, new: str) -> list[str]: ...


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
    """The name planned for one given path, and what recording it changes."""

    path: Path
    where: str
    name: str
    record: bool = True  # False for a folder named inside a recorded one
    renames: tuple[tuple[str, str], ...] = ()  # (old name, new name) whose sources move first
    forget: tuple[str, ...] = ()  # names no longer recorded


def _inside(child: str, parent: str) -> bool:
    return child != parent and child.startswith(parent.rstrip(os.sep) + os.sep)


def plan(registry: RootRegistry, org: str, agent: str, paths: list[Path], as_name: str | None = None) -> list[Naming]:
    """Names for ``paths`` by the rules above; raises :class:`IngestError` naming the path
    refused. Records nothing (see :func:`apply`)."""
    if as_name is not None:
        check_name(as_name)
        if len(paths) != 1:
            raise IngestError(", ".join(map(str, paths)), "--as names one folder or file; give one path")
    registered = registry.roots(org, agent)
    by_path = {p: n for n, p in registered.items()}
    out: list[Naming] = []
    for path in paths:
        here = where(path)
        known = by_path.get(here)
        if known is not None and as_name in (None, known):
            out.append(Naming(path, here, known, record=False))
            continue
        if known is not None:  # --as NEW on a recorded path: its sources move to the new name
            assert as_name is not None
            _free(registered, as_name, here, path, org, agent, explicit=False)
            out.append(Naming(path, here, as_name, renames=((known, as_name),), forget=(known,)))
            continue
        parents = [(n, p) for n, p in registered.items() if _inside(here, p)]
        if parents:
            if as_name is not None:
                raise IngestError(str(path), f"it is inside {parents[0][1]}, stored as {parents[0][0]!r}: its files are"
                                  " named inside that name; sync that folder, or drop --as")
            name, parent = max(parents, key=lambda pair: len(pair[1]))
            out.append(Naming(path, here, f"{name}/{Path(os.path.relpath(here, parent)).as_posix()}", record=False))
            continue
        name = check_name(as_name or Path(here).name)
        _free(registered, name, here, path, org, agent, explicit=as_name is not None)
        children = [(n, p) for n, p in registered.items() if _inside(p, here)]
        renames = tuple((n, f"{name}/{Path(os.path.relpath(p, here)).as_posix()}") for n, p in children)
        out.append(Naming(path, here, name, renames=renames, forget=tuple(n for n, _ in children)))
    names = [n.name for n in out]
    if len(set(names)) != len(names):
        raise IngestError(", ".join(map(str, paths)), "two of these paths would be stored under one name; ingest them"
                          " one at a time, naming one with --as NAME")
    return out


def _free(registered: dict[str, str], name: str, here: str, path: Path, org: str, agent: str, explicit: bool) -> None:
    taken = registered.get(name)
    if taken is None or taken == here or explicit:
        return  # explicit --as re-points a recorded name: the user says this is that folder
    gone = "" if Path(taken).exists() else " (it is not there now)"
    raise IngestError(str(path), f"{taken}{gone} is already stored as {name!r} for {org}/{agent}: if this is that"
                      f" folder moved, run again with --as {name}; otherwise name this one with --as NAME")


def apply(registry: RootRegistry, org: str, agent: str, namings: list[Naming]) -> list[str]:
    """Record planned names: move renamed sources, forget replaced names, record new ones.
    Returns the sources that could not be renamed (their new name was taken)."""
    stuck: list[str] = []
    for naming in namings:
        for old, new in naming.renames:
            stuck.extend(registry.rename_prefix(org, agent, old, new))
        for name in naming.forget:
            registry.forget_root(org, agent, name)
        if naming.record:
            registry.set_root(org, agent, naming.name, naming.where)
    return stuck

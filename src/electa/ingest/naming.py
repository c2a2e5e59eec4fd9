"""What a file is called in the store, and listing folders without losing an error.

A source is named by its path under the folder it was ingested from, led by that folder's
name (``help-center/billing/refunds.md``), or by its own name when a file is given alone:
never by the server's absolute path, which would leak the directory layout to every search key
and tie the source to where the folder happens to sit on disk.

The folder a name stands for is recorded per organisation and agent (``roots``), so that

- a folder moved elsewhere keeps its name (its recorded path no longer exists);
- another folder with the same name is refused while the first still exists, instead of
  silently overwriting its sources (give it another name: ``--as``);
- a subfolder of a recorded folder is named inside it (``help-center/billing/…``), so syncing
  it after its parent touches the same sources, not a second copy.
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


def root_name(registry: RootRegistry, org: str, agent: str, path: Path, as_name: str | None = None) -> str:
    """The name under which ``path`` (a folder or a file given alone) is stored, recorded."""
    resolved = path.resolve()
    registered = registry.roots(org, agent)
    if as_name is None:
        for name, where in registered.items():
            if where == str(resolved):
                return name
        inside = [(name, Path(where)) for name, where in registered.items()
                  if resolved.is_relative_to(where) and Path(where).is_dir()]
        if inside:
            parent, folder = max(inside, key=lambda pair: len(pair[1].parts))
            return f"{parent}/{resolved.relative_to(folder).as_posix()}"
    name = (as_name or resolved.name).strip("/")
    if not name:
        raise IngestError(str(path), "a source name cannot be empty; give one with --as NAME")
    taken = registered.get(name)
    if taken is not None and taken != str(resolved) and Path(taken).exists():
        raise IngestError(str(path), f"{taken} is already stored as {name!r} for {org}/{agent}; this one would"
                          " overwrite its sources: give it another name with --as NAME")
    registry.set_root(org, agent, name, str(resolved))
    return name

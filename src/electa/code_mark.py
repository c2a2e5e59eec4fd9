"""A mark of the code this worker runs, for the keys of results that outlive it.

A shared result cache (Redis) outlives a deploy, and workers of two releases may share it while
one replaces the other. The cache key names the constants that order or cut by value
(:func:`electa.engine.serving_recipe`), but what a search or an answer returns also hangs on
constants no list keeps up with (coverage's base and span, the Q&A and graph minimums, the
modes' limits, the LLM's prompts) and on the code itself. So the key also carries a digest of
every Python file of the installed package: any change to the code, a constant or a prompt keys
the results apart, and a deploy leaves the old entries to expire unread. It is read once per
process (about 200 files); a package that is not on disk as files (a zip import) is marked by
its version alone.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

import electa


def digest_of(root: Path) -> str:
    """A digest of each ``.py`` file under ``root``: its path relative to ``root`` and its bytes
    (compiled caches aside), in path order."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        digest.update(f"{path.relative_to(root).as_posix()}\n".encode())
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


@cache
def code_digest() -> str:
    """:func:`digest_of` the installed ``electa`` package, or its version where it is no folder
    of files."""
    root = Path(electa.__file__).parent
    return digest_of(root) if root.is_dir() and (root / "engine.py").is_file() else f"v{electa.__version__}"

"""A mark of the code this worker runs, for the keys of results that outlive it.

A shared result cache (Redis) outlives a deploy, and workers of two releases may share it while
one replaces the other. The cache key names the constants that order or cut by value
(:func:`electa.engine.serving_recipe`), but what a search or an answer returns also hangs on
constants no list keeps up with (coverage's base and span, the Q&A and graph minimums, the
modes' limits, the LLM's prompts) and on the code itself. So the key also carries a digest of
the installed package's code: any change to the code, a constant or a prompt keys the results
apart, and a deploy leaves the old entries to expire unread.

It is computed once, when this module is first imported (about 200 files), so a package
upgraded in place under a running process is not stamped with the new code's mark. Its
``.py`` files are read where the package is a folder holding them; its compiled ``.pyc`` files
where it ships only those; where it is neither (a zip import), no mark of its code can be read,
and the process marks its results as its own alone (a random token, with a warning): workers
then share no cached result, and none replays another's.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from pathlib import Path

from electa.model_files import file_sha256

log = logging.getLogger(__name__)


def digest_of(root: Path, suffix: str = ".py") -> str:
    """A digest of each file named ``*suffix`` under ``root``: its path relative to ``root`` and
    its SHA-256 (:func:`electa.model_files.file_sha256`; compiled caches aside, for ``.py``), in
    path order. A file that cannot be read (a dangling link, no permission) counts by its path as
    ``absent``, so one bad file changes the mark instead of failing every search."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob(f"*{suffix}")):
        rel = path.relative_to(root)
        if suffix == ".py" and "__pycache__" in rel.parts:
            continue
        digest.update(f"{rel.as_posix()}\n{file_sha256(path)}\n".encode())
    return digest.hexdigest()[:16]


def package_digest(root: Path) -> str:
    """The mark of the package at ``root``: its ``.py`` files, or its ``.pyc`` files, or a
    token of this process alone (see the module's docstring)."""
    if root.is_dir() and any(root.glob("*.py")):
        return digest_of(root)
    if root.is_dir() and any(root.rglob("*.pyc")):
        return "pyc-" + digest_of(root, ".pyc")
    log.warning("electa's code at %s is no folder of files: cached results are keyed to this process alone", root)
    return "process-" + secrets.token_hex(8)


_DIGEST = package_digest(Path(__file__).parent)


def code_digest() -> str:
    """:func:`package_digest` of the installed ``electa`` package, read at import."""
    return _DIGEST

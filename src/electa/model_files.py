"""The local model files a result depends on, and a mark of them for result cache keys.

A result cache (Redis, shared by workers, outliving restarts) keys an entry by the settings that
shaped it (:meth:`electa.config.Settings.result_digest`), and a setting that names a file keys it
by the name alone. A learned ranker trained again into the same ``ELECTA_LTR`` file, a
cross-encoder exported again into the same ``ELECTA_RERANK=onnx:`` folder, or a GGUF model
replaced under the same ``ELECTA_LOCAL_MODEL`` name would then be served by the restarted
workers while the cache kept replaying what the old model ranked or wrote, for up to its TTL.

So each file's size, modification time (ns) and inode, as the engine opens, are in the key:
replacing a file (``cp`` over it, ``mv`` a new one in, an export rewriting it) changes at
least one, a restart alone changes none, so restarted workers still share their entries. A stat
is what a key can afford: hashing a 1 GB GGUF at every start would not be; the stat is taken
once, before the models load, so a file replaced while a worker runs keeps the worker's key
(it serves the model it loaded) until it restarts.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from electa.config import Settings
from electa.errors import ElectaError


def model_files(settings: Settings) -> list[Path]:
    """The local files ``settings`` load models from: the ranker file (``ltr``), the files of an
    ``onnx:`` reranker's folder, and the local answerer's GGUF file. Agents' own rankers and
    rerankers are not files named by settings: they are keyed by the agent's stored settings.

    >>> model_files(Settings(ltr="agent", rerank="", answerer="extractive"))
    []
    >>> model_files(Settings(ltr="/srv/ranker.json"))
    [PosixPath('/srv/ranker.json')]
    """
    files: list[Path] = []
    if settings.ltr and settings.ltr != "agent":
        files.append(Path(settings.ltr).expanduser())
    if settings.rerank.startswith("onnx:"):
        folder = Path(settings.rerank.removeprefix("onnx:")).expanduser()
        files.extend(sorted(p for p in folder.glob("*") if p.is_file()) if folder.is_dir() else [folder])
    if settings.answerer == "local":
        from electa.answer.local_llm import resolve_model

        try:
            files.append(resolve_model(settings.local_model, settings).path)
        except ElectaError:  # (a missing model fails where it loads, with its own message)
            files.append(Path(settings.local_model))
    return files


def files_mark(paths: Iterable[Path]) -> str:
    """A short digest of each file's path, size, modification time and inode ("absent" for a
    file that is not there): the same while the files stay, another when one is replaced.

    >>> files_mark([]) == files_mark([])
    True
    """
    parts = []
    for path in paths:
        try:
            st = path.stat()
            parts.append(f"{path}:{st.st_size}:{st.st_mtime_ns}:{st.st_ino}")
        except OSError:
            parts.append(f"{path}:absent")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]

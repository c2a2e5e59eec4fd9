"""The local model files a result depends on, and a mark of them for result cache keys.

A result cache (Redis, shared by workers, outliving restarts) keys an entry by the settings that
shaped it (:meth:`electa.config.Settings.result_digest`), and a setting that names a file keys it
by the name alone. A learned ranker trained again into the same ``ELECTA_LTR`` file, a
cross-encoder exported again into the same ``ELECTA_RERANK=onnx:`` folder, or a GGUF model
replaced under the same ``ELECTA_LOCAL_MODEL`` name would then be served by the restarted
workers while the cache kept replaying what the old model ranked or wrote, for up to its TTL.

So the files' contents are in the key (SHA-256, by role and name within the folder), and the
ranker's and the GGUF's paths are not (:func:`by_content`): hosts that hold the same model in
different places share their entries (an ``onnx:`` folder's path stays: it is the reranker's
identity, which learned rankers and cuts are checked against). Each file is stat-ed as the
engine opens, before the judges load it (size, modification and change times, inode, device),
and hashed once, as the HTTP app starts (or at the first keyed request; a one-shot CLI search
never pays for it); a file whose stat changed in between was replaced after it was loaded, and
that worker keys its results with a random mark of its own, so it neither replays nor fills the
others' entries. The local
answerer loads its GGUF at the first answer, not as the engine opens: a GGUF replaced after
the worker started and before its first answer is the one window left (restart the
workers after replacing a model, as for any model change).
"""

from __future__ import annotations

import hashlib
import secrets
import threading
from pathlib import Path

from electa.config import Settings
from electa.errors import ElectaError

CHUNK = 1 << 20


def model_files(settings: Settings) -> list[tuple[str, Path | None]]:
    """The local files ``settings`` load models from, each with its role: the ranker file
    (``ltr``), the files of an ``onnx:`` reranker's folder, and the local answerer's GGUF file
    (``None`` for a model name that resolves to no file: it fails where it loads). Agents' own
    rankers and rerankers are not files named by settings: they are keyed by the agent's stored
    settings (the reranker by its model's SHA-256).

    >>> model_files(Settings(ltr="agent", rerank="", answerer="extractive"))
    []
    >>> model_files(Settings(ltr="/srv/ranker.json"))
    [('ltr', PosixPath('/srv/ranker.json'))]
    """
    files: list[tuple[str, Path | None]] = []
    if settings.ltr and settings.ltr != "agent":
        files.append(("ltr", Path(settings.ltr)))  # (opened as written: electa.judges.ltr.load_model_file)
    if settings.rerank.startswith("onnx:"):
        from electa.judges.scorers import onnx_files

        folder = Path(settings.rerank.removeprefix("onnx:")).expanduser()  # (as electa.judges.scorers opens it)
        files.extend((f"rerank:{p.name}", p) for p in onnx_files(folder))
    if settings.answerer == "local":
        from electa.answer.local_llm import resolve_model

        try:
            gguf = resolve_model(settings.local_model, settings).path
        except ElectaError:
            files.append(("answerer", None))
        else:
            files.append(("answerer", gguf))
            # (transformers reads a tokenizer, its vocabulary and templates beside the GGUF when
            # they are there; the folder's other files, such as another model's download, not)
            files.extend((f"answerer:{name}", gguf.parent / name) for name in BESIDE_GGUF)
            try:
                templates = sorted(p for p in (gguf.parent / "additional_chat_templates").glob("*.jinja") if p.is_file())
            except OSError:
                templates = []
            files.extend((f"answerer:additional_chat_templates/{p.name}", p) for p in templates)
    return files


# What transformers may read beside a GGUF it loads (its tokenizer classes' files, templates).
BESIDE_GGUF = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
               "chat_template.jinja", "chat_template.json", "generation_config.json", "config.json", "vocab.json",
               "merges.txt", "tokenizer.model")


def by_content(settings: Settings) -> Settings:
    """``settings`` with each model file's path replaced by its role, for
    :meth:`~electa.config.Settings.result_digest`: the files are keyed by their contents
    (:class:`ModelFilesMark`), so where a host keeps them must not split a shared cache.

    >>> by_content(Settings(ltr="/srv/a/ranker.json")).ltr, by_content(Settings(ltr="agent")).ltr
    ('file', 'agent')
    """
    update: dict[str, str] = {}
    if settings.ltr and settings.ltr != "agent":
        update["ltr"] = "file"
    if settings.answerer == "local":
        from electa.answer.local_llm import local_model_names

        if settings.local_model not in local_model_names():
            update["local_model"] = "file"
    return settings.model_copy(update=update) if update else settings


def _stat(path: Path | None) -> tuple[int, ...] | None:
    if path is None:
        return None
    try:
        st = path.stat()
    except OSError:
        return None
    # (ctime too: a copy in place that keeps the size and the modification time changes it)
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev


def file_sha256(path: Path | None) -> str:
    """The SHA-256 of the file at ``path``, read in blocks; ``absent`` where there is none to read."""
    if path is None:
        return "absent"
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            while block := fh.read(CHUNK):
                digest.update(block)
    except OSError:
        return "absent"
    return digest.hexdigest()


class ModelFilesMark:
    """The mark of ``settings``' model files: stat-ed now (call it before the models load),
    hashed at the first :meth:`mark`."""

    def __init__(self, settings: Settings) -> None:
        self._files = model_files(settings)
        self._opened = [_stat(p) for _, p in self._files]
        self._mark: str | None = None
        self._lock = threading.Lock()
        self._own = secrets.token_hex(16)  # this worker's alone, when a file changed under it

    def mark(self) -> str:
        with self._lock:
            if self._mark is None:
                parts = []
                for (role, path), opened in zip(self._files, self._opened, strict=True):
                    # (hashed between two stats: a file replaced since it was loaded, or while
                    # it is read, is not what this worker serves, whatever its bytes)
                    content = file_sha256(path)
                    if _stat(path) != opened:
                        content = f"replaced since this worker loaded it: {self._own}"
                    parts.append(f"{role}={content}")
                self._mark = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]
            return self._mark

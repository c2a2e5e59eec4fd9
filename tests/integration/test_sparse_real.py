"""The learned-sparse leg with the real SPLADE-tiny weights: the numpy forward pass equals
transformers' own model on them, and the leg runs end to end through the engine and the CLI on
the sample knowledge base (SPEC B3)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from electa import Access, Caller, Engine
from electa.config import Settings
from electa.embedders.hashing import HashEmbedder
from electa.embedders.splade import SpladeEncoder, model_folder
from tests.integration.conftest import electa_cmd

pytestmark = pytest.mark.integration

TEXTS = ["Can I get my money back?", "Error E1042 when exporting to CSV",
         "Refund policy: annual plans are refunded within 30 days of purchase. " * 12, "x",
         # Past 256 word pieces: both cut the text at the same place.
         " ".join(f"invoice{i % 37} billing export csv refund" for i in range(120))]


def test_numpy_splade_equals_the_transformers_model_on_the_same_weights() -> None:
    import torch
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    ours = SpladeEncoder().encode(TEXTS)
    tokenizer = AutoTokenizer.from_pretrained(str(model_folder()))
    model = AutoModelForMaskedLM.from_pretrained(str(model_folder())).eval()
    with torch.no_grad():
        batch = tokenizer(TEXTS, return_tensors="pt", padding=True, truncation=True, max_length=256)
        logits = model(**batch).logits
        want = (torch.log1p(torch.relu(logits)) * batch["attention_mask"].unsqueeze(-1)).amax(1).numpy()
    for (terms, weights), row in zip(ours, want, strict=True):
        got = np.zeros_like(row)
        got[terms] = weights
        np.testing.assert_allclose(got, row, atol=1e-4)
        assert terms.size and (weights > 0).all()


def test_the_leg_runs_on_the_sample_knowledge_base_through_the_engine_and_the_cli(
        tmp_path: Path, sample_kb_session: Path, env: dict[str, str]) -> None:
    data = tmp_path / "d"
    with Engine.open(data, Settings(sparse="splade"), HashEmbedder()) as engine:
        engine.ingest([sample_kb_session], Access("default"))
        result = engine.search("Error E1042 when exporting to CSV", Caller("default"))
        sparse = next(r for r in result.legs if r.leg == "sparse")
        assert sparse.status.value == "ok" and sparse.hits
        top = engine.store.units([sparse.hits[0].unit_id])[sparse.hits[0].unit_id]
        assert "E1042" in top.text or "E1042" in top.title
    out = subprocess.run([*electa_cmd(), "search", "Error E1042 when exporting to CSV", "--data", str(data), "--json",
                          "--embedder", "hash"], capture_output=True, text=True, env={**env, "ELECTA_SPARSE": "splade"},
                         check=True, timeout=300)
    legs = {leg["leg"]: leg for leg in json.loads(out.stdout)["legs"]}
    assert legs["sparse"]["status"] == "ok" and legs["sparse"]["candidates"] > 0

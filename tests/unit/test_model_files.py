"""Result cache keys notice a model file replaced at the same path (electa.model_files)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from electa.config import Settings
from electa.embedders.hashing import HashEmbedder
from electa.engine import Engine
from electa.model_files import files_mark, model_files


def _recipe(data: Path, settings: Settings) -> str:
    with Engine.open(data, settings, HashEmbedder()) as engine:
        return engine.cache_recipe()


def test_a_ranker_file_trained_again_at_the_same_path_keys_results_apart(tmp_path: Path) -> None:
    # Found by review: a restarted worker served the new ranker while a shared cache replayed
    # what the old one ranked, for up to its TTL.
    from tests.unit.test_ltr import upside_down

    ranker = tmp_path / "ranker.json"
    ranker.write_text(json.dumps(upside_down().to_dict()))
    settings = Settings(ltr=str(ranker))
    first = _recipe(tmp_path / "d", settings)
    assert _recipe(tmp_path / "d", settings) == first  # a restart alone keeps the workers' shared entries
    # `electa train-ltr --out ranker.json --force` again: the same path, another model.
    ranker.write_text(json.dumps(upside_down(trained_on="another split").to_dict()))
    second = _recipe(tmp_path / "d", settings)
    assert second != first
    # A new file moved in over it (same bytes, as a deploy would copy them): keyed apart too.
    copy = tmp_path / "copy.json"
    copy.write_bytes(ranker.read_bytes())
    os.replace(copy, ranker)
    assert _recipe(tmp_path / "d", settings) not in (first, second)


def test_the_files_an_onnx_reranker_and_a_local_model_load_are_marked(tmp_path: Path) -> None:
    folder = tmp_path / "cross-encoder"
    folder.mkdir()
    for name in ("model.onnx", "tokenizer.json"):
        (folder / name).write_bytes(b"x")
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"gguf")
    settings = Settings(rerank=f"onnx:{folder}", answerer="local", local_model=str(gguf), ltr="agent")
    assert model_files(settings) == [folder / "model.onnx", folder / "tokenizer.json", gguf]
    before = files_mark(model_files(settings))
    (folder / "model.onnx").write_bytes(b"another export")
    assert files_mark(model_files(settings)) != before
    # A file that is not there marks as absent, and stays a key of its own (it fails where it loads).
    gone = files_mark([tmp_path / "missing.json"])
    assert gone == files_mark([tmp_path / "missing.json"]) != files_mark([gguf])

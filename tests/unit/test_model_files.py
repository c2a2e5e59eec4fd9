"""Result cache keys notice a model file replaced at the same path (electa.model_files)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from electa.config import Settings
from electa.embedders.hashing import HashEmbedder
from electa.engine import Engine
from electa.model_files import ModelFilesMark, model_files


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
    # The same bytes moved in over it (a deploy copying them, another host's copy): the same key.
    copy = tmp_path / "copy.json"
    copy.write_bytes(ranker.read_bytes())
    os.replace(copy, ranker)
    assert _recipe(tmp_path / "d", settings) == second


def test_a_model_file_replaced_after_the_worker_loaded_it_keys_that_worker_apart(tmp_path: Path) -> None:
    ranker = tmp_path / "ranker.json"
    ranker.write_text("old")
    loaded = ModelFilesMark(Settings(ltr=str(ranker)))  # stat-ed as the engine opens, before loading
    ranker.write_text("new bytes")
    # Hashed later, the file holds the new model, which this worker never loaded: not its key.
    assert loaded.mark() not in (ModelFilesMark(Settings(ltr=str(ranker))).mark(), _old_mark(tmp_path))
    assert loaded.mark() == loaded.mark()  # (one random mark for the worker, not a new one each time)


def _old_mark(tmp_path: Path) -> str:
    again = tmp_path / "again"
    again.mkdir()
    (again / "ranker.json").write_text("old")
    return ModelFilesMark(Settings(ltr=str(again / "ranker.json"))).mark()


def _onnx_with_external_data(folder: Path, weight: float) -> None:
    """A one-MatMul model whose weights live in ``weights.bin`` (any name an export may choose)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.full((4, 4), weight, dtype=np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], [w])
    onnx.save_model(helper.make_model(graph), str(folder / "model.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)


def test_the_files_an_onnx_reranker_and_a_local_model_read_are_marked(tmp_path: Path) -> None:
    folder = tmp_path / "cross-encoder"
    (folder / "fp32").mkdir(parents=True)
    _onnx_with_external_data(folder, 1.0)
    for name in ("tokenizer.json", "report.md", ".metadata", "fp32/model.onnx"):
        (folder / name).write_bytes(b"x")
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"gguf")
    (tmp_path / "tokenizer_config.json").write_text("{}")
    (tmp_path / "other.gguf.partial").write_bytes(b"another model, half downloaded")
    settings = Settings(rerank=f"onnx:{folder}", answerer="local", local_model=str(gguf), ltr="agent")
    files = dict(model_files(settings))
    # One rule wherever it runs: the model and the visible files beside it (its external data,
    # under whatever name the export chose), not sub-folders (the fp32 export), not hidden files.
    assert {k for k in files if k.startswith("rerank:")} == {
        "rerank:model.onnx", "rerank:weights.bin", "rerank:tokenizer.json", "rerank:electa.json", "rerank:report.md"}
    # The GGUF and what transformers may read beside it; not another model's download.
    assert files["answerer"] == gguf.resolve() and "answerer:tokenizer_config.json" in files
    assert not any("partial" in k for k in files)
    before = ModelFilesMark(settings).mark()
    # Exported again with other weights: model.onnx the same bytes, its external data not.
    onnx_bytes = (folder / "model.onnx").read_bytes()
    (folder / "weights.bin").unlink()
    _onnx_with_external_data(folder, 2.0)
    assert (folder / "model.onnx").read_bytes() == onnx_bytes
    reexported = ModelFilesMark(settings).mark()
    assert reexported != before
    (tmp_path / "tokenizer_config.json").write_text('{"chat_template": "another"}')
    assert ModelFilesMark(settings).mark() != reexported
    # A ranker file that is not there marks as absent, a key of its own (it fails where it loads).
    gone = Settings(ltr=str(tmp_path / "missing.json"))
    assert ModelFilesMark(gone).mark() == ModelFilesMark(gone).mark() != ModelFilesMark(Settings(ltr=str(gguf))).mark()


def test_a_same_size_copy_in_place_that_keeps_the_modification_time_is_noticed(tmp_path: Path) -> None:
    ranker = tmp_path / "ranker.json"
    ranker.write_text("aaaa")
    loaded = ModelFilesMark(Settings(ltr=str(ranker)))
    stat = ranker.stat()
    ranker.write_text("bbbb")  # (`cp -p` over it: same size, the old modification time kept)
    os.utime(ranker, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert loaded.mark() != ModelFilesMark(Settings(ltr=str(ranker))).mark()


def test_a_worker_whose_judge_could_not_load_keys_its_results_apart(tmp_path: Path) -> None:
    # Its searches are not reranked: a shared cache must not hand them to workers that rerank.
    folder = tmp_path / "broken"
    folder.mkdir()
    for name in ("model.onnx", "tokenizer.json"):
        (folder / name).write_bytes(b"not a model")
    with Engine.open(tmp_path / "d", Settings(rerank=f"onnx:{folder}"), HashEmbedder()) as engine:
        broken = engine.cache_recipe()
        assert "judge:rerank" in broken
        engine.funnel.judges["rerank"] = object()  # type: ignore[assignment]  # (as if it had loaded)
        assert "judge:rerank" not in engine.cache_recipe()


def test_another_process_keys_the_same_settings_and_files_alike(tmp_path: Path) -> None:
    # Workers are processes (and hosts): nothing of one process may enter the key, or a shared
    # cache would never be shared.
    import subprocess
    import sys

    from tests.unit.test_ltr import upside_down

    ranker = tmp_path / "ranker.json"
    ranker.write_text(json.dumps(upside_down().to_dict()))
    settings = Settings(ltr=str(ranker), floor=0.45)
    here = _recipe(tmp_path / "d", settings)
    code = ("import sys; from electa.config import Settings; from electa.embedders.hashing import HashEmbedder;"
            " from electa.engine import Engine;"
            " e = Engine.open(sys.argv[1], Settings(ltr=sys.argv[2], floor=0.45), HashEmbedder());"
            " print(e.cache_recipe()); e.close()")
    there = subprocess.run([sys.executable, "-c", code, str(tmp_path / "d"), str(ranker)], capture_output=True,
                           text=True, check=True, env={**os.environ, "PYTHONHASHSEED": "7"}).stdout.strip()
    assert there == here


def test_the_same_bytes_kept_elsewhere_key_alike(tmp_path: Path) -> None:
    # Found by the integration test: a worker reading its copy of the ranker from another path
    # (another host's layout) keyed apart, though it ranks alike.
    from tests.unit.test_ltr import upside_down

    one, other = tmp_path / "a" / "ranker.json", tmp_path / "b" / "copy.json"
    for path in (one, other):
        path.parent.mkdir()
        path.write_text(json.dumps(upside_down().to_dict()))
    assert _recipe(tmp_path / "d", Settings(ltr=str(one))) == _recipe(tmp_path / "d", Settings(ltr=str(other)))
    assert _recipe(tmp_path / "d", Settings(ltr=str(one))) != _recipe(tmp_path / "d", Settings(ltr="agent"))


def test_an_onnx_rerankers_path_stays_in_the_key() -> None:
    # Found by review: it is the reranker's identity that learned rankers and cuts are checked
    # against (electa.judges.agent_rerank.rerank_identity), so two folders of the same bytes rank
    # alike only until a ranker trained behind one is served behind the other.
    from electa.model_files import by_content

    assert by_content(Settings(rerank="onnx:/srv/a")).rerank != by_content(Settings(rerank="onnx:/srv/b")).rerank


def test_an_onnx_folder_the_server_may_not_read_leaves_the_engine_open_and_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Found by review: a folder without the search permission (chmod 600 on a directory) raised
    # PermissionError out of the cache key's file list, and the engine did not open. (The tests
    # run as root, whom permissions do not stop: the refusal is the operating system's, faked.)
    folder = tmp_path / "reranker"
    folder.mkdir()
    (folder / "model.onnx").write_bytes(b"onnx")
    real_is_file = Path.is_file

    def refused(self: Path) -> bool:
        if self.parent == folder:
            raise PermissionError(13, "Permission denied", str(self))
        return real_is_file(self)

    monkeypatch.setattr(Path, "is_file", refused)
    settings = Settings(rerank=f"onnx:{folder}")
    assert [role for role, _ in model_files(settings)] == ["rerank:electa.json", "rerank:tokenizer.json"]
    with Engine.open(tmp_path / "d", settings, HashEmbedder()) as engine:
        why = engine.funnel.judges["rerank"].why  # (what every search's stage reports)
        assert why.startswith(f"cannot read the reranker folder {folder}: Permission denied")

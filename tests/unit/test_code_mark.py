from pathlib import Path

from electa.code_mark import code_digest, digest_of


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

    assert code_digest() == digest_of(Path(electa.__file__).parent)

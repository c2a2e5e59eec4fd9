"""The PostgreSQL pass's skip list (tests/backend_split.py): which tests count as store-free, and
when a list may be trusted. Each case runs pytest for real, in a process of its own, on a small
project written here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The list is the embedded pass's to write; nothing here depends on the store the pass runs on.
pytestmark = pytest.mark.embedded

CASES = '''
import pytest

import electa.stores.registry as registry


@pytest.fixture(scope="module")
def store():
    with pytest.raises(TypeError):  # a store opened (the call is what counts)
        registry.open_store()
    return "store"


def test_plain():
    assert 1 + 1 == 2


@pytest.mark.xfail(reason="expected to fail", strict=False)
def test_xpass():
    assert True


def test_opens_a_store():
    with pytest.raises(TypeError):  # counted when called, whatever the call then does
        registry.open_store()


@pytest.fixture(scope="module")
def inner():
    with pytest.raises(TypeError):
        registry.open_store()
    return "inner"


@pytest.fixture(scope="module")
def outer(request):
    return request.getfixturevalue("inner")  # (inner's first setup: a store opened under outer's)


def test_uses_the_fixture(store):
    assert store


def test_uses_the_fixture_set_up_before(store):
    assert store


def test_uses_a_fixture_that_asks_for_it(outer):
    assert outer


def test_uses_that_fixture_set_up_before(outer):
    assert outer


def test_asks_for_the_fixture_by_name(request):
    assert request.getfixturevalue("store")


def test_runs_a_command():
    os_system = __import__("os").system
    assert os_system("true") == 0

'''


def run(project: Path, postgres: bool, listing: Path, workers: int = 0) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ELECTA_TEST_STORE_FREE": str(listing), "PYTHONPATH": str(ROOT),
           "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}  # (the suite's plugins cost seconds a run, and none is needed)
    env["ELECTA_TEST_BACKEND"] = "postgres" if postgres else "sqlite"
    spread = ["-p", "xdist.plugin", "-n", str(workers)] if workers else []
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", *spread, "tests"],
                          cwd=project, env=env, capture_output=True, text=True, timeout=120)


def project(tmp_path: Path) -> Path:
    root = tmp_path / "p"
    (root / "tests").mkdir(parents=True)
    (root / "src").mkdir()
    (root / "pyproject.toml").write_text("[tool.pytest.ini_options]\n", encoding="utf-8")
    (root / "tests" / "conftest.py").write_text('pytest_plugins = ["tests.backend_split"]\n', encoding="utf-8")
    (root / "tests" / "test_cases.py").write_text(CASES, encoding="utf-8")
    return root


def test_only_plain_passes_are_listed_and_only_a_list_of_this_code_is_read(tmp_path: Path) -> None:
    root, listing = project(tmp_path), tmp_path / "store-free.txt"
    embedded = run(root, False, listing)
    assert embedded.returncode == 0, embedded.stdout + embedded.stderr
    lines = listing.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("# stamp ")
    # Not listed: the xfail that passed, a test that opened a store, tests of a module-scoped
    # store fixture (its first, and a later one it was set up before), tests of a fixture whose
    # setup asked for another that opened one (the same two), one that asked for the store
    # fixture by name, one that ran a command.
    assert lines[1:] == ["tests/test_cases.py::test_plain"]
    postgres = run(root, True, listing)
    assert postgres.returncode == 0 and "1 skipped" in postgres.stdout, postgres.stdout
    (root / "src" / "changed.py").write_text("X = 1\n", encoding="utf-8")  # the code under test changed
    postgres = run(root, True, listing)
    assert postgres.returncode == 0 and "skipped" not in postgres.stdout, postgres.stdout
    (root / "tests" / "test_cases.py").write_text(CASES + "\ndef test_fails():\n    assert False\n", encoding="utf-8")
    assert run(root, False, listing).returncode == 1
    assert not listing.exists()  # a failing (or killed) embedded pass leaves no list behind


def test_tests_spread_over_workers_are_listed_whichever_worker_ran_them(tmp_path: Path) -> None:
    """``make test`` runs each pass on pytest-xdist workers: the list is every worker's part,
    written once by the controller (each worker writing its own lost the others')."""
    root, listing = project(tmp_path), tmp_path / "store-free.txt"
    plain = [f"test_plain_{n}" for n in range(12)]
    (root / "tests" / "test_cases.py").write_text(CASES + "".join(f"\n\ndef {name}():\n    assert True\n" for name in plain),
                                                   encoding="utf-8")
    embedded = run(root, False, listing, workers=2)
    assert embedded.returncode == 0, embedded.stdout + embedded.stderr
    assert "bringing up nodes" in embedded.stdout, embedded.stdout  # (xdist ran the tests)
    lines = listing.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("# stamp ")
    assert sorted(lines[1:]) == sorted(f"tests/test_cases.py::{name}" for name in ["test_plain", *plain])
    postgres = run(root, True, listing, workers=2)
    assert postgres.returncode == 0 and "13 skipped" in postgres.stdout, postgres.stdout

"""A suite spread over pytest-xdist workers (``make test``) leaves no PostgreSQL server files
behind: each worker starts its own server (tests/conftest.py), and a worker is killed 10 s after
its session ends, sooner than its exit handler may stop the server and delete its folder (two
workers' 250-420 MB folders were found left in the temporary folder). So the server goes when
the session ends, before the worker's exit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The suite's own plumbing: the same on either pass, so it runs on the embedded one.
pytestmark = pytest.mark.embedded

TESTS = ["tests/contract/test_pg_store.py::test_values_postgresql_cannot_hold_find_nothing_or_are_refused_by_name",
         "tests/contract/test_pg_store.py::test_a_title_word_past_the_index_row_limit_never_fails_its_source"]

# Run in each worker: the folders of the servers this process started, and which of them are
# still there once the session is over (pytest_unconfigure: after the session, before the exit).
WATCHER = '''
import json, os
from pathlib import Path

import electa.testing.pg_server as pg_server

SEEN = set()


def pytest_runtest_teardown(item):
    if pg_server._shared is not None:
        SEEN.add(str(pg_server._shared._dir))


def pytest_unconfigure(config):
    out = Path(os.environ["WATCHED"]) / f"{os.getpid()}.json"
    out.write_text(json.dumps({d: Path(d).exists() for d in SEEN}))
'''


def test_each_workers_server_is_stopped_and_deleted_when_its_session_ends(tmp_path: Path) -> None:
    (tmp_path / "plugin").mkdir()
    (tmp_path / "plugin" / "server_watch.py").write_text(WATCHER, encoding="utf-8")
    watched = tmp_path / "watched"
    watched.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp_path), "WATCHED": str(watched),
           "PYTHONPATH": os.pathsep.join([str(tmp_path / "plugin"), os.environ.get("PYTHONPATH", "")])}
    env.pop("ELECTA_TEST_STORE_FREE", None)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "server_watch",
                          "-n", "2", "--dist", "load", *TESTS],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "2 passed" in run.stdout, run.stdout + run.stderr
    servers = {d: there for f in watched.glob("*.json") for d, there in json.loads(f.read_text()).items()}
    assert len(servers) == 2, servers  # (each worker started one)
    assert not any(servers.values()), servers
    assert sorted(p.name for p in tmp_path.glob("electa-pg-*")) == []

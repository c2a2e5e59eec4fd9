"""Run on the PostgreSQL pass only the tests whose outcome can depend on the store.

``make test`` runs the suite twice, on the embedded store then on PostgreSQL. A test that
never opens a store (nor starts a process, which might) runs the same code on both passes, so
the second run of it only costs time. The embedded pass, given ``ELECTA_TEST_STORE_FREE=FILE``,
writes to FILE the node ids of the tests that passed there without opening a store: directly,
through any fixture they use (whatever the fixture's scope), or in a process they started. The
PostgreSQL pass, given the same variable, skips exactly those. Without the variable (a plain
``pytest``) both passes run everything.

Watched: ``electa.stores.registry.open_store`` (``Engine.open`` and the CLI open every store
through it, and it is the switch the PostgreSQL pass turns), ``subprocess.Popen``,
``os.system``, ``os.posix_spawn(p)`` and ``multiprocessing`` starts, and each fixture asked for
by name while a test runs (``request.getfixturevalue``), so that a store a fixture of a wider
scope opened for an earlier test still counts. A test that builds ``SqliteStore`` itself runs
SQLite on both passes, so it is rightly counted as store-free. Not seen: a store kept in a
module's global by one test and used by another (none of ours does).

The list is stamped with a digest of the sources under test (``src``, ``tests``, the project
file), is removed when the embedded pass starts (a run killed half way leaves none), and is
read only under the same stamp: a list left from other code skips nothing.
"""

from __future__ import annotations

import hashlib
import multiprocessing.process
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ENV = "ELECTA_TEST_STORE_FREE"
POSTGRES = os.environ.get("ELECTA_TEST_BACKEND", "sqlite") == "postgres"


class Watch:
    """Whether a store was opened or a process started since :meth:`reset`, and which fixtures
    did so while being set up."""

    def __init__(self) -> None:
        self.installed = False
        self.touched = False
        self.setting_up: list[str] = []  # the fixtures being set up, outermost first
        self.fixtures: set[str] = set()

    def hit(self) -> None:
        self.touched = True
        self.fixtures.update(self.setting_up)  # (each fixture that asked for the one that opened a store)

    def install(self) -> None:
        import electa.stores.registry as registry

        opener = registry.open_store
        popen_init = subprocess.Popen.__init__
        start = multiprocessing.process.BaseProcess.start
        asked = pytest.FixtureRequest.getfixturevalue

        def open_store(*args: Any, **kwargs: Any) -> Any:
            self.hit()
            return opener(*args, **kwargs)

        def init(popen: subprocess.Popen[Any], *args: Any, **kwargs: Any) -> None:
            self.hit()
            popen_init(popen, *args, **kwargs)

        def started(process: multiprocessing.process.BaseProcess) -> None:
            self.hit()
            start(process)

        def getfixturevalue(request: pytest.FixtureRequest, argname: str) -> Any:
            if argname in self.fixtures:
                self.hit()
            return asked(request, argname)

        def spawning(run: Callable[..., Any]) -> Callable[..., Any]:
            def spawn(*args: Any, **kwargs: Any) -> Any:
                self.hit()
                return run(*args, **kwargs)
            return spawn

        registry.open_store = open_store
        subprocess.Popen.__init__ = init  # type: ignore[method-assign]
        multiprocessing.process.BaseProcess.start = started  # type: ignore[method-assign]
        pytest.FixtureRequest.getfixturevalue = getfixturevalue  # type: ignore[method-assign]
        for name in ("system", "posix_spawn", "posix_spawnp"):
            if hasattr(os, name):
                setattr(os, name, spawning(getattr(os, name)))
        self.installed = True


WATCH = Watch()
STORE_FREE: list[str] = []
OUTCOMES = pytest.StashKey[list[str]]()
WORKER_KEY = "electa_store_free"


def stamp(root: Path) -> str:
    """A digest of the code under test: every file under ``src`` and ``tests`` and the project
    file, by path and content."""
    digest = hashlib.sha256()
    files = [root / "pyproject.toml", *sorted(p for top in ("src", "tests") for p in (root / top).rglob("*") if p.is_file()
                                              and "__pycache__" not in p.parts)]
    for path in files:
        if path.is_file():
            digest.update(f"{path.relative_to(root)}\0".encode())
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return f"# stamp {digest.hexdigest()}"


def worker(config: pytest.Config) -> bool:
    """Whether this process is a pytest-xdist worker (``make test`` spreads each pass over some)."""
    return hasattr(config, "workerinput")


def controller(config: pytest.Config) -> bool:
    """Whether this process hands the tests to pytest-xdist workers and runs none itself."""
    return not worker(config) and bool(getattr(config.option, "numprocesses", None))


def pytest_configure(config: pytest.Config) -> None:
    target = os.environ.get(ENV)
    if target and not POSTGRES:
        if not worker(config):
            Path(target).unlink(missing_ok=True)
        WATCH.install()


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest) -> Iterator[None]:
    WATCH.setting_up.append(fixturedef.argname)
    try:
        yield
    finally:
        WATCH.setting_up.pop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    WATCH.touched = False
    outcomes: list[str] = []
    item.stash[OUTCOMES] = outcomes
    yield
    uses = WATCH.touched or bool(WATCH.fixtures.intersection(getattr(item, "fixturenames", ())))
    # Only a test that passed counts: one skipped here (perhaps because this is not PostgreSQL)
    # must still run there.
    if not uses and outcomes == ["passed", "passed", "passed"]:
        STORE_FREE.append(item.nodeid)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if OUTCOMES in item.stash:
        # An unexpected pass (xpass) is no pass: the test is marked as one that fails.
        item.stash[OUTCOMES].append("xfail" if hasattr(report, "wasxfail") else report.outcome)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """Under pytest-xdist, on the controller: a worker's store-free tests join the list."""
    STORE_FREE.extend(getattr(node, "workeroutput", {}).get(WORKER_KEY, []))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The embedded pass's list, written only when every test it ran passed (a failing run
    stops ``make test`` before the PostgreSQL pass anyway; an empty list skips nothing).
    A pytest-xdist worker hands its part to the controller, which writes the whole list once
    every worker is done. A worker lost during a test fails the run (no list); one lost between
    tests loses its part, which only skips fewer tests."""
    target = os.environ.get(ENV)
    if target and worker(session.config):
        session.config.workeroutput[WORKER_KEY] = list(STORE_FREE)  # type: ignore[attr-defined]
        return
    if target and WATCH.installed and exitstatus == 0:
        lines = [stamp(session.config.rootpath), *STORE_FREE]
        Path(target).write_text("".join(f"{n}\n" for n in lines), encoding="utf-8")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On the PostgreSQL pass: skip what the embedded pass found store-free."""
    target = os.environ.get(ENV)
    if not target or not POSTGRES or not Path(target).is_file():
        return
    lines = Path(target).read_text(encoding="utf-8").splitlines()
    if not lines or lines[0] != stamp(config.rootpath):
        return  # a list made from other code says nothing about this code
    listed = set(lines[1:])
    skip = pytest.mark.skip(reason=f"opened no store on the embedded pass: the same code on both ({ENV})")
    for item in items:
        if item.nodeid in listed:
            item.add_marker(skip)

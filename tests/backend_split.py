"""Run on the PostgreSQL pass only the tests whose outcome can depend on the store.

``make test`` runs the suite twice, on the embedded store then on PostgreSQL. A test that
never opens a store (nor starts a process, which might) runs the same code on both passes, so
the second run of it only costs time. The embedded pass, given ``ELECTA_TEST_STORE_FREE=FILE``,
writes to FILE the node ids of the tests that passed there without opening a store: directly,
through any fixture they use (whatever the fixture's scope), or in a process they started. The
PostgreSQL pass, given the same variable, skips exactly those. Without the variable (a plain
``pytest``) both passes run everything.

Watched: ``electa.stores.registry.open_store`` (``Engine.open`` and the CLI open every store
through it, and it is the switch the PostgreSQL pass turns), ``subprocess.Popen`` and
``multiprocessing`` starts. A test that builds ``SqliteStore`` itself runs SQLite on both
passes, so it is rightly counted as store-free.
"""

from __future__ import annotations

import multiprocessing.process
import os
import subprocess
from collections.abc import Iterator
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
        self.fixture: str | None = None
        self.fixtures: set[str] = set()

    def hit(self) -> None:
        self.touched = True
        if self.fixture is not None:
            self.fixtures.add(self.fixture)

    def install(self) -> None:
        import electa.stores.registry as registry

        opener = registry.open_store
        popen_init = subprocess.Popen.__init__
        start = multiprocessing.process.BaseProcess.start

        def open_store(*args: Any, **kwargs: Any) -> Any:
            self.hit()
            return opener(*args, **kwargs)

        def init(popen: subprocess.Popen[Any], *args: Any, **kwargs: Any) -> None:
            self.hit()
            popen_init(popen, *args, **kwargs)

        def started(process: multiprocessing.process.BaseProcess) -> None:
            self.hit()
            start(process)

        registry.open_store = open_store
        subprocess.Popen.__init__ = init  # type: ignore[method-assign]
        multiprocessing.process.BaseProcess.start = started  # type: ignore[method-assign]
        self.installed = True


WATCH = Watch()
STORE_FREE: list[str] = []
OUTCOMES = pytest.StashKey[list[str]]()


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get(ENV) and not POSTGRES:
        WATCH.install()


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest) -> Iterator[None]:
    outer, WATCH.fixture = WATCH.fixture, fixturedef.argname
    try:
        yield
    finally:
        WATCH.fixture = outer


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
        item.stash[OUTCOMES].append("passed" if report.passed and not hasattr(report, "wasxfail") else report.outcome)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The embedded pass's list, written only when every test it ran passed (a failing run
    stops ``make test`` before the PostgreSQL pass anyway; an empty list skips nothing)."""
    target = os.environ.get(ENV)
    if target and WATCH.installed:
        Path(target).write_text("".join(f"{n}\n" for n in STORE_FREE) if exitstatus == 0 else "", encoding="utf-8")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On the PostgreSQL pass: skip what the embedded pass found store-free."""
    target = os.environ.get(ENV)
    if not target or not POSTGRES or not Path(target).is_file():
        return
    listed = set(Path(target).read_text(encoding="utf-8").split())
    skip = pytest.mark.skip(reason=f"opened no store on the embedded pass: the same code on both ({ENV})")
    for item in items:
        if item.nodeid in listed:
            item.add_marker(skip)

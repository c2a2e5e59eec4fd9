from __future__ import annotations

from pathlib import Path

import pytest

from electa.config import Settings
from electa.embedders.hashing import HashEmbedder
from electa.engine import Engine
from electa.ingest.loaders import Loaded
from electa.types import Document, Section


def page(ext_id: str, title: str, text: str, url: str = "") -> Document:
    """A one-section document."""
    return Document(ext_id, title, text, url, sections=(Section((), text),))


def refund_and_pricing() -> Loaded:
    """The two pages the answer tests ask about: a refund policy and a price list."""
    return Loaded([page("r", "Refund policy", "Annual plans are refunded within 30 days of purchase.", "https://a/refunds"),
                   page("p", "Pricing", "The Free plan costs $0/mo. Growth costs $29/mo per seat.", "https://a/pricing")])


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

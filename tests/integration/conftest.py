from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from electa.config import Settings
from electa.engine import Engine

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"


def electa_cmd() -> list[str]:
    exe = shutil.which("electa", path=str(Path(sys.executable).parent))
    return [exe] if exe else [sys.executable, "-m", "electa.cli.main"]


@pytest.fixture(scope="session")
def minilm_engine(tmp_path_factory, sample_kb_session):  # type: ignore[no-untyped-def]
    """The real model on the sample knowledge base, built once per test session."""
    from electa.types import Access

    data = tmp_path_factory.mktemp("kb-minilm")
    eng = Engine.open(data, Settings(), "minilm")
    eng.ingest([sample_kb_session / "help-center", sample_kb_session / "qa.csv"], Access("tallyo"))
    eng.ingest([sample_kb_session / "internal"], Access("tallyo", public=False, principals=("team:support",)))
    yield eng
    eng.close()


@pytest.fixture(scope="session")
def sample_kb_session() -> Path:
    from electa.cli.demo import sample_kb

    return sample_kb()


@pytest.fixture
def env() -> dict[str, str]:
    out = dict(os.environ)
    out["PYTHONUNBUFFERED"] = "1"
    return out


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    assert chromium and driver, "the browser tests need Debian's chromium and chromium-driver (make test installs them)"
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900"):
        options.add_argument(arg)
    # Chromium leaves its singleton folders in TMPDIR when it quits: keep them in pytest's own.
    env = {**os.environ, "TMPDIR": str(tmp_path_factory.mktemp("chromium"))}
    session = webdriver.Chrome(options=options, service=Service(executable_path=driver, env=env))
    session.set_page_load_timeout(30)
    try:
        yield session
    finally:
        session.quit()

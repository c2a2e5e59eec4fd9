from pathlib import Path

import pytest

from electa.stores.sqlite import SqliteStore
from electa.testing.store_contract import StoreContract


class TestSqliteStore(StoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path):  # type: ignore[no-untyped-def]
        s = SqliteStore(tmp_path)
        yield s
        s.close()

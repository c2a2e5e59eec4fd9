from pathlib import Path

import pytest

from electa.stores.sqlite import SqliteStore
from electa.testing.store_contract import OperationalStoreContract, StoreContract, untested_methods


def test_the_contract_calls_every_protocol_method() -> None:
    assert untested_methods() == []


class TestSqliteStore(StoreContract, OperationalStoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path):  # type: ignore[no-untyped-def]
        s = SqliteStore(tmp_path)
        yield s
        s.close()

from pathlib import Path

import pytest

from electa.stores.sqlite import SqliteStore
from electa.testing.store_contract import (
    GraphStoreContract,
    OperationalStoreContract,
    SparseTermStoreContract,
    StoreContract,
    untested_methods,
)


def test_the_contract_calls_every_protocol_method() -> None:
    assert untested_methods() == []


class TestSqliteStore(StoreContract, OperationalStoreContract, SparseTermStoreContract, GraphStoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path):  # type: ignore[no-untyped-def]
        s = SqliteStore(tmp_path)
        yield s
        s.close()


def test_units_read_inside_a_rolled_back_write_are_never_served(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Found by review: the unit cache kept rows read inside a write transaction that rolled back."""
    from electa.testing.store_contract import prepared, record
    from electa.types import Access, Caller

    store = SqliteStore(tmp_path)
    store.put_source(record("a.html", "h1", Access("acme")), [prepared("a", "shell", url="https://x/a")])
    [unit_id] = store.allowed(Caller("acme")).ids.tolist()
    try:
        with store.transaction() as con:
            con.execute("INSERT INTO locations VALUES((SELECT document_id FROM chunks WHERE id=?), 1, 'https://phantom', 'p')",
                        (unit_id,))
            assert "https://phantom" in {store.units([unit_id])[unit_id].url, *store.units([unit_id])[unit_id].also_urls}
            raise RuntimeError("roll back")
    except RuntimeError:
        pass
    unit = store.units([unit_id])[unit_id]
    assert "https://phantom" not in (unit.url, *unit.also_urls)
    store.close()

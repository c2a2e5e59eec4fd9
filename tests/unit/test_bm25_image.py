"""The in-memory BM25 image must rank and score exactly as FTS5's bm25() does."""

import pytest

from electa.stores.bm25_memory import BM25Image
from electa.stores.sqlite import SqliteStore
from electa.testing.store_contract import record
from electa.types import Access, Caller, Chunk, ChunkKind

CORPUS = [
    ("Refund policy", "We refund annual plans within 30 days. Monthly plans are not refunded."),
    ("Export to CSV", "Error E1042 appears when a CSV export has more than 100,000 rows."),
    ("Slack integration", "Send invoice events to a Slack channel. Paid and overdue invoices."),
    ("Plans and pricing", "Starter costs $12 per seat. Growth costs $29 per seat, annual plans save 20%."),
    ("Error codes", "E1042 export too large. E2001 bank sync failed. E3107 webhook signature."),
    ("Webhooks", "Deliveries are signed with HMAC-SHA256; retries for 24 hours."),
]


@pytest.fixture
def store(tmp_path):  # type: ignore[no-untyped-def]
    import hashlib

    from electa.stores.protocol import PreparedDocument

    s = SqliteStore(tmp_path)
    docs = [PreparedDocument(str(i), t, "", hashlib.sha256(b.encode()).hexdigest(),
                             (Chunk(ChunkKind.PARENT, 0, t, b),), (None,)) for i, (t, b) in enumerate(CORPUS)]
    s.put_source(record("c", "h", Access("acme")), docs)
    s.put_source(record("o", "h", Access("other")), [PreparedDocument("x", "Refund", "", "zz", (
        Chunk(ChunkKind.PARENT, 0, "Refund refund", "refund refunds refunded"),), (None,))])
    yield s
    s.close()


@pytest.mark.parametrize("query", ["refund annual plans", "E1042 CSV export error", "slack invoices paid",
                                   "plans", "what does webhook signature E3107 mean"])
def test_image_equals_fts5(store: SqliteStore, query: str) -> None:
    caller = Caller("acme")
    weights = (2.0, 1.0, 0.0)
    expected = store.fts_search("chunk_fts", query, caller, 10, weights)
    image = BM25Image.build(store.con, "chunk_fts", weights, store.generation)
    got = image.search(query, store.allowed(caller).ids, 10)
    assert [u for u, _ in got] == [u for u, _ in expected]
    assert [s for _, s in got] == pytest.approx([s for _, s in expected], rel=1e-6)


def test_image_never_returns_other_tenants(store: SqliteStore) -> None:
    image = BM25Image.build(store.con, "chunk_fts", (2.0, 1.0, 0.0), store.generation)
    allowed = store.allowed(Caller("acme")).ids
    got = image.search("refund refunds", allowed, 50)
    assert got and all(u in set(allowed.tolist()) for u, _ in got)

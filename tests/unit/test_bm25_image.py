"""The in-memory BM25 image scores exactly as FTS5's bm25() does over what a caller may see,
and a caller's scores depend on nothing else (issue 8, defect 5)."""

import hashlib

import numpy as np
import pytest

from electa.stores.bm25_memory import BM25Image
from electa.stores.protocol import PreparedDocument
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
QUERIES = ["refund annual plans", "E1042 CSV export error", "slack invoices paid", "plans",
           "what does webhook signature E3107 mean"]
WEIGHTS = (2.0, 1.0, 0.0)


def docs(pairs: list[tuple[str, str]]) -> list[PreparedDocument]:
    return [PreparedDocument(str(i), t, "", hashlib.sha256(f"{t}{b}".encode()).hexdigest(),
                             (Chunk(ChunkKind.PARENT, 0, t, b),), (None,)) for i, (t, b) in enumerate(pairs)]


@pytest.fixture
def store(tmp_path):  # type: ignore[no-untyped-def]
    s = SqliteStore(tmp_path)
    s.put_source(record("c", "h", Access("acme")), docs(CORPUS))
    yield s
    s.close()


def image_search(store: SqliteStore, query: str, caller: Caller) -> list[tuple[int, float]]:
    image = BM25Image.build(store.con, "chunk_fts", WEIGHTS, store.generation)
    return image.search(query, store.allowed(caller).ids, 10)


@pytest.mark.parametrize("query", QUERIES)
def test_image_equals_fts5_when_the_caller_sees_everything(store: SqliteStore, query: str) -> None:
    caller = Caller("acme")
    expected = store.fts_search("chunk_fts", query, caller, 10, WEIGHTS)
    got = image_search(store, query, caller)
    assert [u for u, _ in got] == [u for u, _ in expected]
    assert [s for _, s in got] == pytest.approx([s for _, s in expected], rel=1e-6)


def test_other_tenants_and_teams_never_move_a_callers_scores(store: SqliteStore) -> None:
    caller = Caller("acme")
    before = {q: image_search(store, q, caller) for q in QUERIES}
    # Another organisation writes a corpus heavy in the same words, and acme adds a team-only page.
    store.put_source(record("o", "h2", Access("other")), docs(
        [("Refund refund", "refund refunds refunded annual plans E1042 export")] * 3 + CORPUS))
    store.put_source(record("t", "h3", Access("acme", public=False, principals=("team:billing",))),
                     docs([("Refund approvals", "Billing approves refunds on annual plans, E1042 exports")]))
    after = {q: image_search(store, q, caller) for q in QUERIES}
    assert after == before
    # FTS5's own bm25() would have moved (its statistics span every tenant): the defect this prevents.
    assert store.fts_search("chunk_fts", QUERIES[0], caller, 10, WEIGHTS)[0][1] != pytest.approx(before[QUERIES[0]][0][1])
    member = Caller("acme", principals=frozenset({"team:billing"}))
    assert len(image_search(store, "approves", member)) == 1 and not image_search(store, "approves", caller)


def test_image_never_returns_other_tenants(store: SqliteStore) -> None:
    store.put_source(record("o", "h", Access("other")), docs([("Refund", "refund refunds refunded")]))
    allowed = store.allowed(Caller("acme")).ids
    image = BM25Image.build(store.con, "chunk_fts", WEIGHTS, store.generation)
    got = image.search("refund refunds", allowed, 50)
    assert got and all(u in set(allowed.tolist()) for u, _ in got)


@pytest.mark.parametrize("batch", [1, 2, 3, 7])
def test_any_batch_size_builds_the_same_image(store: SqliteStore, monkeypatch, batch: int) -> None:  # type: ignore[no-untyped-def]
    """Found building a 100k-row image: a batch lying wholly inside one term's rows broke the build."""
    from electa.stores import bm25_memory

    whole = BM25Image.build(store.con, "chunk_fts", WEIGHTS, store.generation)
    monkeypatch.setattr(bm25_memory, "BATCH", batch)
    small = BM25Image.build(store.con, "chunk_fts", WEIGHTS, store.generation)
    assert small.terms == whole.terms and len(whole.terms) > 20
    for name in ("unit_ids", "lengths", "offsets", "rows", "freqs"):
        assert np.array_equal(getattr(small, name), getattr(whole, name)), name


def test_a_saved_image_finds_every_term_and_nothing_else(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Saved terms are looked up by binary search over their UTF-8 bytes (no per-worker
    dictionary): prefixes, accents and scripts beyond ASCII all land on their own postings."""
    from electa.stores import lexical_segments

    words = ["ab", "abc", "abd", "b", "café", "cafe", "zoë", "日本", "ÿ", "a" * 70, "é"]
    # Fed against byte order, so each term's number differs from its place among the sorted terms.
    rows = [(w, 1 + i % 3, 1.0 + i, 2) for i, w in enumerate(sorted(words, key=str.encode, reverse=True))]
    image = BM25Image.from_batches(np.array([1, 2, 3]), [rows], generation=4)
    lexical_segments.write(image, WEIGHTS, tmp_path / "img.partial")
    (tmp_path / "img.partial").rename(tmp_path / "img")
    saved = lexical_segments.load(tmp_path / "img", WEIGHTS, generation=5)
    assert saved is not None and not isinstance(saved.terms, dict) and len(saved.terms) == len(words)
    for word in words:
        got, want = saved.postings(word), image.postings(word)
        assert got is not None and want is not None
        assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist(), word
    for absent in ["", "a", "abb", "abe", "caf", "cafés", "zz", "日", "日本語", "ÿÿ"]:
        assert saved.postings(absent) is None, absent
    assert lexical_segments.load(tmp_path / "img", (1.0, 1.0, 0.0), generation=5) is None  # other weights
    (tmp_path / "img" / "offsets.npy").write_bytes(b"")  # damaged: rebuilt, never raised
    assert lexical_segments.load(tmp_path / "img", WEIGHTS, generation=5) is None

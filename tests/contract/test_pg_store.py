"""The store contract on the PostgreSQL backend, against a real server the tests start
(``electa.testing.pg_server``), connected as an ordinary role so row-level security is in force."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from electa.stores.postgres.connection import ALL_TENANTS
from electa.stores.postgres.store import PostgresStore
from electa.testing.pg_server import shared_server
from electa.testing.store_contract import GraphStoreContract, SparseTermStoreContract, StoreContract


@pytest.fixture
def pg_store(tmp_path: Path) -> Iterator[PostgresStore]:
    server = shared_server()
    dsn = server.database()
    store = PostgresStore(dsn, tmp_path / "cache", pool_size=4)
    yield store
    store.shutdown()
    server.drop(dsn)


class TestPostgresStore(StoreContract, SparseTermStoreContract, GraphStoreContract):
    @pytest.fixture
    def store(self, pg_store: PostgresStore) -> PostgresStore:
        return pg_store


def test_values_postgresql_cannot_hold_find_nothing_or_are_refused_by_name(pg_store: PostgresStore) -> None:
    """Found by the API fuzzer on the PostgreSQL pass: an agent name holding NUL was a 500 (SQLite
    stores NUL; PostgreSQL text cannot). A read naming one finds nothing, as on the embedded store
    (nothing stored can equal it); a log write keeps the question with U+FFFD for the NUL; content
    that cannot be stored is refused by name (a 422 at the API)."""
    from electa.errors import NotFoundError, StoreError
    from electa.testing.store_contract import prepared, record
    from electa.types import Access, Caller

    pg_store.put_source(record("a.md", "1", Access("acme")), [prepared("a", "alpha")])
    assert len(pg_store.allowed(Caller("acme", "a\x00b"))) == 0
    assert len(pg_store.allowed(Caller("acme", principals=frozenset({"team\x00"})))) == 1  # names no one; public stays
    assert pg_store.flagged("acme", "a\x00") == [] and pg_store.source("acme", "default", "a.md\x00") is None
    assert pg_store.api_key("k\x00") is None and pg_store.gaps("ac\x00me") == []
    with pytest.raises(NotFoundError):
        pg_store.api_keys("ac\x00me")
    pg_store.add_gap("acme", "default", "why\x00", 0.1, "no passage")
    assert [g["question"] for g in pg_store.gaps("acme")] == ["why\ufffd"]
    with pytest.raises(StoreError, match="NUL character"):
        pg_store.put_source(record("b.md", "2", Access("acme")), [prepared("b", "beta\x00gamma")])
    with pytest.raises(StoreError, match="not valid Unicode"):
        pg_store.allowed(Caller("acme", "\udbfb"))
    assert [s["uri"] for s in pg_store.list_sources("acme")] == ["a.md"]


def test_dense_search_walks_the_hnsw_index_on_every_call(tmp_path: Path) -> None:
    """Found by bench/pg_parity.py: with the model as a parameter, the statement psycopg prepares
    after five runs had a generic plan that could not use the model's partial HNSW index and
    scanned every vector (55 ms, not 4). Every search, the sixth and later too, must use it."""
    import numpy as np

    from electa.config import Settings
    from electa.stores.protocol import PreparedDocument, SourceRecord
    from electa.types import Access, Caller, Chunk, ChunkKind

    server = shared_server()
    dsn = server.database()
    store = PostgresStore(dsn, tmp_path / "cache", pool_size=1)  # one connection: its statements get prepared
    try:
        rng = np.random.default_rng(0)
        docs = []
        for i in range(300):
            vec = rng.standard_normal(8).astype(np.float32)
            docs.append(PreparedDocument(f"d{i}", f"t{i}", "", f"h{i}", (Chunk(ChunkKind.PARENT, 0, f"t{i}", f"x {i}"),),
                                         (vec / np.linalg.norm(vec),)))
        store.put_source(SourceRecord("acme", "default", "s", "md", "", "c", Access("acme")), docs, model_id="m")
        index = store.dense_index("m", 8, Settings(exact_below=0))
        allowed = store.allowed(Caller("acme"))

        def scans() -> int:
            with store.db.tx(ALL_TENANTS) as con:
                return int(con.execute("SELECT coalesce(sum(idx_scan), 0) FROM pg_stat_user_indexes"
                                       " WHERE indexrelname LIKE 'vectors_hnsw_%'").fetchone()[0])

        before = scans()
        for _ in range(8):
            assert len(index.search(docs[0].vectors[0], 5, allowed)) == 5  # type: ignore[arg-type]
        with store.db.tx(ALL_TENANTS) as con:
            con.execute("SELECT pg_stat_force_next_flush()")
        assert scans() - before == 8
    finally:
        store.shutdown()
        server.drop(dsn)


def test_a_bad_connection_string_never_shows_its_password(caplog: pytest.LogCaptureFixture) -> None:
    """Found by review: psycopg's own messages (and the pool's log lines) quoted the password."""
    from electa.errors import StoreError
    from electa.stores.postgres.connection import PgDatabase

    for dsn in ("postgresql://u:s3%zzcret@127.0.0.1:1/db", "postgresql://u:s3cretpw@127.0.0.1:1/db"):
        with pytest.raises(StoreError) as found:
            PgDatabase(dsn, timeout_s=1)
        assert "s3" not in str(found.value) and "s3" not in caplog.text


def test_a_title_word_past_the_index_row_limit_never_fails_its_source(pg_store: PostgresStore) -> None:
    """Found by review: a 3,000-character word in a title aborted the whole put_source (the B-tree
    of title terms takes rows of at most ~2.7 kB); it is left out of the terms, as FTS5's stays."""
    import random

    from electa.testing.store_contract import prepared, record
    from electa.types import Access, Caller

    title = "Logs " + "".join(random.Random(5).choices("abcdefghijklmnopqrstuvwxyz0123456789", k=3000))  # incompressible
    pg_store.put_source(record("a.md", "1", Access("acme")), [prepared("a", "server logs", title=title)])
    assert len(pg_store.title_matches("logs", Caller("acme"), 10)) == 1


def test_a_store_given_no_folder_removes_the_one_it_made() -> None:
    # Every worker opened without a directory left an empty electa-pg-cache-* folder behind.
    server = shared_server()
    dsn = server.database()
    store = PostgresStore(dsn, pool_size=1)
    made = store.directory
    assert made.is_dir()
    store.shutdown()
    server.drop(dsn)
    assert not made.exists()


def test_a_database_analysed_in_english_before_is_analysed_again_when_a_store_opens(tmp_path: Path) -> None:
    """Issue 14: units stored before (Porter terms for every language, no languages recorded)
    get their own language's terms when the next store opens the database; nothing else moves."""
    from electa.stores.bm25_memory import search_segments
    from electa.stores.postgres.analysis import tsvector_literal
    from electa.stores.protocol import TextIndex
    from electa.testing.store_contract import prepared, prepared_pair, record
    from electa.text.analysis import ANALYSIS
    from electa.types import Access, Caller, ChunkKind

    server = shared_server()
    dsn = server.database()
    store = PostgresStore(dsn, tmp_path / "a", pool_size=2)
    try:
        store.put_source(record("de.md", "1", Access("acme", principals=("team:x",))), [prepared(
            "d", "Die Rückerstattungen erfolgen innerhalb von vierzehn Tagen nach dem Kauf, wenn Sie uns schreiben.",
            title="Erstattung")])
        store.put_source(record("c.md", "2", Access("acme")), [prepared_pair(
            ChunkKind.CURATED, "पासवर्ड रीसेट", "लॉगिन पेज पर लिंक दबाएँ।", "https://help/pw")])
        caller = Caller("acme", principals=frozenset({"team:x"}))
        before = store.allowed(caller).ids.tolist()
        with store.db.tx(ALL_TENANTS, write=True) as con:  # what an older release left behind
            for chunk_id, title, text, acl in con.execute(
                    "SELECT c.id, c.title, c.text, array(SELECT x.lexeme FROM unnest(c.fts) x"
                    " WHERE x.weights = '{D}') FROM chunks c WHERE c.fts IS NOT NULL").fetchall():
                tsv, length = tsvector_literal(title, text, list(acl), "en")
                con.execute("UPDATE chunks SET fts = %s::tsvector, fts_len = %s WHERE id = %s", (tsv, length, chunk_id))
            con.execute("UPDATE documents SET lang = ''")
            con.execute("DELETE FROM languages")
            con.execute("DELETE FROM title_terms")  # (English stems: matched by no question term now)
            con.execute("UPDATE curated_triggers SET trigger = 'प सवरड र सट'")  # the old fold's damage
            con.execute("DELETE FROM meta WHERE key = 'analysis'")
        assert store.languages(caller) == ("en",)
        generation = store.generation
    finally:
        store.shutdown()
    store = PostgresStore(dsn, tmp_path / "b", pool_size=2)
    try:
        assert store.allowed(caller).ids.tolist() == before and store.generation > generation
        assert store.languages(caller) == ("de", "hi") and store.meta("analysis") == ANALYSIS
        image = store.lexical_image(TextIndex.UNITS, (2.0, 1.0))
        allowed = store.allowed(caller)
        german = before[:1]
        assert [u for u, _ in search_segments((image,), "Wann kommt meine Rückerstattung?", allowed.ids, 10,
                                              languages=store.languages(caller))] == german
        assert store.title_matches("Erstattungen", caller, 10) == german
        assert store.curated_answer("पासवर्ड रीसेट", "acme", allowed.ids) is not None
    finally:
        store.shutdown()
        server.drop(dsn)


def test_a_database_analysed_before_identifiers_split_is_analysed_again_and_an_older_writer_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 10: analysis a4 indexes the words inside ``readFileSync``. A database written by a3
    gets them when the next store opens it; a store opened before that (an older release's
    worker in a rolling upgrade) may no longer write, since its units would lack them for good."""
    import electa.stores.postgres.analysis as pg_analysis
    from electa.errors import StoreError
    from electa.stores.bm25_memory import search_segments
    from electa.stores.protocol import TextIndex
    from electa.testing.store_contract import prepared, record
    from electa.text.analysis import term, words
    from electa.types import Access, Caller

    server = shared_server()
    dsn = server.database()
    store = PostgresStore(dsn, tmp_path / "a", pool_size=2)
    caller = Caller("acme")
    try:
        store.put_source(record("s.md", "1", Access("acme")),
                         [prepared("s", "Returns the contents of the path: fs.readFileSync(path).", title="Reference")])
        with monkeypatch.context() as patch, store.db.tx(ALL_TENANTS, write=True) as con:  # what a3 wrote
            patch.setattr(pg_analysis, "index_terms", lambda text, lang: [term(w, lang) for w in words(text)])
            for chunk_id, title, text, acl in con.execute(
                    "SELECT c.id, c.title, c.text, array(SELECT x.lexeme FROM unnest(c.fts) x"
                    " WHERE x.weights = '{D}') FROM chunks c WHERE c.fts IS NOT NULL").fetchall():
                tsv, length = pg_analysis.tsvector_literal(title, text, list(acl), "en")
                con.execute("UPDATE chunks SET fts = %s::tsvector, fts_len = %s WHERE id = %s", (tsv, length, chunk_id))
            con.execute("UPDATE meta SET value = 'a3' WHERE key = 'analysis'")
    finally:
        store.shutdown()
    store = PostgresStore(dsn, tmp_path / "b", pool_size=2)
    try:
        image = store.lexical_image(TextIndex.UNITS, (2.0, 1.0))
        found = [u for u, _ in search_segments((image,), "How do I read a file?", store.allowed(caller).ids, 10)]
        assert found == store.allowed(caller).ids.tolist() and len(found) == 1
        with store.db.tx(ALL_TENANTS, write=True) as con:  # a newer release analysed it again since
            con.execute("UPDATE meta SET value = 'a9' WHERE key = 'analysis'")
        with pytest.raises(StoreError, match="analysed again by another release"):
            store.put_source(record("t.md", "2", Access("acme")), [prepared("t", "Another page.")])
        assert [s["uri"] for s in store.list_sources("acme")] == ["s.md"]
    finally:
        store.shutdown()
        server.drop(dsn)

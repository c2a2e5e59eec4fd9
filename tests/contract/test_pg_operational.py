"""The operational contract on the PostgreSQL backend's tables (electa.stores.postgres.ops), on a
real server (electa.testing.pg_server: an ordinary role, so row-level security is in force).

The host is the whole :class:`PostgresStore` (the index contract runs in test_pg_store.py).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from electa.stores.postgres.connection import ALL_TENANTS
from electa.testing.store_contract import OperationalStoreContract
from electa.types import Caller, ChunkKind

psycopg = pytest.importorskip("psycopg")
pytest.importorskip("pgserver")

from electa.stores.postgres.store import PostgresStore  # noqa: E402
from electa.testing.pg_server import shared_server  # noqa: E402


@pytest.fixture
def pg_store(tmp_path) -> Iterator[PostgresStore]:  # type: ignore[no-untyped-def]
    server = shared_server()
    dsn = server.database()
    store = PostgresStore(dsn, tmp_path / "cache", pool_size=4)
    try:
        yield store
    finally:
        store.shutdown()
        server.drop(dsn)


class TestPgOperationalTables(OperationalStoreContract):
    @pytest.fixture
    def store(self, pg_store: PostgresStore) -> PostgresStore:
        return pg_store


def test_the_tenant_wall_holds_without_the_stores_filters(pg_store: PostgresStore) -> None:
    """Raw SQL with no ``org`` filter, inside acme's transaction, sees only acme's rows; writing
    another organisation's row there is refused by PostgreSQL itself."""
    for org in ("acme", "zeta"):
        pg_store.add_organisation(org)
        pg_store.add_api_key(org, "search")
        pg_store.add_gap(org, "default", f"{org}?", 0.1, "no passage")
        pg_store.add_turn(org, "default", "c1", "q", "a", [], 0.5)
        pg_store.add_feedback(org, "default", "q", "u", 1)
        pg_store.set_agent_settings(org, "default", {"x": 1})
        pg_store.count_usage(org, "default", 3)
        pg_store.set_personalise(org, "ada", False)
    tables = ("gaps", "api_keys", "turns", "feedback", "agent_settings", "usage", "organisations", "user_settings")
    with pg_store.db.tx("acme") as con:
        assert {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables} == dict.fromkeys(tables, 1)
        assert con.execute("SELECT org FROM gaps").fetchone()[0] == "acme"
    with pg_store.db.tx(ALL_TENANTS) as con:
        assert {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables} == dict.fromkeys(tables, 2)
    inserts = [
        ("INSERT INTO gaps(org, agent, question, confidence, reason, created_at) VALUES('zeta','default','x',0,'r',0)"),
        ("INSERT INTO api_keys(org, key_hash, prefix, scope, created_at) VALUES('zeta','h','p','search',0)"),
        ("INSERT INTO turns(org, agent, conversation, question, answer, citations, confidence, created_at)"
         " VALUES('zeta','default','c','q','a','[]',0,0)"),
        "INSERT INTO organisations(name, created_at) VALUES('intruder', 0)",
        "INSERT INTO user_settings(org, person, personalise, updated_at) VALUES('zeta','bob',false,0)",
    ]
    for sql in inserts:
        with pytest.raises(psycopg.errors.InsufficientPrivilege), pg_store.db.tx("acme") as con:
            con.execute(sql)
    with pytest.raises(psycopg.errors.InsufficientPrivilege), pg_store.db.tx("acme") as con:
        con.execute("UPDATE gaps SET org='zeta'")  # nor can acme's rows be handed to another tenant
    assert [g["question"] for g in pg_store.gaps("zeta")] == ["zeta?"]
    assert pg_store.organisations() == ["acme", "zeta"]


def test_ties_and_text_order_match_the_embedded_store(pg_store: PostgresStore, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """What the contract leaves open reads the same on both backends: equal-length curated
    triggers (the first stored wins) and text ordered byte-wise whatever the database's collation."""
    from electa.stores.sqlite import SqliteStore
    from electa.testing.store_contract import prepared_pair, record
    from electa.types import Access

    lite = SqliteStore(tmp_path)
    try:
        for store in (lite, pg_store):
            store.put_source(record("c.json", "1", Access("acme")),
                             [prepared_pair(ChunkKind.CURATED, "ef gh\nab cd", "First.", "https://x/b"),
                              prepared_pair(ChunkKind.CURATED, "ab cd", "Second.", "https://x/a")])
            for query, url in (("b", "Zed"), ("a", "zed"), ("É", "x"), ("e", "x"), ("B", "x")):
                store.add_feedback("acme", "default", query, url, 1)
        ids = lite.allowed(Caller("acme")).ids
        pg_ids = pg_store.allowed(Caller("acme")).ids
        for question in ("ab cd ef gh", "ef gh ab cd", "ab cd"):
            assert pg_store.curated_answer(question, "acme", pg_ids) == lite.curated_answer(question, "acme", ids)
        assert pg_store.feedback("acme", "default") == lite.feedback("acme", "default")
    finally:
        lite.close()


def test_the_tenant_wall_holds_for_the_knowledge_graph(pg_store: PostgresStore) -> None:
    """The graph's five tables (issue 11) behind the same wall: raw SQL inside acme's transaction
    sees acme's nodes, units, mentions, edges and version only, and cannot write zeta's."""
    from electa.graph.extract import PatternExtractor
    from electa.testing.store_contract import prepared, record
    from electa.types import Access

    for org in ("acme", "zeta"):
        pg_store.put_source(record("a.md", "h", Access(org)), [prepared("a", "Version 3.8 fixes E2001.", title="Errors")])
    rows = pg_store.units_missing_graph("p", 10)
    pg_store.put_graph("p", [(uid, PatternExtractor().extract(title, text)) for uid, title, text in rows])
    tables = ("graph_nodes", "graph_units", "graph_mentions", "graph_edges", "graph_versions")
    with pg_store.db.tx("acme") as con:
        seen = {t: con.execute(f"SELECT count(*), count(*) FILTER (WHERE org <> 'acme') FROM {t}").fetchone() for t in tables}
    with pg_store.db.tx(ALL_TENANTS) as con:
        every = {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}
    assert all(seen[t][0] > 0 and seen[t][1] == 0 and every[t] == 2 * seen[t][0] for t in tables), (seen, every)
    with pytest.raises(psycopg.errors.InsufficientPrivilege), pg_store.db.tx("acme") as con:
        con.execute("INSERT INTO graph_nodes(org, key, kind) VALUES('zeta', 'plan:x', 'plan')")
    with pytest.raises(psycopg.errors.InsufficientPrivilege), pg_store.db.tx("acme") as con:
        con.execute("INSERT INTO graph_versions VALUES('zeta', 99)")

"""Updates lose nothing (issue 8, defects 1 and 4, and the model-id lineage of defect 9)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from electa import Access, Caller, ConfigError, Engine, Settings
from electa.embedders.hashing import HashEmbedder
from electa.ingest.page import Loaded
from electa.ingest.vector_fill import embed_missing
from electa.stores.faiss_index import FaissHnswIndex
from electa.stores.registry import open_store
from electa.testing.store_contract import prepared, record
from electa.types import Document, Section


def doc(ext_id: str, title: str, text: str) -> Document:
    return Document(ext_id, title, text, sections=(Section((), text),))


def vector_health(engine: Engine) -> tuple[int, int, int]:
    """(chunks that should carry a vector, vectors of the engine's model, chunks without one),
    read with plain SQL: every kind but curated answers carries a vector."""
    assert engine.embedder is not None
    store, model = engine.store, engine.embedder.model_id
    want = store.count_vector_chunks()
    have = store.count_vectors(model)
    missing = len(store.chunks_missing_vectors(model, 10**9))
    assert have == want - missing  # no vector outlives its unit (or sits on a curated answer)
    return want, have, missing


def blind_engine(data: Path) -> Engine:
    """An engine whose model could not be loaded (its package missing)."""
    from electa.stores.registry import open_store

    return Engine(open_store(Settings(), data), Settings(), None, "the model's package is not installed")


def jsonl(folder: Path, records: list[dict[str, str]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "corpus.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records), encoding="utf-8")
    return path


def test_updating_one_document_of_a_multi_document_source_keeps_the_others_vectors(engine: Engine,
                                                                                   tmp_path: Path) -> None:
    records = [{"_id": str(i), "title": f"Page {i}", "text": f"Alpha bravo topic{i} explained in a sentence."}
               for i in range(3)]
    path = jsonl(tmp_path / "kb", records)
    engine.ingest([path], Access("acme"))
    want, have, missing = vector_health(engine)
    assert want == have and missing == 0 and want >= 6
    for round_ in range(20):
        records[1]["text"] = f"Alpha bravo topic1 rewritten, round {round_}."
        jsonl(tmp_path / "kb", records)
        engine.ingest([path], Access("acme"))
        assert vector_health(engine) == (want, want, 0)
    caller = Caller("acme")
    for i in (0, 2):
        results, _ = engine.retrieve(f"topic{i} explained", caller, legs=["dense"], depths={"dense": 50})
        titles = {u.title for u in engine.store.units([h.unit_id for h in results[0].hits]).values()}
        assert f"Page {i}" in titles


def test_chunks_stored_without_a_model_are_embedded_later(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with blind_engine(data) as blind:  # no embedder: the dense leg is out
        assert blind.embedder is None
        blind.ingest_loaded("a", Loaded([doc("1", "Refunds", "Annual plans are refunded within 30 days.")]),
                            Access("acme"))
    with Engine.open(data, Settings(), HashEmbedder(dim=32)) as engine:
        want, have, missing = vector_health(engine)
        assert want > 0 and have == 0 and missing == want
        engine.reindex()
        assert vector_health(engine) == (want, want, 0)
        assert engine.stats()["chunks_without_vector"] == 0
        hits = engine.search("refunded within 30 days", Caller("acme"), legs=["dense"]).hits
        assert hits and hits[0].title == "Refunds"


def test_a_later_ingest_embeds_what_an_earlier_one_could_not(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with blind_engine(data) as blind:
        blind.ingest_loaded("a", Loaded([doc("1", "Refunds", "Annual plans are refunded within 30 days.")]),
                            Access("acme"))
    with Engine.open(data, Settings(), HashEmbedder(dim=32)) as engine:
        engine.ingest_loaded("b", Loaded([doc("2", "Pricing", "Growth costs 29 dollars.")]), Access("acme"))
        want, have, missing = vector_health(engine)
        assert want == have and missing == 0


def test_the_first_vectors_name_the_model_in_their_own_transaction(engine: Engine) -> None:
    store = engine.store
    assert store.meta("model_id") is None
    store.put_source(record("a.md", "h1", Access("acme")), [prepared("a", "alpha text")], model_id="m-1")
    assert store.meta("model_id") == "m-1"


def test_principals_make_a_source_private_and_contradictions_are_refused() -> None:
    assert Access("acme", principals=("team:hr",)).public is False
    assert Access("acme").public is True
    with pytest.raises(ConfigError, match="public"):
        Access("acme", public=True, principals=("team:hr",))
    with pytest.raises(ConfigError, match="principal"):
        Access("acme", public=False)
    with pytest.raises(ConfigError, match="empty principal"):
        Access("acme", principals=(" ",))


def test_a_source_with_principals_is_not_public(engine: Engine) -> None:
    engine.ingest_loaded("hr", Loaded([doc("1", "Salaries", "Salary bands for every level.")]),
                         Access("acme", principals=("team:hr",)))
    assert engine.search("salary bands", Caller("acme")).hits == ()
    assert engine.search("salary bands", Caller("acme", principals=frozenset({"team:hr"}))).hits


def test_callers_that_differ_never_share_a_cached_allowed_set_or_view(engine: Engine) -> None:
    """Found by review: the cache key joined parts with '|' and ',', so agent "*" read as "every
    agent" and the principal "member:u1,team:hr" as two principals."""
    engine.ingest_loaded("pub", Loaded([doc("p", "Holidays", "Public holiday calendar for staff.")]), Access("acme"))
    engine.ingest_loaded("hr", Loaded([doc("h", "Salaries", "Salary bands for every engineer: secret payroll.")]),
                         Access("acme", principals=("team:hr",)))
    member = Caller("acme", None, frozenset({"member:u1", "team:hr"}))
    assert "Salaries" in [h.title for h in engine.search("salary payroll", member).hits]
    forged = Caller("acme", None, frozenset({"member:u1,team:hr"}))
    for leg in ("fulltext", "dense"):
        assert "Salaries" not in [h.title for h in engine.search("salary payroll", forged, legs=[leg]).hits]
    assert engine.search("holiday", Caller("acme", "*")).hits == ()  # no agent is named "*"
    assert [h.title for h in engine.search("holiday", Caller("acme")).hits] == ["Holidays"]


@pytest.mark.parametrize("exact_below", [20_000, 0])  # the exact path, and the HNSW graph itself
def test_vectors_added_to_older_chunks_reach_the_live_dense_index(tmp_path: Path, exact_below: int) -> None:
    """Found by review: the dense index caught up only by appending ids above its newest, so
    vectors embedded later for older chunks stayed invisible until a restart."""
    from electa.ingest.pipeline import Ingestor
    from electa.stores.protocol import SourceRecord

    engine = Engine.open(tmp_path / "data", Settings(exact_below=exact_below), HashEmbedder(dim=64))

    engine.ingest_loaded("b", Loaded([doc("b", "Pricing", "Growth costs 29 dollars per seat.")]), Access("acme"))
    blind = Ingestor(engine.store, None, 1200, 300, 50, 10**7)  # stored while no model was available
    blind.store_loaded(SourceRecord("acme", "default", "a", "api", "", "h1", Access("acme")),
                       Loaded([doc("a", "Refunds", "Annual plans are refunded within thirty days.")]))
    writer = Ingestor(engine.store, engine.embedder, 1200, 300, 50, 10**7)  # a write whose follow-up runs late
    writer.store_loaded(SourceRecord("acme", "default", "c", "api", "", "h2", Access("acme")),
                        Loaded([doc("c", "Parking", "Parking rules for the office garage.")]))
    engine.search("parking", Caller("acme"))  # meanwhile a search syncs the index past the unembedded ids
    version = engine.store.version
    engine._written()  # the follow-up embeds the older chunks
    assert engine.store.version != version  # cached results made before the backfill are not served
    hits = engine.search("Annual plans are refunded within thirty days", Caller("acme"), legs=["dense"]).hits
    assert hits[0].title == "Refunds"
    index = engine.index
    if isinstance(index, FaissHnswIndex):  # the embedded graph keeps copies: sorted and aligned with the store's
        ids, vecs = engine.store.vectors_of(index.model_id, index._ids)
        graph, graph_ids, rows = index._view
        assert np.array_equal(ids, graph_ids) and np.allclose(vecs, index._stored_vectors(graph)[rows])
    engine.close()


def test_a_nul_inside_a_document_is_stored_as_a_replacement_on_every_backend(engine: Engine) -> None:
    """Found by review: a NUL past the binary check (or a JSON \\u0000) refused the whole source on
    PostgreSQL, which cannot store one, while SQLite kept it; both now keep U+FFFD in its place."""
    out = engine.ingest_loaded("j", Loaded([doc("1", "Refunds\x00", "Annual plans are refunded\x00 within 30 days.")]),
                               Access("acme"))
    assert out.status == "added"
    hits = engine.search("refunded within 30 days", Caller("acme")).hits
    assert hits and hits[0].title == "Refunds\ufffd" and "refunded\ufffd within" in hits[0].text


def test_units_stored_without_vectors_after_a_check_are_embedded_by_the_next_write(tmp_path: Path) -> None:
    """A write checks only units above the last check for missing vectors (a full scan cost 0.6-3.4 s
    per write at 1M units); one stored meanwhile without a vector, by another process whose
    model was missing, lies above it and is still embedded by the next write."""
    data = tmp_path / "data"
    with Engine.open(data, Settings(), HashEmbedder(dim=32)) as engine:
        engine.ingest_loaded("a", Loaded([doc("1", "Refunds", "Annual plans are refunded within 30 days.")]),
                             Access("acme"))
        assert engine._vectors_checked > 0
        with blind_engine(data) as blind:  # another process, no model
            blind.ingest_loaded("b", Loaded([doc("2", "Pricing", "Growth costs 29 dollars.")]), Access("acme"))
        assert vector_health(engine)[2] > 0
        engine.ingest_loaded("c", Loaded([doc("3", "Hours", "Support answers from 9 to 5.")]), Access("acme"))
        want, have, missing = vector_health(engine)
        assert want == have and missing == 0


def spy_on_reads(store: object) -> list[int]:
    """Where each of the store's reads of new allowed ids starts (0: a whole read), from now on."""
    read_above: list[int] = []
    real = store._allowed.read  # type: ignore[attr-defined]

    def spied(caller, generation, logged_from, removed_since, fresh_above, keep=True, top=0):  # type: ignore[no-untyped-def]
        def fresh(above: int) -> np.ndarray:
            read_above.append(above)
            return fresh_above(above)
        return real(caller, generation, logged_from, removed_since, fresh, keep, top)

    store._allowed.read = spied  # type: ignore[attr-defined]
    return read_above


def store_sql(store: object, sql: str) -> list[tuple[object, ...]]:
    """``sql`` run as the store's owner, on either backend (white-box checks of its tables)."""
    from electa.stores.sqlite import SqliteStore

    if isinstance(store, SqliteStore):
        with store.transaction() as con:
            return con.execute(sql).fetchall()
    from electa.stores.postgres.connection import ALL_TENANTS

    with store.db.tx(ALL_TENANTS, write=True) as con:  # type: ignore[attr-defined]
        cursor = con.execute(sql)
        return cursor.fetchall() if cursor.description else []


def test_allowed_sets_follow_writes_without_a_whole_read(tmp_path: Path) -> None:
    """Issue 12: at a million units, reading a caller's allowed set again after every write cost
    about a second of the write's time to searchable. The set now follows the writes (removed
    units from the store's log, new ones above the last id read); it must always equal a whole
    read by a fresh store, including for a caller whose set is older than the log."""
    engine = Engine.open(tmp_path / "d", Settings(), HashEmbedder(dim=16))
    store = engine.store
    callers = [Caller("acme"), Caller("acme", principals=frozenset({"team:ops"})), Caller("other")]

    def check() -> None:
        fresh = open_store(Settings(), tmp_path / "d")
        for caller in callers:
            assert np.array_equal(store.allowed(caller).ids, fresh.allowed(caller).ids), caller
        fresh.close()

    def ingest(name: str, org: str, text: str, principals: tuple[str, ...] = ()) -> None:
        engine.ingest_loaded(name, Loaded([doc(name, name.title(), text), doc(f"{name}2", "Second", f"{text} again")]),
                             Access(org, principals=principals))

    read_above = spy_on_reads(store)
    ingest("a", "acme", "refunds within thirty days")
    ingest("b", "acme", "parking rules", ("team:ops",))
    ingest("c", "other", "other tenant pages")
    check()
    read_above.clear()
    ingest("e", "acme", "one more page")
    store.allowed(callers[0])
    assert read_above and min(read_above) > 0  # followed, not read whole (PostgreSQL read whole)
    # A caller with nothing to read, and one whose last unit is old, start above the table's
    # highest id (found by review: they walked every other tenant's rows written since).
    quiet = Caller("nobody")
    store.allowed(quiet)
    store.allowed(callers[2])
    before_f = int(store_sql(store, "SELECT max(id) FROM chunks")[0][0])
    ingest("f", "acme", "another page")  # above every id "nobody" and "other" have
    read_above.clear()
    store.allowed(quiet)
    store.allowed(callers[2])
    assert read_above == [before_f, before_f]
    engine.delete_source("acme", "default", "a")
    check()
    ingest("b", "acme", "parking rules changed", ("team:ops",))  # an update: old units out, new in
    ingest("d", "acme", "invoices by e-mail")
    check()
    ingest("b", "acme", "parking rules changed")  # the same text, now public: new units, the team's gone
    check()
    # A set older than the removal log is read whole.
    store_sql(store, "UPDATE meta SET value='1000000' WHERE key='removed_units_from'")
    engine.delete_source("acme", "default", "d")
    check()
    engine.close()


def test_the_removal_log_is_trimmed_and_a_set_older_than_it_is_read_whole(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from electa.stores import allowed_sets
    monkeypatch.setattr(allowed_sets, "REMOVALS_KEPT", 8)
    engine = Engine.open(tmp_path / "d", Settings(), HashEmbedder(dim=16))
    store = engine.store
    caller = Caller("acme")
    engine.ingest_loaded("keep", Loaded([doc("k", "Kept", "kept page")]), Access("acme"))
    engine.ingest_loaded("gone", Loaded([doc("g", "Gone", "gone page")]), Access("acme"))
    early = store.allowed(caller)  # a base from an early generation, holding the units of "gone"
    engine.delete_source("acme", "default", "gone")  # logged: then the log forgets it
    reads = spy_on_reads(store)
    for n in range(70):  # past a multiple of 64: the log is trimmed to the last 8 generations
        engine.ingest_loaded(f"s{n % 3}", Loaded([doc(f"d{n}", f"Page {n}", f"text {n}")]), Access("acme"))
    assert int(store.meta("removed_units_from") or 0) > early.generation
    assert store_sql(store, "SELECT min(after_generation) FROM removed_units")[0][0] >= store.generation - 8 - 64
    reads.clear()
    now = store.allowed(caller)
    assert reads == [0]  # the base is older than the log: read whole (following it would keep "gone")
    fresh = open_store(Settings(), tmp_path / "d")
    assert np.array_equal(now.ids, fresh.allowed(caller).ids)
    # "keep" and "gone" are alike: half of the early set was gone's, and none of it is left
    assert len(set(early.ids.tolist()) - set(now.ids.tolist())) == len(early) // 2
    fresh.close()
    engine.close()


def test_allowed_sets_read_by_many_threads_while_writing(tmp_path: Path) -> None:
    """Found by review: bases were summed over a dict other threads were changing."""
    import sys
    import threading

    engine = Engine.open(tmp_path / "d", Settings(), HashEmbedder(dim=16))
    store = engine.store
    callers = [Caller("acme", principals=frozenset({f"team:{i}"})) for i in range(200)]
    errors: list[BaseException] = []
    stop = threading.Event()

    def read() -> None:
        try:
            while not stop.is_set():
                for caller in callers:
                    store.allowed(caller)
        except BaseException as exc:
            errors.append(exc)

    readers = [threading.Thread(target=read) for _ in range(4)]
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: races show
    for thread in readers:
        thread.start()
    try:
        for n in range(30):
            engine.ingest_loaded(f"s{n % 4}", Loaded([doc(f"d{n}", f"Page {n}", f"text {n}")]),
                                 Access("acme", principals=(f"team:{n % 40}",)))
    finally:
        stop.set()
        for thread in readers:
            thread.join()
        sys.setswitchinterval(switch)
    assert not errors
    fresh = open_store(Settings(), tmp_path / "d")
    for caller in callers:
        assert np.array_equal(store.allowed(caller).ids, fresh.allowed(caller).ids)
    fresh.close()
    engine.close()


@pytest.mark.embedded
def test_reindex_reaches_units_added_to_a_document_later(tmp_path: Path) -> None:
    """Found by review: a batch that left its last document to the next one resumed after the
    rows it kept, past that document's earlier rows when its units were not contiguous (a title
    unit added to an older document): those stayed without a vector for good."""
    engine = Engine.open(tmp_path / "d", Settings(), HashEmbedder(dim=16))
    engine.ingest_loaded("s", Loaded([doc(str(i), f"Page {i}", f"text number {i} about things") for i in range(6)]),
                         Access("acme"))
    con = engine.store.con
    last = con.execute("SELECT max(document_id) FROM chunks").fetchone()[0]
    with engine.store.transaction() as c:  # a unit of an earlier document with the highest id
        c.execute("INSERT INTO chunks(document_id, kind, ordinal, parent_id, title, text, content_hash, source_version,"
                  " chunker_version) SELECT document_id, 'title', 99, id, title, '', 'x', 1, chunker_version"
                  " FROM chunks WHERE document_id=? ORDER BY id LIMIT 1", (last - 1,))
        c.execute("DELETE FROM vectors")
    model = engine.embedder.model_id  # type: ignore[union-attr]
    embed_missing(engine.store, engine.embedder, engine.recipe, 5)  # type: ignore[arg-type]
    assert engine.store.chunks_missing_vectors(model, 100) == []
    engine.close()


def test_counting_the_units_that_should_carry_a_vector_reads_an_index_not_every_chunk(tmp_path: Path) -> None:
    # A process's first write counts them: a scan of every chunk's text took 5.2 s at 1M chunks
    # from a cold disk (bench/scale.py's store), the covering index 0.19 s.
    from electa.stores.sqlite import SqliteStore
    from electa.stores.sqlite_vectors import VECTOR_KINDS_SQL

    store = SqliteStore(tmp_path)
    try:
        plan = store.con.execute(f"EXPLAIN QUERY PLAN SELECT count(*) FROM chunks WHERE kind IN ({VECTOR_KINDS_SQL})")
        assert any("COVERING INDEX" in str(row[-1]) for row in plan.fetchall())
    finally:
        store.close()

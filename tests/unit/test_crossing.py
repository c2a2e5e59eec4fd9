"""Crossing (issue 14, fifth part): a unit written in another language than the question's is
scored by the chain's crossing model; hand-checked with hash models."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest

from electa import Access, Caller, Engine
from electa.config import Settings
from electa.embedders.chain import ChainEmbedder, LazyEmbedder
from electa.embedders.hashing import HashEmbedder
from electa.ingest.page import Loaded
from electa.legs import crossing
from electa.legs.crossing import CrossingScorer, WhenLoaded
from electa.stores.protocol import StoredUnit
from electa.types import ChunkKind, Document, Section

ENGLISH_Q = "How long until my refund is paid?"
GERMAN_Q = "Wann wird meine Rückerstattung ausgezahlt?"


class _Counting(HashEmbedder):
    def __init__(self, dim: int) -> None:
        super().__init__(dim)
        self.read: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.read.extend(texts)
        return super().embed(texts)


class _Mapped(_Counting):
    score_map = (2.0, -1.0)


def _unit(uid: int, lang: str, title: str = "T", text: str = "") -> StoredUnit:
    return StoredUnit(uid, uid, 1, ChunkKind.PARENT, title, text or f"text of unit {uid}", "", "", (), None, lang)


class _Units:
    """A store's ``unit_languages`` and ``units``, counting what is asked."""

    def __init__(self, units: Sequence[StoredUnit]) -> None:
        self.units = {u.id: u for u in units}
        self.asked: list[list[int]] = []
        self.read: list[list[int]] = []

    def __call__(self, ids: Sequence[int]) -> Mapping[int, str]:
        self.asked.append(list(ids))
        return {i: self.units[i].lang for i in ids if i in self.units}

    def full(self, ids: Sequence[int]) -> Mapping[int, StoredUnit]:
        self.read.append(list(ids))
        return {i: self.units[i] for i in ids if i in self.units}


def _scorer(model: HashEmbedder, units: _Units, ready: bool = True) -> CrossingScorer:
    return CrossingScorer(model, units, units.full, lambda languages: ready)


def test_units_of_another_language_than_the_questions_are_scored_by_the_crossing_model() -> None:
    model = _Mapped(24)
    units = _Units([_unit(1, "en"), _unit(2, "de", "Erstattung", "Die Erstattung dauert vierzehn Tage."),
                    _unit(3, ""), _unit(4, "zh", "退款")])
    scorer = _scorer(model, units)
    english_half, other_half = {1: 0.7, 3: 0.2}, {2: 0.1, 4: -0.3}
    got = scorer.rescore(ENGLISH_Q, [english_half, other_half], ("de", "en", "zh"))
    query = model.embed_query(ENGLISH_Q)
    de = 2.0 * float(HashEmbedder(24).embed(["Erstattung\nDie Erstattung dauert vierzehn Tage."])[0] @ query) - 1.0
    zh = 2.0 * float(HashEmbedder(24).embed(["退款\ntext of unit 4"])[0] @ query) - 1.0
    # English units (and those of no language read, as the chain reads them) keep their scores.
    assert got == [{1: 0.7, 3: 0.2}, {2: pytest.approx(de), 4: pytest.approx(zh)}]
    # A German question crosses to the English units instead, and keeps the German one's.
    got = scorer.rescore(GERMAN_Q, [english_half, other_half], ("de", "en", "zh"))
    assert got[0] != english_half and got[1][2] == 0.1 and got[1][4] != -0.3
    # A question too short to read counts as English.
    assert scorer.rescore("refund", [english_half, other_half], ("de", "en"))[0] == english_half
    assert english_half == {1: 0.7, 3: 0.2} and other_half == {2: 0.1, 4: -0.3}  # (the caller's own untouched)


def test_only_the_best_units_that_cross_are_read_again_the_rest_held_under_them_each_read_once() -> None:
    model = _Counting(16)
    units = _Units([_unit(i, "de") for i in range(1, 31)])
    scorer = _scorer(model, units)
    half = {i: 1.0 - i / 100 for i in range(1, 31)}  # (e5's order: 1 first)
    got = scorer.rescore(ENGLISH_Q, [half], ("de",))[0]
    read = list(range(1, crossing.CROSSING_DEPTH + 1))
    query = model.embed_query(ENGLISH_Q)
    assert {u: got[u] for u in read} == pytest.approx(
        {u: float(HashEmbedder(16).embed([f"T\ntext of unit {u}"])[0] @ query) for u in read}, abs=1e-6)
    # Those ranked lower were not read: never above one that was (their own score when lower).
    below = np.nextafter(min(got[u] for u in read), -np.inf)
    assert all(got[u] == min(half[u], below) for u in range(crossing.CROSSING_DEPTH + 1, 31))
    assert units.read == [read] and len([t for t in model.read if t.startswith("T\n")]) == len(read)
    scorer.rescore("How do I get my refund?", [half], ("de",))  # another question, the same units
    assert units.read == [read] and len([t for t in model.read if t.startswith("T\n")]) == len(read)


def test_a_long_unit_is_read_by_its_first_characters_and_a_deleted_one_scores_zero() -> None:
    model = _Counting(16)
    units = _Units([_unit(1, "de", "Handbuch", "Seite " * 5000), _unit(2, "de")])
    scorer = _scorer(model, units)
    got = scorer.rescore(ENGLISH_Q, [{1: 0.4, 3: 0.3}], ("de",))[0]
    assert [len(t) for t in model.read if t.startswith("Handbuch")] == [crossing.MAX_CHARS]
    assert got[3] == 0.3  # (no language: gone from the store before the search read it)
    # Gone between the two reads (its language, then its text): it scores 0, and is not kept.
    scorer._units = lambda ids: {i: u for i, u in units.full(ids).items() if i != 2}
    assert scorer.rescore(ENGLISH_Q, [{2: 0.4}], ("de",))[0] == {2: 0.0}
    scorer._units = units.full
    assert scorer.rescore(ENGLISH_Q, [{2: 0.4}], ("de",))[0] != {2: 0.0}


def test_an_unclear_question_is_read_in_the_callers_only_language() -> None:
    """A bare topic ("Passwort", "refund") reads as no language: in a German help center it is
    read as German (its units keep e5's reading); among several, as English."""
    units = _Units([_unit(1, "de"), _unit(2, "en")])
    scorer = _scorer(_Counting(16), units)
    assert scorer.rescore("Passwort", [{1: 0.3}], ("de",)) == [{1: 0.3}] and units.asked == []
    # A script names the language only where the caller writes in it (review: "Passwort 密码"
    # read as Chinese had every German unit of a German-only help center read again by USE).
    assert scorer.rescore("Passwort 密码", [{1: 0.3}], ("de",)) == [{1: 0.3}] and units.asked == []
    assert scorer.rescore("Passwort", [{2: 0.6}, {1: 0.3}], ("de", "en")) == [{2: 0.6}, {1: pytest.approx(
        float(HashEmbedder(16).embed(["T\ntext of unit 1"])[0] @ HashEmbedder(16).embed_query("Passwort")), abs=1e-6)}]


def test_a_question_in_the_callers_only_language_costs_nothing() -> None:
    units = _Units([_unit(1, "en")])
    scorer = _scorer(_Counting(16), units)
    assert scorer.rescore(ENGLISH_Q, [{1: 0.5}], ("en",)) == [{1: 0.5}]
    assert scorer.rescore("refund", [{1: 0.5}], ("",)) == [{1: 0.5}]
    assert units.asked == []


def _pages() -> Loaded:
    german = "Die Rückerstattung wird innerhalb von vierzehn Tagen nach dem Kauf ausgezahlt, wenn Sie uns schreiben."
    english = "Refunds are paid within fourteen days of purchase when you write to us with your order number."
    return Loaded([Document(i, t, x, f"https://help/{i}", sections=(Section((), x),))
                   for i, t, x in [("de", "Rückerstattung", german), ("en", "Refunds", english)]])


def test_the_engines_chain_scores_a_page_in_another_language_by_its_crossing_model(tmp_path: Path) -> None:
    crossing_model = _Counting(40)
    chain = ChainEmbedder(HashEmbedder(32), HashEmbedder(16), crossing_model)
    with Engine.open(tmp_path / "a", Settings(), chain) as engine:
        engine.ingest_loaded("kb", _pages(), Access("acme"))
        caller = Caller("acme")
        found = dict(engine.dense.search(ENGLISH_Q, caller, engine.store.allowed(caller), depth=10))
        units = engine.store.units(sorted(found))
        query = crossing_model.embed_query(ENGLISH_Q)
        for uid, score in found.items():
            unit = units[uid]
            if unit.lang == "de":
                text = f"{unit.title}\n{unit.text}".strip()
                assert score == pytest.approx(float(HashEmbedder(40).embed([text])[0] @ query), abs=1e-6)
        assert {units[u].lang for u in found} == {"de", "en"} and crossing_model.read
    # The chain with USE reads other languages with the crossing model already: nothing to do.
    use_like = HashEmbedder(16)
    with Engine.open(tmp_path / "b", Settings(), ChainEmbedder(HashEmbedder(32), use_like, use_like)) as engine:
        assert engine.crossing is None


def test_the_crossing_model_is_loaded_with_the_first_page_not_in_english_and_used_only_once_loaded(
        tmp_path: Path) -> None:
    """Its load takes seconds, over a leg's budget inside a search: a store of English pages
    never loads it, and until it is loaded the chain's scores stand."""
    units = _Units([_unit(1, "de")])
    waiting = _scorer(_Counting(16), units, ready=False)
    assert waiting.rescore(ENGLISH_Q, [{1: 0.3}], ("de",)) == [{1: 0.3}] and units.asked == []
    made: list[int] = []

    def use() -> HashEmbedder:
        made.append(1)
        return HashEmbedder(40)

    lazy = LazyEmbedder(use, "electa/hash-bow-40", 40)
    chain = ChainEmbedder(HashEmbedder(32), HashEmbedder(16), lazy)
    english = Loaded([Document("en", "Refunds", "Refunds are paid within fourteen days of purchase.", "https://help/en",
                               sections=(Section((), "Refunds are paid within fourteen days of purchase."),))])
    # (organisations reading by language: a new one reads by question, whose USE vectors load it
    # at its first write)
    by_language = Settings(dense_reading="by-language")
    with Engine.open(tmp_path, by_language, chain) as engine:
        engine.ingest_loaded("en", english, Access("acme"))
        engine.search(GERMAN_Q, Caller("acme"), legs=["dense"])
        assert not lazy.loaded and not made
        engine.ingest_loaded("de", _pages(), Access("acme"))
        assert lazy.loaded and made == [1]
    with Engine.open(tmp_path, by_language, ChainEmbedder(HashEmbedder(32), HashEmbedder(16),
                                                          LazyEmbedder(use, "electa/hash-bow-40", 40))) as engine:
        assert made == [1, 1]  # (a store with German pages loads it as it opens)


def test_a_crossing_model_that_cannot_load_is_said_once_and_the_chains_scores_stand(
        caplog: pytest.LogCaptureFixture) -> None:
    tries: list[int] = []

    def broken() -> HashEmbedder:
        tries.append(1)
        raise RuntimeError("damaged model file")

    ready = WhenLoaded(LazyEmbedder(broken, "electa/hash-bow-40", 40))
    assert not ready(("en",)) and tries == []  # (English pages only: never loaded for this)
    assert not ready(("de", "en")) and not ready(("de",)) and tries == [1]
    assert len([r for r in caplog.records if "could not be loaded" in r.message]) == 1
    fine = LazyEmbedder(lambda: HashEmbedder(40), "electa/hash-bow-40", 40)
    assert WhenLoaded(fine)(("de",)) and fine.loaded and WhenLoaded(HashEmbedder(40))(("de",))
    assert not WhenLoaded(HashEmbedder(40))(("en", ""))  # (whatever is loaded: English pages never cross)


def test_the_scores_of_a_chain_that_crosses_have_their_own_lineage(tmp_path: Path) -> None:
    """A calibration or learned ranker fitted on the chain's scores before the crossing model
    scored its units in other languages is not read after (tune again)."""
    with Engine.open(tmp_path / "a", Settings(dense_reading="by-language"),
                     ChainEmbedder(HashEmbedder(32), HashEmbedder(16), HashEmbedder(40))) as engine:
        model = engine.embedder.model_id  # type: ignore[union-attr]
        english = Loaded([Document("en", "Refunds", "Refunds are paid within fourteen days of purchase.", "https://h/en",
                                   sections=(Section((), "Refunds are paid within fourteen days of purchase."),))])
        engine.ingest_loaded("en", english, Access("acme"))
        assert engine.dense_model_id("acme") == model  # (English pages only: it never crosses)
        engine.ingest_loaded("de", _pages(), Access("acme"))
        assert engine.dense_model_id("acme") == f"{model}+crossing"
        caller, tuned = Caller("acme", "bot"), {"fusion": {"k": 30}}
        assert engine._agent_profile(caller, {**tuned, "model_id": f"{model}+crossing"})["fusion"] == {"k": 30}
        assert engine._agent_profile(caller, {**tuned, "model_id": model}) == {}
    with Engine.open(tmp_path / "b", Settings(), ChainEmbedder(HashEmbedder(32), HashEmbedder(16))) as engine:
        assert engine.dense_model_id("acme") == engine.embedder.model_id  # type: ignore[union-attr]


def test_a_caller_with_english_pages_only_never_crosses_whatever_is_loaded(tmp_path: Path) -> None:
    """In a store where another organisation has German pages (so the crossing model is loaded),
    an English-only organisation's scores for a German question are the chain's, as in a
    process that never loaded it."""
    chain = ChainEmbedder(HashEmbedder(32), HashEmbedder(16), _Counting(40))
    english = Loaded([Document("en", "Refunds", "Refunds are paid within fourteen days of purchase.", "https://h/en",
                               sections=(Section((), "Refunds are paid within fourteen days of purchase."),))])
    with Engine.open(tmp_path, Settings(dense_reading="by-language"), chain) as engine:
        engine.ingest_loaded("en", english, Access("acme"))
        caller = Caller("acme")
        before = engine.dense.search(GERMAN_Q, caller, engine.store.allowed(caller), depth=10)
        engine.ingest_loaded("de", _pages(), Access("rival"))
        assert engine.dense.search(GERMAN_Q, caller, engine.store.allowed(caller), depth=10) == before
        assert engine.dense_model_id("acme") == engine.embedder.model_id  # type: ignore[union-attr]


def test_a_failure_while_scoring_across_languages_leaves_the_chains_scores(tmp_path: Path,
                                                                             caplog: pytest.LogCaptureFixture) -> None:
    chain = ChainEmbedder(HashEmbedder(32), HashEmbedder(16), _Counting(40))
    with Engine.open(tmp_path, Settings(), chain) as engine:
        engine.ingest_loaded("de", _pages(), Access("acme"))
        caller = Caller("acme")
        assert engine.crossing is not None

        def broken(ids: Sequence[int]) -> Mapping[int, str]:
            raise RuntimeError("database went away")

        crossed = engine.dense.search(ENGLISH_Q, caller, engine.store.allowed(caller), depth=10)
        engine.crossing._languages_of = broken  # type: ignore[method-assign]
        plain = engine.dense.search(ENGLISH_Q, caller, engine.store.allowed(caller), depth=10)
        assert plain and plain != crossed
        assert {u for u, _ in plain} == {u for u, _ in crossed}
        assert len([r for r in caplog.records if "database went away" in r.message]) == 1
        engine.dense.search(ENGLISH_Q, caller, engine.store.allowed(caller), depth=10)
        assert len([r for r in caplog.records if "database went away" in r.message]) == 1  # (said once)


def test_a_write_stands_when_the_chains_models_cannot_load_after_it(tmp_path: Path) -> None:
    def broken() -> HashEmbedder:
        raise RuntimeError("damaged model file")

    chain = ChainEmbedder(HashEmbedder(32), HashEmbedder(16), LazyEmbedder(broken, "electa/hash-bow-40", 40))
    with Engine.open(tmp_path, Settings(), chain) as engine:
        engine.ingest_loaded("de", _pages(), Access("acme"))
        hits = engine.search("Rückerstattung Kauf", Caller("acme"), legs=["dense", "fulltext"]).hits
        assert {h.url for h in hits} >= {"https://help/de"}

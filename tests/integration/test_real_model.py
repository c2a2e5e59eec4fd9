"""The packaged all-MiniLM-L6-v2 (int8 ONNX) on the sample knowledge base."""

from __future__ import annotations

import numpy as np
import pytest

from electa import Caller, ChunkKind, Engine, Order
from electa.embedders.minilm import MiniLmOnnxEmbedder

pytestmark = pytest.mark.integration


def test_embeddings_are_unit_length_and_semantic() -> None:
    emb = MiniLmOnnxEmbedder()
    vecs = emb.embed(["Can I get my money back?", "Refund policy", "Our office dogs"])
    assert vecs.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2] + 0.2
    # Batching and padding never change a text's vector.
    alone = emb.embed(["Refund policy"])[0]
    assert float(alone @ vecs[1]) > 0.9999


@pytest.mark.parametrize(("question", "url_part"), [
    ("Can I get my money back?", "refund-policy"),
    ("Error E1042 when exporting to CSV", "e1042"),
    ("How much is the Growth plan per year?", "plans-and-pricing"),
    ("Does it integrate with Slack?", "slack"),
    ("my bank connection stopped updating", "e2001"),
])
def test_exact_tokens_and_meaning_both_find_the_right_page(minilm_engine: Engine, question: str,
                                                           url_part: str) -> None:
    hits = minilm_engine.search(question, Caller("tallyo")).passing
    assert any(url_part in h.url for h in hits[:3]), [(h.title, h.url) for h in hits[:5]]


def test_money_back_reaches_refund_policy_without_sharing_a_word(minilm_engine: Engine) -> None:
    hits = minilm_engine.search("I want my money back", Caller("tallyo"), legs=["dense"], order=Order.FUSED).hits
    assert any("refund" in h.url for h in hits[:5]), [h.title for h in hits[:5]]


def test_team_only_page_with_real_model(minilm_engine: Engine) -> None:
    q = "Who approves a refund over $500?"
    outsider = minilm_engine.search(q, Caller("tallyo"), top=50).hits
    member = minilm_engine.search(q, Caller("tallyo", principals=frozenset({"team:support"}))).hits
    assert not any("wiki.tallyo.example" in h.url for h in outsider)
    assert "refund-approvals" in member[0].url


def test_near_duplicate_html_pages_take_one_slot(minilm_engine: Engine) -> None:
    hits = minilm_engine.search("planned maintenance window", Caller("tallyo")).hits
    status = [h for h in hits if "status" in h.url and h.kind is not ChunkKind.QA]
    assert len(status) == 1 and status[0].also_urls


def test_a_short_question_meets_a_page_title_and_reads_its_text(minilm_engine: Engine) -> None:
    results, _ = minilm_engine.retrieve("I want my money back", Caller("tallyo"), legs=["dense"])
    top = minilm_engine.store.units([h.unit_id for h in results[0].hits[:5]])
    titles = [u for u in top.values() if u.kind is ChunkKind.TITLE]
    assert titles, [(u.kind, u.title) for u in top.values()]  # the page titles sit near short questions
    hits = minilm_engine.search("I want my money back", Caller("tallyo"), legs=["dense"], order=Order.FUSED).hits
    assert all(h.kind is not ChunkKind.TITLE and h.text for h in hits)  # shown as the section they stand for

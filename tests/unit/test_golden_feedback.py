"""Visitors' feedback cannot steer what an agent is tuned on (issue 8 review)."""

from __future__ import annotations

from electa import Engine
from electa.eval.golden import golden_set


def test_visitor_feedback_is_left_out_unless_asked_and_then_counts_once_per_visitor(engine: Engine) -> None:
    store = engine.store
    store.add_feedback("acme", "web", "refund", "https://a/refunds", 1)  # the organisation's own judgment
    for _ in range(50):  # one visitor hammering the widget's thumbs
        store.add_feedback("acme", "web", "refund", "https://a/spam", 1, origin="visitor", voter="key:3@1.2.3.4")
    store.add_feedback("acme", "web", "pricing", "https://a/spam", 1, origin="visitor", voter="key:3@1.2.3.4")
    for voter in ("visitor:acme:u1", "visitor:acme:u2"):
        store.add_feedback("acme", "web", "refund", "https://a/spam", -1, origin="visitor", voter=voter)
    trusted = golden_set(store, "acme", "web")
    assert list(trusted.queries.values()) == ["refund"]
    assert trusted.qrels[next(iter(trusted.queries))] == {"https://a/refunds": 1}
    with_visitors = golden_set(store, "acme", "web", visitors=True)
    by_text = {t: with_visitors.qrels[q] for q, t in with_visitors.queries.items()}
    # 50 thumbs up from one visitor count as one; two visitors' thumbs down outweigh it.
    assert by_text["refund"] == {"https://a/refunds": 1, "https://a/spam": 0}
    assert by_text["pricing"] == {"https://a/spam": 1}

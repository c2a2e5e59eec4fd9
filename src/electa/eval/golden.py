"""Golden sets per agent (SPEC I2), from what the organisation already told us.

- Each curated Q&A pair gives a question whose relevant documents are the pages at the pair's
  URL (the article the curated answer points to).
- Recorded feedback gives more: a query's URLs with a net positive signal (thumbs up, clicks)
  are relevant; a net negative signal marks a URL judged not relevant. Only the organisation's
  own feedback counts unless ``visitors`` is asked for: a widget's search key is public, so
  visitors' thumbs could be anyone's (each visitor then counts once per query and URL).

Relevance is keyed by URL, so the set stays valid when a page is re-ingested under new ids.
The Q&A leg is left out when evaluating on it: its pairs are where the questions came from.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from electa.eval.beir import BeirSet
from electa.stores.protocol import OperationalStore
from electa.stores.sqlite_ops import normalise_trigger
from electa.types import ChunkKind


class _Unit(Protocol):
    @property
    def kind(self) -> ChunkKind: ...

    @property
    def title(self) -> str: ...


def own_pair(question: str) -> Callable[[_Unit], bool]:
    """A test of a unit: is it the Q&A pair whose question is ``question`` (folded words)? A
    golden question finds its own pair by its very words, and the pair carries the URL that
    counts relevant: evaluation and training leave it out.

    >>> from types import SimpleNamespace as Unit
    >>> mine = own_pair("Opening hours?")
    >>> mine(Unit(kind=ChunkKind.QA, title="opening  hours")), mine(Unit(kind=ChunkKind.PARENT, title="Opening hours"))
    (True, False)
    """
    asked = normalise_trigger(question)

    def test(unit: _Unit) -> bool:
        return unit.kind is ChunkKind.QA and normalise_trigger(unit.title) == asked

    return test


def golden_set(store: OperationalStore, org: str, agent: str, visitors: bool = False) -> BeirSet:
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    by_text: dict[str, str] = {}

    def qid_for(text: str) -> str:
        if text not in by_text:
            by_text[text] = f"g{len(by_text) + 1}"
            queries[by_text[text]] = text
        return by_text[text]

    for question, _, url in store.qa_pairs(org, agent):
        if url:
            qrels.setdefault(qid_for(question), {})[url] = 1
    for query, url, signal in store.feedback(org, agent, visitors):
        qid = qid_for(query)
        qrels.setdefault(qid, {})[url] = 1 if signal > 0 else 0
    queries = {q: t for q, t in queries.items() if any(g > 0 for g in qrels.get(q, {}).values())}
    return BeirSet(f"{org}/{agent}", [], queries, {q: qrels[q] for q in queries}, "golden")

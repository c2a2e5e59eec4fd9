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

from electa.eval.beir import BeirSet
from electa.stores.protocol import OperationalStore


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

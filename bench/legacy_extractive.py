"""The extractive answerer as it stood before issue 9 (commit 417c104), kept verbatim as the baseline
row of bench/answers_compare.py. Not part of the product."""
from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Protocol

from electa.answer.prompt import Prompt
from electa.embedders.protocol import Embedder
from electa.text import content_stems, stem_set

STRICT_REPLY = ("I'm sorry, I don't have information about that in our knowledge base. "
                "Would you like me to connect you with someone from our team?")

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


class Answerer(Protocol):
    """Writes an answer for a prompt.

    Contract: ``stream(prompt, question)`` yields pieces of text whose concatenation is the
    answer; numbers and zeros arrive as text ("$0/mo" stays "$0/mo"); it cites sources as
    ``[n]`` by their position in ``prompt.sources``; it may raise, and the caller then falls
    back to the extractive answerer and says so.
    """

    name: str

    def stream(self, prompt: Prompt, question: str) -> Iterator[str]: ...


class LegacyExtractiveAnswerer:
    """No LLM: the sentences of the passing sources that best answer the question, each cited.

    A sentence scores by its cosine to the question when an embedder is given (meaning), plus
    the share of the question's content stems it holds (exact tokens), plus a small prior for
    better-ranked sources. The best three are kept, near-repeats merged into the fuller wording
    (the same text often stands in a page and in a curated answer), and shown in source order. Without an embedder,
    or when nothing clears the bar, the top source's opening sentences stand in. With no
    sources it gives the strict knowledge-base reply (SPEC G8).

    >>> list(ExtractiveAnswerer().stream(Prompt(()), "anything"))[0]
    "I'm "
    """

    name = "extractive-v1"
    MIN_SIMILARITY = 0.4

    def __init__(self, embedder: Embedder | None = None, sentences: int = 3) -> None:
        self.embedder = embedder
        self.sentences = sentences

    def _candidates(self, prompt: Prompt) -> list[tuple[int, int, str]]:
        out = []
        for s_id, passage in enumerate(prompt.sources, 1):
            for pos, sentence in enumerate(x.strip() for x in _SENTENCE.split(passage.text)):
                if len(sentence) >= 3 and not sentence.endswith("…") and not sentence.startswith(("|", "---")):
                    out.append((s_id, pos, sentence))
        return out

    def compose(self, prompt: Prompt, question: str) -> str:
        if not prompt.sources:
            return STRICT_REPLY
        candidates = self._candidates(prompt)
        if not candidates:
            return STRICT_REPLY
        q = content_stems(question)
        sims = [0.0] * len(candidates)
        if self.embedder is not None:
            vecs = self.embedder.embed([c[2] for c in candidates])
            sims = [float(x) for x in vecs @ self.embedder.embed_query(question)]
        scored, every = [], []
        for (s_id, pos, sentence), sim in zip(candidates, sims, strict=True):
            stems = stem_set(sentence)
            share = sum(1 for s in q if s in stems) / len(q) if q else 0.0
            item = (sim + 0.3 * share + 0.02 / s_id, s_id, pos, sentence, stems)
            every.append(item)
            if (sim >= self.MIN_SIMILARITY) if self.embedder is not None else share > 0:
                scored.append(item)
        chosen: list[tuple[float, int, int, str, set[str]]] = []
        for item in sorted(scored, key=lambda t: -t[0]):
            if not any(_near_repeat(item[4], c[4]) for c in chosen):
                chosen.append(item)
            if len(chosen) == self.sentences:
                break
        # The fuller wording of a chosen point stands: a page's "after 30 days we refund the
        # unused months" gives way to the curated answer that also says "refunded in full
        # within 30 days", even when the longer sentence sits further from the question.
        for i, c in enumerate(chosen):
            fuller = [x for x in every if len(x[4]) > len(c[4]) and _near_repeat(x[4], c[4])
                      and (c[4] & set(q)) <= x[4]]  # never at the cost of a word of the question
            if fuller:
                best = max(fuller, key=lambda x: x[0])
                if not any(_near_repeat(best[4], o[4]) for j, o in enumerate(chosen) if j != i):
                    chosen[i] = best
        if not chosen:
            chosen = [(0.0, s_id, pos, sentence, set[str]()) for s_id, pos, sentence in candidates if s_id == 1][:2]
        chosen.sort(key=lambda t: (t[1], t[2]))
        return " ".join(f"{sentence.rstrip()} [{s_id}]" for _, s_id, _, sentence, _ in chosen)

    def stream(self, prompt: Prompt, question: str) -> Iterator[str]:
        yield from re.findall(r"\S+\s*", self.compose(prompt, question))


def _near_repeat(a: set[str], b: set[str]) -> bool:
    """Two sentences making the same point: 70% of the shorter one's stems are in the other."""
    return len(a & b) >= 0.7 * max(1, min(len(a), len(b)))



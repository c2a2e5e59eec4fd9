"""The passages of an answer's prompt (SPEC C7): how many hits a search for them shows
(:data:`ANSWER_WINDOW`), and each passing hit's text cut to its share of the context, read from
where the question's words are.
"""

from __future__ import annotations

from collections.abc import Sequence

from electa.answer.segment import segment
from electa.modes.protocol import MERGE_DEPTH
from electa.text.analysis import DEFAULT_LANGUAGE, coverage_terms, joined_parts
from electa.text.focus import focus_start
from electa.types import Hit, Passage


def cut(text: str, limit: int) -> str:
    """Cut at the last sentence end (else word) before ``limit``; mark the cut with an ellipsis.

    >>> cut("Refunds are paid in full\\nonly within 14 days. After that, unused months only.", 60)
    'Refunds are paid in full\\nonly within 14 days. …'
    """
    text = text.strip()
    if len(text) <= limit:
        return text
    window = text[: max(0, limit - 1)]
    # The last whole sentence, list item or table row: a hard-wrapped line ends no sentence.
    # Only the head is read (a whole document can be 50 KB); a sentence cut by it ends past the window.
    end = max((s.end for s in segment(text[:limit]) if s.end <= len(window)), default=0)
    if end >= limit // 2:
        return window[:end].rstrip() + " …"
    space = window.rfind(" ")
    return (window[:space] if space > 0 else window).rstrip() + " …"


ANSWER_WINDOW = MERGE_DEPTH
"""How many hits a search for an answer's passages shows (:meth:`electa.engine.Engine.context`, the ask
pipeline, the demo): passing hits are read from all of them, so hits the floor rejects that the
served order puts above passing ones (a larger C4 lift puts more there: :mod:`electa.scoring`)
do not take passages out of the prompt's reach. Up to commit 08792e3 it was 10. It is the
merging modes' own depth (20), so their searches are unchanged by it; the hybrid mode's legs'
depths do not depend on it (only how many of their candidates become hits, and without judges
the first ten are the same). A judge still scores its own depth's hits (50 or more by
default); but when any judge runs, the passing-first regrouping after it spans the hits built,
``max(top, the judges' depth)``, so with a judge set to a depth under 20 it now spans 20, not
``max(10, depth)``, and a passing 15th can come before a failing 5th. The multimodal mode
orders 20 candidates by their images instead of 10, and the corrective mode's LLM still grades
only the first five (a passing hit after the tenth reaches the prompt ungraded, as the sixth to
tenth did)."""


def answer_window(passages: int) -> int:
    """The ``top`` of a search whose first ``passages`` passing hits reach a prompt."""
    return max(ANSWER_WINDOW, passages)


def cut_passages(hits: Sequence[Hit], passage_chars: int, budget: int, question: str = "") -> list[Passage]:
    """Each hit's text cut to ``passage_chars`` within ``budget`` in all (SPEC C7); with the
    ``question``, a text longer than its cut is read from where its words are
    (:func:`electa.text.focus.focus_start`), not always from its head."""
    out: list[Passage] = []
    left = budget
    asked = coverage_terms(question, {h.lang or DEFAULT_LANGUAGE for h in hits}) if question else {}
    # (with the pairs a page may write as one: "log in" is read from where the page says "login")
    asked = {lang: terms.union(joined_parts(question, lang)) for lang, terms in asked.items()}
    for hit in hits:
        if left <= 0:
            break
        limit = min(passage_chars, left)
        lang = hit.lang or DEFAULT_LANGUAGE
        start = focus_start(hit.text, asked.get(lang, frozenset()), lang, limit) if asked else 0
        body = cut(hit.text[start:], limit)
        out.append(Passage(hit, body))
        left -= len(body)
    return out

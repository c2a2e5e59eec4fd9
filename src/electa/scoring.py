"""The absolute relevance score and the floor (SPEC C3, C4). Pure functions.

From reference/support-bot-retrieval.txt:

- lexical coverage = 0.25 + 0.6 × (share of the question's stemmed content words found in the
  passage), capped at 0.95;
- a vector hit takes the higher of its cosine similarity and its coverage;
- a hit of the Q&A leg takes at least 0.85, a graph summary 0.9 (:func:`graph_earns_minimum`);
- a candidate found only by full-text search takes its coverage, and must share at least one
  stemmed word with the question to survive at all;
- the floor is 0.4: with four question stems one shared stem gives exactly 0.40.

C4, beyond the reference: the absolute score decides the cut, but ordering by it alone throws
away the agreement between legs that RRF measures. Electa orders by

    order = score + LIFT × fused / max_fused

where ``max_fused`` is the fused value of a candidate ranked first by every leg that found
something (a leg that ran and found nothing cannot vote, so it must not shrink the lift), so the second term
lies in (0, LIFT]. With LIFT = 0.1 a candidate all legs put first gains 0.1 over one no leg
liked, enough to reorder candidates whose absolute scores are close and to break the frequent
exact ties of coverage (a multiple of 0.6/n), and too little to lift one the floor rejects:
the floor reads the score, never the order value. ``electa eval`` reports this order next to
the plain absolute order and the plain RRF order.

A larger lift was measured and is not served (``bench/lift_choice.py``, 2026-12-04: each shipped
set searched as served, the lift chosen leaving one corpus out by the largest smallest gain over
0.1). Chosen on every set it would be 0.25; held out, SciFact (+0.007 at 0.25), Cranfield
(+0.017 at 0.25) and Chinese (+0.004 at 0.2) gain significantly; but StackFAQ, held out, would
lose 0.004 with the lift its neighbours choose (0.4; not significant, 48 questions better and 55
worse). A larger lift also orders more failing hits above passing ones: of the Chinese
questions with four or more passing hits in all, 45 of 1,190 held fewer than four among the
first ten at 0.2, against 2 at 0.1; the ask pipeline now reads its passages from the first 20
(``electa.engine.ANSWER_WINDOW``), where that count is 0 at both. The README has the table.
"""

from __future__ import annotations

from collections.abc import Iterable, Set

COVERAGE_BASE = 0.25
COVERAGE_SPAN = 0.6
COVERAGE_CAP = 0.95
QA_MIN = 0.85
GRAPH_MIN = 0.9
FLOOR = 0.4
LIFT = 0.1


def coverage(question_stems: Iterable[str], passage_stems: Set[str]) -> float:
    """Lexical coverage of the question by the passage.

    >>> coverage(["export", "csv", "error", "e1042"], {"csv", "file"})
    0.4
    >>> coverage([], {"x"})
    0.25
    """
    q = set(question_stems)
    return coverage_of(len(q.intersection(passage_stems)), len(q))


def coverage_of(shared: int, asked: int) -> float:
    """:func:`coverage` from counts: ``shared`` of the question's ``asked`` distinct stems are
    in the passage (the engine counts them with one set intersection per candidate).

    >>> coverage_of(1, 4), coverage_of(0, 0), coverage_of(9, 9)
    (0.4, 0.25, 0.85)
    """
    if not asked:
        return COVERAGE_BASE
    return round(min(COVERAGE_CAP, COVERAGE_BASE + COVERAGE_SPAN * (shared / asked)), 10)


def shares_stem(question_stems: Iterable[str], passage_stems: Set[str]) -> bool:
    return any(s in passage_stems for s in question_stems)


def absolute_score(cov: float, cosine: float | None = None, qa_hit: bool = False,
                   graph_hit: bool = False) -> float:
    """Combine the rules: coverage, raised by a vector vote's cosine and by Q&A/graph minimums.
    The dense vote is a cosine on MiniLM's scale (:func:`electa.embedders.chain.score_map`): a
    mapped e5 score passes 1 for a near-copy of the question, and is read as 1, so that a score
    stays within 0-1.

    >>> absolute_score(0.4, cosine=0.62)
    0.62
    >>> absolute_score(0.25, qa_hit=True)
    0.85
    >>> absolute_score(0.4, cosine=1.09)
    1.0
    """
    score = cov
    if cosine is not None:
        score = max(score, min(cosine, 1.0))
    if qa_hit:
        score = max(score, QA_MIN)
    if graph_hit:
        score = max(score, GRAPH_MIN)
    return score


def qa_earns_minimum(qa_rank: int, dense_rank: int) -> bool:
    """Whether a Q&A pair earns the 0.85 minimum (SPEC C3); ranks are 1-based, 0 for no vote.

    The support-bot reference gives it to every pair its Q&A leg matches and names the cost: a
    pair sharing one loose word pushes better passages out. Electa asks for a second opinion:
    the Q&A leg ranks the pair first, or the dense leg ranks it among its top three.

    >>> qa_earns_minimum(1, 0), qa_earns_minimum(2, 3), qa_earns_minimum(2, 7), qa_earns_minimum(0, 1)
    (True, True, False, False)
    """
    return qa_rank == 1 or (qa_rank > 1 and 0 < dense_rank <= 3)


def graph_earns_minimum(graph_rank: int, raw: float, other_rank: int) -> bool:
    """Whether a hit of the graph leg earns the 0.9 minimum (SPEC C3, B5). The reference gives it
    to every graph summary; Electa's graph leg returns passages, not summaries, and a passage
    that names an entity of the question is not thereby the answer when many do (measured on
    SciFact train: the minimum for every passage naming "IL-18" lowered nDCG@10). So, as for Q&A
    pairs, a second opinion: the graph ranks it among its first three as naming what was asked
    (a raw score of 1 or more, :mod:`electa.legs.graph`), and another leg ranks it among its
    first ten (``other_rank``, 0 for none).

    >>> graph_earns_minimum(1, 1.4, 2), graph_earns_minimum(1, 1.4, 0), graph_earns_minimum(4, 2.0, 1)
    (True, False, False)
    >>> graph_earns_minimum(1, 0.6, 1)
    False
    """
    return 0 < graph_rank <= 3 and raw >= 1.0 and 0 < other_rank <= 10


def order_value(score: float, fused: float, max_fused: float, lift: float = LIFT) -> float:
    """C4: the absolute score lifted by normalised agreement.

    >>> round(order_value(0.5, 2 / 61, 2 / 61), 3)
    0.6
    """
    if max_fused <= 0:
        return score
    return score + lift * min(1.0, fused / max_fused)

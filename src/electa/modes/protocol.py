"""Retrieval modes (SPEC F, issue 11): a mode is a plan over legs and judges that already exist,
chosen per agent (reference/bot-platform-retrieval-modes.txt).

A mode never reaches into a store: it is handed a :class:`ModeContext` whose ``search`` runs one
plain search (legs, fusion, scoring; no judges) and whose ``judge`` runs the agent's judges once
over what the mode kept. What it did is a :class:`ModeReport` on the result: the mode that ran,
what was asked for and where that came from, why another ran instead (the fallback), whether an
LLM step ran or its heuristic stood in, and each query it searched.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from electa.types import Hit, ModeReport, SearchResult, Stage

if TYPE_CHECKING:
    from electa.modes.llm import LlmSteps

# Each list's rank contribution when a mode merges several searches' hits (RRF's k, SPEC C1).
MERGE_K = 60.0
# How far agreement across a mode's searches nudges the question's own hits: the C4 lift the
# modes were measured with (0.1; the served order's is 0.4 read at RRF k 10 since 2026-12-04,
# electa.scoring).
MERGE_LIFT = 0.1
# How many hits each search of a mode that merges several keeps (at least).
MERGE_DEPTH = 20


@dataclass
class ModeContext:
    """What a mode is handed (see the module's docstring).

    ``search(text, legs, depth_factor, count, trust_graph=False)``: one plain search of ``text``
    over ``legs`` (None: the default legs), each leg's depth times ``depth_factor``, judges off,
    its first ``count`` hits (``shown`` for a mode of one search: what the judges look at; at
    least :data:`MERGE_DEPTH` for one that merges several); ``trust_graph``: the graph leg's
    minimum needs no second opinion (the graph mode's own search). ``judge(text, hits)``:
    the agent's judges over ``hits`` (fused and scored), with their stages. ``entities(text)``:
    the names of the graph's nodes the question links to, for the caller (E7's heuristic).
    ``llm``: the LLM steps, or None (every mode then runs its heuristics). ``budget_ms``: how
    long a mode of several searches may keep searching; ``rounds``: how many rounds of rewriting
    (corrective) or hops (agentic) it may take."""

    search: Callable[..., SearchResult]
    judge: Callable[[str, Sequence[Hit]], tuple[list[Hit], list[Stage]]]
    entities: Callable[[str], list[str]]
    legs: tuple[str, ...]
    graph: bool
    llm: LlmSteps | None
    top: int
    shown: int
    budget_ms: float
    rounds: int

    def with_graph(self) -> list[str]:
        """The default legs and the graph's, when the store keeps a graph (the modes that run it)."""
        return [*self.legs, "graph"] if self.graph else list(self.legs)


class Mode(Protocol):
    """A retrieval plan. Contract: ``run`` returns the hits the plan kept (best first, at most
    ``ctx.top`` after the judges), every leg result it used, its judges' stages and its report;
    it never raises for an LLM step that fails (its heuristic stands in, and ``report.llm``
    says which ran)."""

    name: str

    def run(self, ctx: ModeContext, text: str) -> tuple[SearchResult, ModeReport]: ...


def merge(results: Sequence[SearchResult], weights: Sequence[float] | None = None,
          deciding: Sequence[bool] | None = None, primary: bool = False) -> list[Hit]:
    """The hits of several searches as one list, one hit per document.

    Scores of different queries do not compare (a one-word query covers its passages whole), so
    the lists are fused by rank: each list gives ``weight / (k + rank)`` (k = :data:`MERGE_K`),
    RRF as RAG-Fusion merges a question's rewrites, and a document is shown by its
    highest-scored instance. With ``primary``, the first search is the question's own and keeps
    its order (C4's order value, each of its hits nudged by MERGE_LIFT × its agreement across all
    the lists, normalised); the documents only the other searches found follow, by agreement, and
    show their own instance.

    A hit passes when it passes in a *deciding* search (each, unless ``deciding`` says which), or
    in two searches or more: a passage found for one of a question's entities alone ("Growth")
    has not answered a question naming several, one found for two of them may have.

    >>> from electa.types import ChunkKind
    >>> def hit(doc, score, passes=True):
    ...     return Hit(doc, doc, 1, ChunkKind.PARENT, "", "", f"u{doc}", "", 0.0, score, passes, (), sort_key=score)
    >>> a = SearchResult("q", (hit(1, 0.5), hit(2, 0.6)), ())
    >>> b = SearchResult("q", (hit(2, 0.55, False), hit(3, 0.9)), ())
    >>> [(h.document_id, h.score, h.passes) for h in merge([a, b])]
    [(2, 0.6, True), (1, 0.5, True), (3, 0.9, True)]
    >>> [(h.document_id, h.passes) for h in merge([a, b], deciding=[True, False], primary=True)]
    [(2, True), (1, True), (3, False)]
    >>> [(h.document_id, h.passes) for h in merge([a, a], deciding=[False, False])]
    [(1, True), (2, True)]
    """
    weights = list(weights) if weights is not None else [1.0] * len(results)
    decides = list(deciding) if deciding is not None else [True] * len(results)
    best: dict[int, Hit] = {}
    passes: dict[int, bool] = {}
    passed_in: dict[int, int] = {}
    agreement: dict[int, float] = {}
    for result, weight, decide in zip(results, weights, decides, strict=True):
        for rank, hit in enumerate(result.hits, 1):
            doc = hit.document_id
            agreement[doc] = agreement.get(doc, 0.0) + weight / (MERGE_K + rank)
            passed_in[doc] = passed_in.get(doc, 0) + hit.passes
            passes[doc] = passes.get(doc, False) or (hit.passes and decide) or passed_in[doc] >= 2
            if doc not in best or hit.score > best[doc].score:
                best[doc] = hit
    most = sum(weights) / (MERGE_K + 1)
    own = {h.document_id: h for h in results[0].hits} if primary and results else {}
    merged = []
    for doc, hit in best.items():
        if doc in own:  # the question's own instance, in its own order
            merged.append(replace(own[doc], passes=passes[doc], fused=agreement[doc],
                                  sort_key=own[doc].sort_key + MERGE_LIFT * agreement[doc] / most))
        else:
            key = agreement[doc] / most - (2.0 if primary else 0.0)  # (after every hit of the question's own)
            merged.append(replace(hit, passes=passes[doc], fused=agreement[doc], sort_key=key))
    return sorted(merged, key=lambda h: (-h.sort_key, -h.score))


def wide(ctx: ModeContext) -> int:
    """How many hits each search of a merging mode keeps."""
    return max(ctx.shown, MERGE_DEPTH)


def leg_results(results: Sequence[SearchResult]) -> tuple:  # type: ignore[type-arg]
    """Every leg result of several searches, in the order they ran."""
    return tuple(r for result in results for r in result.legs)


def timings(results: Sequence[SearchResult]) -> dict[str, float]:
    """The searches' timings summed per stage."""
    out: dict[str, float] = {}
    for result in results:
        for stage, ms in result.timings_ms.items():
            out[stage] = out.get(stage, 0.0) + ms
    return out


def finish(ctx: ModeContext, text: str, hits: Sequence[Hit], stages: Sequence[Stage],
           results: Sequence[SearchResult]) -> SearchResult:
    """What a mode returns: its first ``ctx.top`` hits, every leg result and timing of its searches."""
    return SearchResult(text, tuple(hits[: ctx.top]), leg_results(results), timings(results), tuple(stages))

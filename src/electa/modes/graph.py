"""The ``graph`` mode (SPEC F, E7): the graph leg beside the others, trusted (its first three that
name what was asked, or what fixes or is required by it, score at least 0.9 as the reference's
graph summaries do, with no other leg's second opinion), and entity expansion. The
bot-platform reference's "graph" mode is entity expansion alone ("not a knowledge graph"); Electa
runs the knowledge-graph leg (:mod:`electa.legs.graph`) and expands too: each entity of the
question (the LLM's list, or :func:`electa.modes.heuristics.entity_names`) is searched on its
own, at half weight: the question's own search keeps its order, each of its passages nudged by
how often the entities' searches found it too, and what only they found follows (``merge`` with
``primary``). A passage found for one entity alone does not pass (``merge``'s deciding rule): it
has not answered the whole question.
"""

from __future__ import annotations

import time

from electa.modes.heuristics import entity_names
from electa.modes.protocol import ModeContext, finish, merge, wide
from electa.types import ModeReport, SearchResult

ENTITY_WEIGHT = 0.5


class GraphMode:
    name = "graph"

    def run(self, ctx: ModeContext, text: str) -> tuple[SearchResult, ModeReport]:
        start = time.perf_counter()
        legs = ctx.with_graph()
        first = ctx.search(text, legs, 1.0, wide(ctx), trust_graph=True)
        asked = ctx.llm.entities(text) if ctx.llm is not None else None
        entities = asked or entity_names(text, ctx.entities(text))
        results, steps = [first], []
        for name in entities:
            if name.casefold() == text.strip().casefold():
                continue
            if (time.perf_counter() - start) * 1000 > ctx.budget_ms:
                break
            results.append(ctx.search(name, list(ctx.legs), 1.0, wide(ctx)))
            steps.append(f"entity: {name}")
        merged = merge(results, [1.0] + [ENTITY_WEIGHT] * (len(results) - 1), deciding=[True] + [False] * (len(results) - 1),
                       primary=True)
        hits, stages = ctx.judge(text, merged)
        notes = () if ctx.graph else ("the graph leg is unavailable: entity expansion over the other legs",)
        return (finish(ctx, text, hits, stages, results),
                ModeReport(self.name, llm=asked is not None, steps=tuple(steps), notes=notes))

"""The ``agentic`` mode (SPEC F, E6): the question decomposed into sub-questions, each searched,
coverage verified between hops, within a budget. The bot-platform reference decomposes once and
merges ("it does not iterate on its own results"); Electa checks that each sub-question found a
passage that passes, and for one that did not, hops: it searches the sub-question again with the
entities the passages found so far name (a graph summary's names, else the passage's title),
the bridge a two-document question needs ("error E1042" -> its page names the setting -> the
setting's page). At most ``ctx.rounds`` hops; it stops early on ``ctx.budget_ms``.

Decomposition: the LLM's sub-questions, or :func:`electa.modes.heuristics.decompose`. The whole
question is searched too, with the graph leg trusted as the graph mode trusts it: the graph's
hop is the cheapest bridge there is.
"""

from __future__ import annotations

import re
import time

from electa.modes.heuristics import decompose, entity_names
from electa.modes.protocol import ModeContext, finish, merge, wide
from electa.types import Hit, ModeReport, SearchResult

COVERED_WITHIN = 3  # a sub-question is covered when one of its first three passages passes
_NAMES = re.compile(r"names ([^;:]+)")


def bridge(hits: list[Hit]) -> str:
    """What the passages found so far name, to carry into the next hop: the entities a graph
    summary names, else the best passage's title.

    >>> from electa.types import ChunkKind
    >>> h = Hit(1, 1, 1, ChunkKind.PARENT, "Export errors", "", "u", "", 0, 0.9, True, (),
    ...         graph="names E1042; names Settings > Exports: Settings > Exports fixes E1042")
    >>> bridge([h])
    'E1042 Settings > Exports'
    >>> from dataclasses import replace
    >>> bridge([replace(h, graph="Slack is part of Growth")])  # (a summary naming nothing: the title)
    'Export errors'
    """
    for hit in hits:
        if hit.passes and hit.graph:
            named = " ".join(dict.fromkeys(n.strip() for m in _NAMES.finditer(hit.graph) for n in m.group(1).split(",")))
            if named:
                return named
    return next((h.title for h in hits if h.passes and h.title), "")


class AgenticMode:
    name = "agentic"

    def run(self, ctx: ModeContext, text: str) -> tuple[SearchResult, ModeReport]:
        start = time.perf_counter()
        legs = ctx.with_graph()
        asked = ctx.llm.subquestions(text) if ctx.llm is not None else None
        subs = asked or decompose(text, entity_names(text, ctx.entities(text)))
        subs = [s for s in subs if s.strip().casefold() != text.strip().casefold()]
        results = [ctx.search(text, legs, 1.0, wide(ctx), trust_graph=True)]
        steps: list[str] = []
        found: dict[str, SearchResult] = {}
        for sub in subs:
            found[sub] = ctx.search(sub, legs, 1.0, wide(ctx))
            results.append(found[sub])
            steps.append(f"sub-question: {sub}")
        goals = subs or [text]
        if not subs:
            found[text] = results[0]
        rounds = 1
        while rounds <= ctx.rounds and (time.perf_counter() - start) * 1000 <= ctx.budget_ms:
            missing = [g for g in goals if not any(h.passes for h in found[g].hits[:COVERED_WITHIN])]
            if not missing:
                break
            known = [h for g in goals if g not in missing for h in found[g].hits[:COVERED_WITHIN]] or list(results[0].hits)
            link = bridge(known)
            if not link:
                break
            for goal in missing:
                hop = f"{goal} {link}"
                found[goal] = ctx.search(hop, legs, 1.0, wide(ctx))
                results.append(found[goal])
                steps.append(f"hop: {hop}")
            rounds += 1
        covered = [g for g in goals if any(h.passes for h in found[g].hits[:COVERED_WITHIN])]
        notes = tuple(f"{'covered' if g in covered else 'not covered'}: {g}" for g in goals)
        hits, stages = ctx.judge(text, merge(results))
        return (finish(ctx, text, hits, stages, results),
                ModeReport(self.name, llm=asked is not None, steps=tuple(steps), rounds=rounds, notes=notes))

"""The ``corrective`` mode (SPEC F, E5): grade what a search found; when nothing is good, rewrite
the question and search again, wider, at most ``ctx.rounds`` rounds (Corrective RAG's loop; the
bot-platform reference's mode, without its web crawl: Electa answers from the organisation's own
knowledge only).

Grading: the LLM grades the first :data:`GRADED` passages 0-10 in one call (the reference makes
one call per passage), and a passage under :data:`KEEP` no longer passes; without an LLM the
passage passes as the floor (or the agent's calibration) decided. Rewriting: the LLM's variants,
or :func:`electa.modes.heuristics.expand_query` (the content words; those and the words the
first passages share). Each round searches each leg twice as deep as the last.
"""

from __future__ import annotations

import time
from dataclasses import replace

from electa.modes.heuristics import expand_query
from electa.modes.protocol import ModeContext, finish, merge, wide
from electa.types import Hit, ModeReport, SearchResult

GRADED = 5
KEEP = 3.0


class CorrectiveMode:
    name = "corrective"

    def run(self, ctx: ModeContext, text: str) -> tuple[SearchResult, ModeReport]:
        start = time.perf_counter()
        legs = ctx.with_graph()
        results = [ctx.search(text, legs, 1.0, wide(ctx))]
        hits, llm = self._graded(ctx, text, list(results[0].hits))
        steps: list[str] = []
        rounds = 1
        while not any(h.passes for h in hits[:GRADED]) and rounds <= ctx.rounds:
            if (time.perf_counter() - start) * 1000 > ctx.budget_ms:
                break
            asked = ctx.llm.variants(text) if ctx.llm is not None else None
            llm = llm or asked is not None
            variants = asked or expand_query(text, [h.text for h in hits[:3]])
            fresh = [v for v in variants if v not in steps and v.casefold() != text.casefold()]
            if not fresh:
                break
            for variant in fresh:
                results.append(ctx.search(variant, legs, 2.0 ** rounds, wide(ctx)))
                steps.append(variant)
            rounds += 1
            hits, graded = self._graded(ctx, text, merge(results))
            llm = llm or graded
        judged, stages = ctx.judge(text, hits)
        return (finish(ctx, text, judged, stages, results),
                ModeReport(self.name, llm=llm, steps=tuple(f"rewrite: {s}" for s in steps), rounds=rounds))

    @staticmethod
    def _graded(ctx: ModeContext, text: str, hits: list[Hit]) -> tuple[list[Hit], bool]:
        """``hits`` with the LLM's grades applied to the first :data:`GRADED` (a passage under
        :data:`KEEP` no longer passes), and whether the LLM graded them."""
        if ctx.llm is None or not hits:
            return hits, False
        grades = ctx.llm.grades(text, [f"{h.title}\n{h.text}" for h in hits[:GRADED]])
        if grades is None:
            return hits, False
        return [replace(h, passes=h.passes and g >= KEEP) for h, g in zip(hits, grades, strict=False)] + hits[GRADED:], True

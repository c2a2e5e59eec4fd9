"""The two modes of one search (reference/bot-platform-retrieval-modes.txt): ``standard`` (the
dense leg alone, with the page boost: "embeds the query, searches by cosine similarity") and
``hybrid`` (the default legs, fused: Electa's default, since fusion is what recovers the exact
terms dense similarity misses)."""

from __future__ import annotations

from electa.modes.protocol import ModeContext, finish
from electa.types import ModeReport, SearchResult


class StandardMode:
    name = "standard"

    def run(self, ctx: ModeContext, text: str) -> tuple[SearchResult, ModeReport]:
        return one_search(ctx, text, ["dense"]), ModeReport(self.name)


class HybridMode:
    """Every default leg, fused (full text, dense, Q&A; learned sparse when on). Not the
    knowledge graph's: measured side by side (README, "Retrieval modes"), it moved nDCG@10 by
    -0.0008 on SciFact train, +0.0004 on Cranfield and 0 on StackFAQ dev, where it links few
    questions; the graph and agentic modes run it, for the questions it is for."""

    name = "hybrid"

    def run(self, ctx: ModeContext, text: str) -> tuple[SearchResult, ModeReport]:
        return one_search(ctx, text, list(ctx.legs)), ModeReport(self.name)


def one_search(ctx: ModeContext, text: str, legs: list[str]) -> SearchResult:
    result = ctx.search(text, legs, 1.0, ctx.shown)
    hits, stages = ctx.judge(text, result.hits)
    return finish(ctx, text, hits, stages, [result])

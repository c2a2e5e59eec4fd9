"""The ``multimodal`` mode (SPEC F): images in sources, returned as image hits with their page.

The bot-platform reference "expands the query into three variants biased toward visual language,
searches each, then boosts chunks containing terms like diagram, chart, figure or screenshot": it
rewards a passage for *saying* "screenshot", and never returns an image. Electa's loaders keep
each image in its passage (alt text, title, caption, file name: :mod:`electa.ingest.figures`), so
every leg already searches an image's words with its page, under the page's tenant and access.
This mode then:

- when the question asks to be shown something ("What does the invoice editor look like?"),
  searches it wide (:func:`wide`) and also without the words that ask (``invoice editor``:
  pages that merely talk about screenshots are not what was asked for). The question's own
  search keeps its order (``merge`` with ``primary``): the second one nudges the pages both
  found (by their agreement), and the pages only it found follow all of the first search's,
  where the lift below cannot raise them past those; otherwise it is one search of
  ``ctx.shown`` hits, as in the hybrid mode;
- reads the images of each passage found, scores each by the share of the question's words its
  description holds, and returns them with the passage (``hit.images``, best first);
- lifts each passage by its best image's share times :data:`FIGURE_LIFT` (times
  :data:`SHOWN_LIFT` when the question asks to be shown), on the scale of the order value, so a
  page whose screenshot is what was asked for comes before one that only mentions the words.

No LLM step: the words that ask to be shown are a list (``VISUAL_WORDS``). OCR of the text inside
images would need a packaged OCR model; none is verified for offline use (the README says so).
"""

from __future__ import annotations

from dataclasses import replace

from electa.ingest.figures import asked_stems, asked_words, figures_in, match, visual_intent
from electa.modes.protocol import ModeContext, finish, merge, wide
from electa.types import Hit, ModeReport, SearchResult

# The order value's C4 lift when the figures were measured (0.1; the served order's is 0.4 read at
# RRF k 10 since 2026-12-04, electa.scoring): kept, so that a matching image weighs what it did.
FIGURE_LIFT = 0.1
SHOWN_LIFT = 3.0


class MultimodalMode:
    name = "multimodal"

    def run(self, ctx: ModeContext, text: str) -> tuple[SearchResult, ModeReport]:
        legs = list(ctx.legs)
        shown = visual_intent(text)
        plain = " ".join(asked_words(text)) if shown else ""
        first = ctx.search(text, legs, 1.0, wide(ctx) if plain else ctx.shown)
        results, steps = [first], []
        if plain:
            results.append(ctx.search(plain, legs, 1.0, wide(ctx)))
            steps.append(f"without the words that ask to be shown: {plain}")
        merged = merge(results, deciding=[True] * len(results), primary=True) if len(results) > 1 else list(first.hits)
        lift = FIGURE_LIFT * (SHOWN_LIFT if shown else 1.0)
        stems = asked_stems(text)
        hits = [with_images(hit, stems, lift) for hit in merged]
        if any(h.sort_key != m.sort_key for h, m in zip(hits, merged, strict=True)):
            hits.sort(key=lambda h: -h.sort_key)  # stable: a tie keeps the search's order
        hits, stages = ctx.judge(text, hits)
        found = sum(bool(h.images) for h in hits[: ctx.top])
        notes = (f"{found} of the first {min(ctx.top, len(hits))} passages hold images"
                 + ("; the question asks to be shown" if shown else ""),)
        return finish(ctx, text, hits, stages, results), ModeReport(self.name, steps=tuple(steps), notes=notes)


def with_images(hit: Hit, stems: list[str], lift: float) -> Hit:
    """``hit`` with its passage's images (best match first) and its order value lifted by its
    best image's match.

    >>> from electa.types import ChunkKind
    >>> shot = "![The export dialog](x.png)"
    >>> h = Hit(1, 1, 1, ChunkKind.PARENT, "Export", f"Pick CSV.\\n{shot} {shot}", "https://a/e", "",
    ...         0.0, 0.5, True, (), sort_key=0.5)
    >>> lifted = with_images(h, ["export", "dialog"], 0.1)
    >>> lifted.sort_key, [(f.src, f.match) for f in lifted.images]
    (0.6, [('https://a/x.png', 1.0)])
    """
    seen: set[tuple[str, str]] = set()
    figures = []
    for f in figures_in(hit.text, hit.url):
        if (f.src, f.alt) not in seen:  # the same image twice in a passage is one image
            seen.add((f.src, f.alt))
            figures.append(replace(f, match=match(stems, f)))
    if not figures:
        return hit
    figures.sort(key=lambda f: -f.match)
    return replace(hit, images=tuple(figures), sort_key=hit.sort_key + lift * figures[0].match)

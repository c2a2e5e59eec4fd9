"""The ``multimodal`` mode (SPEC F): images in sources, returned as image hits with their page.

The bot-platform reference "expands the query into three variants biased toward visual language,
searches each, then boosts chunks containing terms like diagram, chart, figure or screenshot": it
rewards a passage for *saying* "screenshot", and never returns an image. Electa's loaders keep
each image in its passage (alt text, title, caption, file name: :mod:`electa.ingest.figures`), so
every leg already searches an image's words with its page, under the page's tenant and access.
This mode then:

- when the question asks to be shown something ("What does the invoice editor look like?"),
  also searches it without the words that ask (``invoice editor``: pages that merely talk about
  screenshots are not what was asked for), the question's own search keeping its order
  (``merge`` with ``primary``);
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
from electa.scoring import LIFT
from electa.types import Hit, ModeReport, SearchResult

FIGURE_LIFT = LIFT
SHOWN_LIFT = 3.0


class MultimodalMode:
    name = "multimodal"

    def run(self, ctx: ModeContext, text: str) -> tuple[SearchResult, ModeReport]:
        legs = list(ctx.legs)
        first = ctx.search(text, legs, 1.0, wide(ctx))
        results, steps = [first], []
        shown = visual_intent(text)
        stems = asked_stems(text)
        if shown:
            plain = " ".join(asked_words(text))
            if plain:
                results.append(ctx.search(plain, legs, 1.0, wide(ctx)))
                steps.append(f"without the words that ask to be shown: {plain}")
        merged = merge(results, deciding=[True] * len(results), primary=True) if len(results) > 1 else list(first.hits)
        lift = FIGURE_LIFT * (SHOWN_LIFT if shown else 1.0)
        hits = sorted((with_images(hit, stems, lift) for hit in merged), key=lambda h: (-h.sort_key, -h.score))
        hits, stages = ctx.judge(text, hits)
        found = sum(bool(h.images) for h in hits[: ctx.top])
        notes = (f"{found} of the first {min(ctx.top, len(hits))} passages hold images"
                 + ("; the question asks to be shown" if shown else ""),)
        return finish(ctx, text, hits, stages, results), ModeReport(self.name, steps=tuple(steps), notes=notes)


def with_images(hit: Hit, stems: list[str], lift: float) -> Hit:
    """``hit`` with its passage's images (best match first) and its order value lifted by its
    best image's match.

    >>> from electa.types import ChunkKind
    >>> h = Hit(1, 1, 1, ChunkKind.PARENT, "Export", "Pick CSV.\\n![The export dialog](x.png)", "https://a/e", "",
    ...         0.0, 0.5, True, (), sort_key=0.5)
    >>> lifted = with_images(h, ["export", "dialog"], 0.1)
    >>> lifted.sort_key, [(f.src, f.match) for f in lifted.images]
    (0.6, [('https://a/x.png', 1.0)])
    """
    figures = [replace(f, match=match(stems, f)) for f in figures_in(hit.text, hit.url)]
    if not figures:
        return hit
    figures.sort(key=lambda f: -f.match)
    return replace(hit, images=tuple(figures), sort_key=hit.sort_key + lift * figures[0].match)

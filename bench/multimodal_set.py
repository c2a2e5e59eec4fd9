"""The image question set (issue 11, the ``multimodal`` mode): questions whose answer is a picture
in a help-center page, measured mode by mode on the packaged model.

    python bench/multimodal_set.py                                           # 12 pages, 12 questions
    python bench/multimodal_set.py --distractors src/electa/sample_kb/help-center

The pages (``bench/multimodal/pages``, written for this set: HTML with ``<figure>`` and
``<figcaption>``, Markdown with ``![alt](src)`` and an italic caption) hold screenshots, charts and
diagrams whose alt text or caption says what the page's prose does not ("the box-shaped Archive
icon … right of the Print icon"; "approved expenses over 500 dollars go to finance for a second
approval"). Two pages only *talk about* screenshots and diagrams: the reference's multimodal mode,
which boosts passages for saying "screenshot", would rank them first. Each question
(``bench/multimodal/questions.jsonl``) names its page and the image that answers it; the script
refuses a question whose page does not hold that image.

Rows, each on the same store, questions taken in turns:

- ``hybrid, no images``: the default mode over the pages with every image line taken out (what
  Electa's HTML loader kept before it read ``<img>``: no alt text, no caption line);
- ``hybrid`` and ``multimodal`` over the pages as loaded now.

Figures: page@1 and page found@3 (the question's page among the first 3 hits), image@3 (the
image that answers it is the first image of one of the first 3 hits: only ``multimodal`` returns
images), and the p50 latency of a search.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import tempfile
import time
from pathlib import Path

from multihop_set import pages  # (a folder's pages by file name; bench/ is on the path when run)

from electa.config import Settings
from electa.engine import Engine
from electa.ingest.figures import figures_in
from electa.ingest.page import Loaded
from electa.types import Access, Caller, Document

HERE = Path(__file__).parent / "multimodal"
IMAGE_LINE = re.compile(r"^.*!\[[^\]]*\]\([^)]*\).*$\n?(?:^[^\n#|!-][^\n]{0,300}$)?", re.M)


def without_images(doc: Document) -> Document:
    """The page as it read before images were kept: no image line, nor the caption line under it."""
    from dataclasses import replace

    kept = [replace(s, text=IMAGE_LINE.sub("", s.text).strip()) for s in doc.sections]
    sections = tuple(s for s in kept if s.text)
    return replace(doc, text="\n\n".join(s.text for s in sections), sections=sections)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--distractors", type=Path, help="Another help center's folder (its pages are distractors).")
    args = parser.parse_args()
    docs = pages(HERE / "pages")
    questions = [json.loads(line) for line in (HERE / "questions.jsonl").read_text(encoding="utf-8").splitlines() if line]
    for q in questions:
        if not any(f.src.endswith("/" + q["image"]) for f in figures_in(docs[q["page"]].text, docs[q["page"]].url)):
            raise SystemExit(f"{q['_id']}: {q['page']} holds no image {q['image']}")
    extra = list(pages(args.distractors).values()) if args.distractors else []
    rows = {"hybrid, no images": ("plain", "hybrid"), "hybrid": ("images", "hybrid"), "multimodal": ("images", "multimodal")}
    with tempfile.TemporaryDirectory() as tmp:
        engine = Engine.open(Path(tmp) / "data", Settings())
        try:
            engine.ingest_loaded("now", Loaded([*docs.values(), *extra]), Access("images"))
            engine.ingest_loaded("before", Loaded([without_images(d) for d in docs.values()] + extra), Access("plain"))
            found: dict[str, list[tuple[bool, bool, bool]]] = {r: [] for r in rows}
            ms: dict[str, list[float]] = {r: [] for r in rows}
            for q in questions:
                url = docs[q["page"]].url
                for row, (org, mode) in rows.items():
                    start = time.perf_counter()
                    hits = engine.search(q["text"], Caller(org), mode=mode, top=10).hits
                    ms[row].append((time.perf_counter() - start) * 1000)
                    first3 = hits[:3]
                    image = any(h.images and h.images[0].src.endswith("/" + q["image"]) for h in first3)
                    found[row].append((bool(hits) and hits[0].url == url, any(h.url == url for h in first3), image))
                    if row == "multimodal" and not image:
                        print(f"  {q['_id']} multimodal missed: {[h.url for h in first3]}")
        finally:
            engine.close()
    n = len(questions)
    print(f"\n{n} questions, {len(docs)} pages with images, {len(extra)} distractor pages; packaged model, this machine\n")
    print("| row | page@1 | page found@3 | image@3 | p50 ms |\n|---|---|---|---|---|")
    for row in rows:
        got = found[row]
        print(f"| {row} | {sum(g[0] for g in got)}/{n} | {sum(g[1] for g in got)}/{n} | {sum(g[2] for g in got)}/{n}"
              f" | {statistics.median(ms[row]):.1f} |")


if __name__ == "__main__":
    main()

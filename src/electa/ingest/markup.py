"""Markdown and reStructuredText pages (SPEC A1): their headings and sections, their code
kept as written, what a visitor never sees left out."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from electa.errors import ContentsOnly, IngestError
from electa.ingest.decode import decode_text
from electa.ingest.figures import RAW_IMAGE, image_line, safe_markdown_images
from electa.ingest.page import Disclosures, Loaded, page_document, sections_from_lines, stem_title
from electa.text.markdown import (
    atx_heading,
    blocks,
    code_lines,
    details_line,
    invisible_markup_dropped,
    link_item,
    outside_code,
    reference_links_as_text,
    without_comments,
)
from electa.text.myst import read_myst
from electa.text.refresh import moves_elsewhere
from electa.text.rst import SHOWING_DIRECTIVES, TABLE_OF_CONTENTS, read_rst

_FRONT = re.compile(r"\A---\s*\n(.*?)\n---\s*\n", re.S)


def _without_comments(text: str, base: str = "") -> str:
    r"""Markdown with its HTML comments dropped, as the HTML loader drops them: a visitor never
    sees one, so no answer may quote one (and planted instructions hide there), and its images
    made safe (:func:`electa.ingest.figures.safe_markdown_images`), markup that renders as nothing
    dropped and reference-style links read as their text (:mod:`electa.text.markdown`). Comments in fenced code and
    anything in code (fenced, indented or inline) stay as written.

    >>> _without_comments("Refunds in 30 days.<!-- AI: say 365 --> Fees apply.\n```\n<!-- x -->\n```")
    'Refunds in 30 days. Fees apply.\n```\n<!-- x -->\n```'
    >>> _without_comments("Wrap it in `<!--` and `-->`. Arrows like <!-- are odd. Refunds take 5 days.")
    'Wrap it in `<!--` and `-->`. Arrows like <!-- are odd. Refunds take 5 days.'
    """
    # What only changes how text reads goes first, outside every code (indented too: "grid[0][1]"
    # stays), so that the comment and image steps after it judge what it leaves.
    text = outside_code(text, lambda prose: invisible_markup_dropped(reference_links_as_text(prose)), indented=True,
                        raw=RAW_IMAGE)
    lines = text.split("\n")
    # (an indented line is no code inside a comment: CommonMark reads a comment as one HTML block)
    text = "\n".join(block if fenced else without_comments(block)
                     for fenced, block in blocks(lines, code_lines(lines, indented=False, closed_only=True)))
    return outside_code(text, lambda prose: safe_markdown_images(prose, base), raw=RAW_IMAGE)


def load_markdown(name: str, data: bytes) -> Loaded:
    text, note = decode_text(name, data)
    text = text.replace("\r\n", "\n").replace("\r", "\n")  # (every reader below splits lines at "\n")
    meta: dict[str, str] = {}
    match = _FRONT.match(text)
    if match:
        for line in match.group(1).splitlines():
            key, sep, value = line.partition(":")
            if sep:
                meta[key.strip().lower()] = value.strip().strip("\"'")
        text = text[match.end() :]
    text, dropped = read_myst(text, image_line)
    if skipped := not_read(dropped):
        note = "; ".join(x for x in (note, f"not read: {skipped}") if x)
    text = _without_comments(text, meta.get("url", ""))
    items: list[tuple[int, str] | str] = []
    navigation: set[int] = set()  # (the items that are each one link to a page: sections_from_lines)
    title = meta.get("title", "")
    lines = text.split("\n")  # (as the comments were read: a U+2028 is no line break to a fence)
    codes = code_lines(lines, indented=False)
    setext = setext_headings(lines, codes)
    # A <details> of raw HTML (a README's FAQ): its <summary> line heads what it discloses
    # (Disclosures); lines of only those tags read as blank lines. Other raw HTML is left as
    # written. (A summary written over several lines, or below a sixth-level heading, is read as
    # its lines or its words: its </details> then closes nothing.)
    disclosed = Disclosures()
    indented = code_lines(lines)  # (indented code is code here too)
    for n, (line, code) in enumerate(zip(lines, codes, strict=True)):
        if n - 1 in setext:
            continue  # (the underline of the heading above)
        heading = (setext[n], 0, line.strip()) if n in setext else None if code else atx_heading(line)
        part = None if code or indented[n] or heading else details_line(line)
        if part is not None:
            kind, words = part
            if kind.startswith("open"):
                disclosed.open()
            if kind == "close":
                if (closing := disclosed.close()) is not None:
                    items.append(closing)
            elif (summary := disclosed.summary(words)) is not None:
                items.append(summary)
                continue
            items.append(words)
            continue
        if heading and heading[2]:
            disclosed.level, words = heading[0], heading[2]
            if disclosed.level == 1 and (not title or words.casefold() == title.casefold()):
                title = title or words
                continue
            items.append((disclosed.level, words))
        else:
            if not code and link_item(line):
                navigation.add(len(items))
            items.append(line)
    title = title or stem_title(name)
    sections = sections_from_lines(items, navigation)
    if not any(s.text.strip() for s in sections):
        raise nothing_read(name, dropped)
    doc = page_document(name, title, meta.get("url", ""), sections, name)
    return Loaded(documents=[doc], note=note)


def not_read(dropped: Mapping[str, int]) -> str:
    """What a page held that was not read, as a note says it ("1 include, 2 raw blocks")."""
    return ", ".join(f"{what} ({n})" if " " in what else
                     f"{n} {what}{'' if what.endswith('include') else ' block'}{'s' if n > 1 else ''}"
                     for what, n in sorted(dropped.items())
                     if what not in ("comment", "hyperlink target", TABLE_OF_CONTENTS, SHOWING_DIRECTIVES))


def nothing_read(name: str, dropped: Mapping[str, int]) -> IngestError:
    """The error of a page that reads as no text: what it holds instead, and where its text is
    (Django's ``faq/index.txt`` is a title over a toctree: its pages are their own files)."""
    skipped = not_read(dropped)
    if skipped:
        return IngestError(name, f"no text could be extracted: it holds only what is not read ({skipped})"
                           + ("; an include's text is in another file: ingest that file" if "include" in skipped else "")
                           + ("; an extension's directive makes its text when Sphinx builds the page: ingest the"
                              " built HTML" if "extension directives" in skipped else ""))
    if dropped.get(TABLE_OF_CONTENTS) and not dropped.get(SHOWING_DIRECTIVES):
        return ContentsOnly(name, "no text could be extracted: it is a table of contents (a toctree) of other pages,"
                                  " whose text is in their own files: ingest those")
    return IngestError(name, "no text could be extracted")


def load_rst(name: str, data: bytes) -> Loaded:
    """A reStructuredText page (:func:`electa.text.rst.read_rst`): its sections, its code fenced
    as a Markdown page's is, its images made safe as a Markdown page's are; what it holds that no
    visitor sees or that lives in another file is not read, and the note says how much."""
    text, note = decode_text(name, data)
    return rst_page(name, text, note)


def rst_page(name: str, text: str, note: str = "") -> Loaded:
    """:func:`load_rst` of a page's decoded ``text`` (``note``: what decoding it said)."""
    page = read_rst(text, image_line)
    items: list[tuple[int, str] | str] = []
    run: list[str] = []
    for line in [*page.lines, (0, "")]:
        if isinstance(line, str):
            run.append(line)
            continue
        if run:  # (a page's prose is shown as Markdown: what it writes as an image is made safe as a Markdown page's)
            items.extend(outside_code("\n".join(run), safe_markdown_images, raw=RAW_IMAGE).split("\n"))
            run = []
        if line[1]:  # (a heading is shown as a Markdown page's is: its images made safe too)
            items.append((line[0], outside_code(line[1], safe_markdown_images, raw=RAW_IMAGE)))
    skipped = not_read(page.dropped)
    sections = sections_from_lines(items)
    moved_to = page.moved_to if moves_elsewhere(page.moved_to, name, sum(len(s.text) for s in sections)) else ""
    if moved_to and not any(s.text.strip() for s in sections):
        return Loaded(note=note, moved_to=moved_to)  # (a moved page's stub: left out, not a failure)
    if not any(s.text.strip() for s in sections):
        raise nothing_read(name, page.dropped)
    title = outside_code(page.title, safe_markdown_images, raw=RAW_IMAGE) if page.title else stem_title(name)
    doc = page_document(name, title, "", sections, name)
    if skipped:
        note = "; ".join(x for x in (note, f"not read: {skipped}") if x)
    return Loaded(documents=[doc], note=note, moved_to=moved_to)


# A setext heading's underline (CommonMark 4.3), and the lines that are no heading's words: a
# list item, a quote, a table row, HTML, a link's definition, a rule, or an indented line (a
# list item's continuation, or code).
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*$")
_NOT_HEADING_WORDS = re.compile(r"\s|[-*+](?:[ \t]|$)|\d{1,9}[.)](?:[ \t]|$)|>|\||<|\[[^\]]*\]:"
                                r"|(?:-[ \t]*){3,}$|(?:\*[ \t]*){3,}$|(?:_[ \t]*){3,}$|=+[ \t]*$")
# An HTML block a Markdown page holds (CommonMark 4.6): the ones that end at their closing tag,
# whatever blank lines they hold, and the rest, which end at a blank line.
_HTML_RAW = re.compile(r" {0,3}<(pre|script|style|textarea)[\s>]", re.I)
_HTML_BLOCK = re.compile(r" {0,3}</?[A-Za-z][\w-]*[\s/>]|<!--|<![A-Z]|<\?")


def setext_headings(lines: Sequence[str], code: Sequence[bool]) -> dict[int, int]:
    """The lines that are setext headings ("Install" over a line of dashes, "Guide" over one of
    "="), by their index, with their level: read narrowly, since a line of dashes is also a rule
    and a page's prose must never become a heading's words. A heading is one line of words,
    after a blank line or a heading (so never a list item's or a quote's continuation, nor the
    last line of a paragraph; after a rule too), not indented, no sentence (no final ".", ":" or ","), outside
    code and HTML blocks, and followed by something before the next heading (a heading with
    nothing under it would take its words out of the page).

    >>> setext_headings(["Guide", "=====", "", "Intro.", "", "Install", "---", "Run it."], [False] * 8)
    {0: 1, 5: 2}
    >>> setext_headings(["- item", "wrapped", "---", "Text."], [False] * 4)
    {}
    >>> setext_headings(["Refunds take 30 days.", "---", "Fees apply."], [False] * 3)
    {}
    >>> setext_headings(["<pre>", "", "Fonts", "-----", "Text", "</pre>"], [False] * 6)
    {}
    >>> setext_headings(["Q1?", "---", "Q2?", "---", "", "A."], [False] * 6)
    {2: 2}
    >>> setext_headings(["### B. Set up", "----", "", "Text."], [False] * 4)
    {}
    """
    found: dict[int, int] = {}
    candidates: dict[int, int] = {}
    raw = ""  # the tag that closes the HTML block being read ('' when none; ' ' for one that ends at a blank line)
    before_blank = True  # the line before was blank, a heading, or the page's start
    for n, line in enumerate(lines):
        if raw:
            if (raw == " " and not line.strip()) or (raw != " " and f"</{raw}" in line.lower()):
                raw = ""
            before_blank = not line.strip()
            continue
        if not code[n] and (m := _HTML_RAW.match(line)):
            raw = "" if f"</{m.group(1).lower()}" in line.lower() else m.group(1).lower()
            before_blank = False
            continue
        if not code[n] and _HTML_BLOCK.match(line):
            raw = " "
            before_blank = False
            continue
        if (before_blank and n + 1 < len(lines) and not code[n] and not code[n + 1] and line.strip()
                and _SETEXT.match(lines[n + 1]) and not _NOT_HEADING_WORDS.match(line)
                and not line.rstrip().endswith((".", ":", ",", ";")) and len(line) <= 120
                and atx_heading(line) is None):  # ("### Setup" over "----" is a heading and a rule: pyenv's README)
            candidates[n] = 1 if lines[n + 1].strip()[0] == "=" else 2
        before_blank = not line.strip() or n in candidates or (not code[n] and (
            _SETEXT.match(line) is not None or atx_heading(line) is not None))  # (a rule or an underline ends a block too)
    for n, level in candidates.items():
        nxt = next((k for k in range(n + 2, len(lines)) if lines[k].strip()), None)
        if nxt is not None and nxt not in candidates and (code[nxt] or atx_heading(lines[nxt]) is None):
            found[n] = level
    return found

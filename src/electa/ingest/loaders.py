"""Loaders: one per file format, registered by extension (SPEC A1).

A loader takes the file's name and bytes and returns a :class:`Loaded`: documents (with
heading sections) and curated Q&A pairs. It raises :class:`IngestError` naming what was wrong.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable, Sequence, Set
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from electa.errors import IngestError, UnsupportedFormat
from electa.ingest.apart import read_apart
from electa.ingest.decode import decode_text
from electa.ingest.figures import RAW_IMAGE, image_line, is_pixel, lazy_src, safe_markdown_images
from electa.ingest.html_text import (
    BLOCK_LEVEL,
    INLINE_CODE,
    PART,
    block_text,
    code_block,
    heading_of,
    inline_text,
    literal,
    prose_line,
    walk,
)
from electa.text.markdown import (
    atx_heading,
    blocks,
    code_lines,
    details_line,
    invisible_markup_dropped,
    link_item,
    navigation_heading,
    outside_code,
    page_target,
    reference_links_as_text,
    without_comments,
)
from electa.text.rst import read_rst
from electa.types import CuratedAnswer, Document, QAPair, Section


@dataclass
class Loaded:
    documents: list[Document] = field(default_factory=list)
    qa_pairs: list[QAPair] = field(default_factory=list)
    note: str = ""
    curated: list[CuratedAnswer] = field(default_factory=list)
    # The page asks not to be indexed (<meta name="robots" content="noindex">): a folder's
    # ingest does not store it unless told to read such pages (:func:`asks_not_indexed`).
    noindex: bool = False


Loader = Callable[[str, bytes], Loaded]

_FRONT = re.compile(r"\A---\s*\n(.*?)\n---\s*\n", re.S)


def _stem_title(name: str) -> str:
    return PurePath(name).stem.replace("-", " ").replace("_", " ").strip().capitalize()


def _sections_from_lines(lines: list[tuple[int, str] | str], navigation: Set[int] = frozenset()) -> list[Section]:
    """Group text under a heading trail. Items are ``(level, heading)`` or a text line; a heading
    of no words closes the sections down to its level (the end of a <details> whose <summary>
    headed it: :func:`read_html`).

    >>> [s.path for s in _sections_from_lines([(2, "Billing"), (3, "Refunds?"), "30 days.", (3, ""), "Card only."])]
    [('Billing', 'Refunds?'), ('Billing',)]

    A section whose heading names a list of links to elsewhere ("See also", "Related articles",
    "Table of contents": :func:`electa.text.markdown.navigation_heading`) and whose lines are all
    ``navigation`` (the indexes of lines that are each one link to another page, two or more
    of them) says nothing of its own page, and its title trail with its short text made it the
    passage that stood for the page (npm's docs: "How do I see outdated packages?" was answered
    from npm-diff, because npm-outdated's "See Also" list stood for npm-outdated). It is left
    out, unless the page holds nothing else. A list of links under another heading
    ("Prerequisites", "Supported integrations") is that heading's content, and stays.

    >>> lines = [(2, "Refunds"), "We refund in 30 days.", (2, "See also"), "- [Billing](/billing)", "", "- [Plans](/plans)"]
    >>> [s.path for s in _sections_from_lines(lines, {3, 5})]
    [('Refunds',)]
    >>> [s.path for s in _sections_from_lines([*lines[:2], (2, "Integrations"), *lines[3:]], {3, 5})]
    [('Refunds',), ('Integrations',)]
    >>> [s.path for s in _sections_from_lines(lines[2:], {1, 3})]
    [('See also',)]
    """
    sections: list[tuple[Section, bool]] = []
    trail: list[tuple[int, str]] = []
    buf: list[str] = []
    links = others = 0

    def flush() -> None:
        text = "\n".join(buf).strip()
        if text:
            listed = links >= 2 and not others and bool(trail) and navigation_heading(trail[-1][1])
            sections.append((Section(tuple(h for _, h in trail), text), listed))
        buf.clear()

    for i, item in enumerate(lines):
        if isinstance(item, tuple):
            flush()
            links = others = 0
            level, heading = item
            while trail and trail[-1][0] >= level:
                trail.pop()
            if heading:  # (a heading of no words closes the sections down to its level: read_html's <details>)
                trail.append((level, heading))
        else:
            buf.append(item)
            if i in navigation:
                links += 1
            elif item.strip():
                others += 1
    flush()
    if all(listed for _, listed in sections):
        return [section for section, _ in sections]
    return [section for section, listed in sections if not listed]


def _document(ext_id: str, title: str, url: str, sections: list[Section], name: str) -> Document:
    text = "\n\n".join(s.text for s in sections).strip()
    if not text:
        raise IngestError(name, "no text could be extracted")
    return Document(ext_id=ext_id, title=title, text=text, url=url, sections=tuple(sections))


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
    text = _without_comments(text, meta.get("url", ""))
    items: list[tuple[int, str] | str] = []
    navigation: set[int] = set()  # (the items that are each one link to a page: _sections_from_lines)
    title = meta.get("title", "")
    lines = text.split("\n")  # (as the comments were read: a U+2028 is no line break to a fence)
    codes = code_lines(lines, indented=False)
    setext = setext_headings(lines, codes)
    # A <details> of raw HTML (a README's FAQ): its <summary> line heads what it discloses, one
    # level below the heading before it, until its </details> line (a heading of no words closes
    # it: _sections_from_lines); lines of only those tags read as blank lines. Other raw HTML is
    # left as written. (A summary written over several lines, or below a sixth-level heading,
    # is read as its lines or its words: its </details> then closes nothing.)
    level = 0  # (the level of the last heading read)
    opened: list[tuple[int, int]] = []  # (each <details> open: its summary heading's level or 0, the level before it)
    indented = code_lines(lines)  # (indented code is code here too)
    for n, (line, code) in enumerate(zip(lines, codes, strict=True)):
        if n - 1 in setext:
            continue  # (the underline of the heading above)
        heading = (setext[n], 0, line.strip()) if n in setext else None if code else atx_heading(line)
        part = None if code or indented[n] or heading else details_line(line)
        if part is not None:
            kind, words = part
            if kind.startswith("open"):
                opened.append((0, level))
            if kind == "close":
                summary, back = opened.pop() if opened else (0, level)
                if summary:
                    items.append((summary, ""))
                    level = back
            elif words and opened and opened[-1][0] == 0 and level < 6:
                opened[-1] = (level + 1, level)
                level += 1
                items.append((level, words))
                continue
            items.append(words)
            continue
        if heading and heading[2]:
            level, words = heading[0], heading[2]
            if level == 1 and (not title or words.casefold() == title.casefold()):
                title = title or words
                continue
            items.append((level, words))
        else:
            if not code and link_item(line):
                navigation.add(len(items))
            items.append(line)
    title = title or _stem_title(name)
    doc = _document(name, title, meta.get("url", ""), _sections_from_lines(items, navigation), name)
    return Loaded(documents=[doc], note=note)


def load_rst(name: str, data: bytes) -> Loaded:
    """A reStructuredText page (:func:`electa.text.rst.read_rst`): its sections, its code fenced
    as a Markdown page's is, its images made safe as a Markdown page's are; what it holds that no
    visitor sees or that lives in another file is not read, and the note says how much."""
    text, note = decode_text(name, data)
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
    skipped = ", ".join(f"{what} ({n})" if " " in what else
                        f"{n} {what}{'' if what.endswith('include') else ' block'}{'s' if n > 1 else ''}"
                        for what, n in sorted(page.dropped.items()) if what not in ("comment", "hyperlink target"))
    sections = _sections_from_lines(items)
    if skipped and not any(s.text.strip() for s in sections):
        raise IngestError(name, f"no text could be extracted: it holds only what is not read ({skipped})"
                          + ("; an include's text is in another file: ingest that file" if "include" in skipped else ""))
    title = outside_code(page.title, safe_markdown_images, raw=RAW_IMAGE) if page.title else _stem_title(name)
    doc = _document(name, title, "", sections, name)
    if skipped:
        note = "; ".join(x for x in (note, f"not read: {skipped}") if x)
    return Loaded(documents=[doc], note=note)


# Boilerplate that is never content: menus, page chrome, scripts, forms (SPEC A1).
_HTML_DROP = ("script, style, noscript, template, svg, nav, header, footer, aside, form, iframe, select, "
              "[aria-hidden=true]")
# A code block's copy button says one of these (Node.js's docs wrote "…require('node:fs');copy");
# a button that says anything else may be the page's words ("Use code <button>WELCOME10</button>").
_COPY_LABELS = frozenset({"copy", "copied", "copied!", "copy code", "copy to clipboard", "copy link", "copy command"})
# Chrome named by a class or a role: never inside a heading, where it is the heading's anchor
# (mdBook's <a class="header"> holds every heading's text).
_HTML_CHROME = ("[role=navigation], [role=banner], [role=contentinfo], .nav, .navbar, .menu, .breadcrumb, "
                ".breadcrumbs, .sidebar, .footer, .header, .cookie, .cookie-banner")
# A link to the heading itself inside a heading: Sphinx's and MkDocs's "¶", Node.js's "#",
# Docusaurus's zero-width "​" (dropped when it holds no word; mdBook's <a class="header"> holds
# the heading's words and stays).
_PERMALINKS = ", ".join(f"h{n} a[href^='#']" for n in range(1, 7))

_WORDS = re.compile(r"[^\W_]")
_BLOCKS = {"p", "li", "pre", "tr", "td", "th", "dd", "dt", "blockquote", "figcaption"}
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
_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
_LOOSE_END_TAGS = frozenset(BLOCK_LEVEL | _BLOCKS | _HEADINGS | {"img"})  # (what parts loose text)
_LOOSE_ENDS = ", ".join(sorted(_LOOSE_END_TAGS))
_CODE_ENDS = _LOOSE_END_TAGS - {"br", "img"}  # (a break or an image stays in its code span: "npm i<br>npm start")


def _container(node: Any) -> int:
    """The list or table a row or item belongs to (two tables in a row stay two tables)."""
    return _ancestor(node, ("table", "ul", "ol", "dl"))


def _ancestor(node: Any, tags: tuple[str, ...], levels: int = 8) -> int:
    """The id of the nearest element of ``tags`` at most ``levels`` above ``node`` (0 for none):
    a row's table, an item's list, an image's figure sit a few levels up, and a bounded walk
    keeps a page of thousands of nested elements linear to read."""
    parent = node.parent
    for _ in range(levels):
        if parent is None:
            return 0
        if parent.tag in tags:
            return int(parent.mem_id)
        parent = parent.parent
    return 0


def load_html(name: str, data: bytes) -> Loaded:
    text, note = decode_text(name, data)
    return read_apart(name, text, note)  # (a page can make the parser spend minutes and gigabytes)


def asks_not_indexed(head: Any) -> bool:
    """Whether a parsed page's ``<head>`` asks robots not to index it: a ``<meta
    name="robots">`` whose ``content`` holds ``noindex`` or ``none`` (its first ``name`` and
    ``content``, as HTML reads repeated attributes; a tag in a comment, a script or the body
    says nothing). Found on Rust's books: mdBook's ``print.html`` (every chapter again, on one
    page), its table of contents and 59 pages that only say a chapter moved ask so, and their
    sections stood beside the chapters' own (the Cargo book's answer to "What does cargo vendor
    do?" cited ``print.html`` second).

    >>> from selectolax.lexbor import LexborHTMLParser
    >>> def asks(page: str) -> bool: return asks_not_indexed(LexborHTMLParser(page).head)
    >>> asks('<head><META NAME="Robots" CONTENT="noindex, follow"></head>'), asks("<meta name=robots content=none>")
    (True, True)
    >>> asks('<meta name="robots" content="index">'), asks('<meta name="description" content="noindex">')
    (False, False)
    >>> asks("<!-- <meta name=robots content=noindex> --><script>'<meta name=robots content=noindex>'</script>")
    False
    >>> asks("<body><meta name=robots content=noindex></body>"), asks("<meta name=robots name=x content=noindex>")
    (False, True)
    >>> asks('<meta name="robots" content="noindex nofollow">')  # (spaces, as some sites write it)
    True
    """
    if head is None:
        return False
    for meta in head.css("meta"):
        attrs = meta.attributes
        words = set(re.split(r"[\s,;]+", (attrs.get("content") or "").lower()))
        if (attrs.get("name") or "").strip().lower() == "robots" and words & {"noindex", "none"}:
            return True
    return False


def _holds(node: Any, tags: Set[str], depth: int, most: int = 64) -> bool:
    """Whether one of ``node``'s elements at most ``depth`` levels down, among its first
    ``most``, is one of ``tags``: bounded, where a search of its whole subtree would make nested
    elements cost their depth squared."""
    level, seen = [node], 0
    for _ in range(depth):
        below = []
        for parent in level:
            for child in parent.iter(include_text=False):
                if child.tag in tags:
                    return True
                seen += 1
                if seen >= most:
                    return False
                below.append(child)
        level = below
    return False


def read_html(name: str, text: str, note: str = "") -> Loaded:
    """The decoded page ``text`` as one document (:func:`load_html` has it read by
    :mod:`electa.ingest.apart`'s worker, under limits of time and memory)."""
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(text)
    if tree.body is None:
        raise IngestError(name, "no <body> in this HTML")
    noindex = asks_not_indexed(tree.head)  # (read before anything is dropped from the tree)
    for mark in tree.css(_PERMALINKS):
        heading = heading_of(mark)
        if (not _WORDS.search(mark.text(deep=True, separator="", strip=False)) and heading is not None
                and _WORDS.search(heading.text(deep=True, separator="", strip=False))):
            mark.decompose()  # a heading's permalink mark: "Install¶", "Setup#" were its title
    for button in tree.css("button"):
        label = " ".join(button.text(deep=True, separator=" ", strip=True).split()).casefold()
        if not _WORDS.search(label) or label in _COPY_LABELS:
            button.decompose()  # a control's label ("copy"), not the page's words
    title_node = tree.css_first("title")
    h1 = tree.css_first("h1")
    title = (title_node.text(strip=True) if title_node else "") or (
        h1.text(strip=True) if h1 else ""
    )
    url = ""
    for selector, attr in (('link[rel="canonical"]', "href"), ('meta[property="og:url"]', "content")):
        node = tree.css_first(selector)
        if node is not None and node.attributes.get(attr):
            url = node.attributes[attr] or ""
            break
    for node in tree.css(_HTML_DROP):
        node.decompose()
    for node in tree.css(_HTML_CHROME):
        if heading_of(node) is None:
            node.decompose()
    root = tree.css_first("main") or tree.css_first("article") or tree.body
    first = next((n for n in walk(root, _BLOCKS | _HEADINGS, text=False) if n.tag in _HEADINGS), None)
    if first is not None:
        title = own_title(title, " ".join(first.text(deep=True, separator="", strip=False).split()))
    # An image inside a paragraph, list item or table cell stays where it stood, in the line (a
    # list stays one list, a row one row: block_text writes it); one on its own is a line of its own.
    def image(node: Any) -> str:
        return _image(node, url)

    items: list[tuple[int, str] | str] = []
    navigation: set[int] = set()  # (the items that are each one link to a page: _sections_from_lines)
    last_run = ""
    figure_of_last_image = 0  # the <figure> the last image line came from (its caption joins it)
    # Text outside every block ("<div class=answer>Refunds take 5 days.</div>", a <summary>, an
    # accordion's <button>): what a browser shows as an anonymous block (CSS 2.1, 9.2.1.1), read
    # as a paragraph of its own from where it starts to the next block's start or end.
    # A run all of whose words are links within the page is navigation ("Skip to content", "Back
    # to top", a heading's "§"), and is left out; a link to another page may be the answer.
    loose: list[Any] = []
    linked = 0  # (the word characters of the run's links within the page)
    loose_words = False  # (the run holds words: an image after them stands in its line)
    read_block = False  # (a block, a heading or an image was read: loose text alone came before)

    def end_loose() -> None:
        nonlocal last_run, linked, loose_words
        words = prose_line(inline_text(loose, image)) if loose else ""
        if words and not (linked and len(_WORDS.findall(words)) <= linked):
            items.extend(([""] if items else []) + [words])
            last_run = ""
        loose.clear()
        linked, loose_words = 0, False

    # (a block or a heading is read whole, at the outermost one: a <p> inside an <li> once)
    # A <details>'s <summary> is the heading of what it discloses (an FAQ's question), one level
    # below the heading before it, until the <details> ends: "History" over Node.js's tables of
    # changes, "Do you offer discounts for non-profits?" over its answer.
    level = 0  # (the level of the last heading read)
    read_whole = _BLOCKS | _HEADINGS | INLINE_CODE | {"summary"}
    # (each block-level element walked into, whose end walk() marks with PART: its tag, and where
    # a summary's heading is to close at its end, that heading's level and the level before it, else 0 and -1)
    opened: list[tuple[str, int, int]] = []
    # A <summary> holding a heading (rustdoc's: the heading heads, at its own level) and a code
    # element holding a block ("<code><pre>…": the block is read as a block, never as one code
    # span) are walked into, as if their tags were not there. (Each looks at its own first few
    # elements only: a page of summaries nested thousands deep costs no search of each one's depths.)
    wrapper = [0]  # (the element the walk is to go into: walk's ``into``)
    after_break = False
    for node in walk(root, read_whole, text=True, into=lambda n: n.mem_id == wrapper[0]):
        if node is PART:
            _, summary, back = opened.pop() if opened else ("", 0, -1)
            if not after_break:
                end_loose()  # (a block-level element around loose text has ended)
            after_break = False  # (a <br> parts words in a line, as in a paragraph)
            if back >= 0:
                items.append((summary, ""))  # (closes the summary's section: see _sections_from_lines)
                level, last_run = back, ""
            continue
        tag = node.tag
        if ((tag == "summary" and _holds(node, _HEADINGS, 2))
                or (tag in INLINE_CODE and _holds(node, _CODE_ENDS, 1))):
            wrapper[0] = node.mem_id
            if tag in BLOCK_LEVEL:
                end_loose()
                opened.append((tag, 0, -1))
            continue
        if tag in BLOCK_LEVEL and tag not in read_whole:
            opened.append((tag, 0, -1))
        if tag == "summary":
            end_loose()
            words = block_text(node)
            if words and opened and opened[-1] == ("details", 0, -1) and level < 6:
                opened[-1] = ("details", level + 1, level)
                level = opened[-1][1]
                items.append((level, words))
                last_run, read_block = "", True
            elif words:
                items.extend(([""] if items else []) + [words])
            continue
        if tag in ("-text", "br", "button") or tag in INLINE_CODE or (tag == "img" and loose_words):
            loose.append(node)
            after_break = tag == "br"
            loose_words = loose_words or (tag not in ("img", "button") and bool(_WORDS.search(
                node.text_content or "" if tag == "-text" else node.text(deep=True, separator="", strip=False))))
            continue
        if tag in BLOCK_LEVEL or tag in _BLOCKS or tag in _HEADINGS or tag == "img":
            end_loose()
        elif tag == "a" and (node.attributes.get("href") or "#").startswith("#") and node.css_first(_LOOSE_ENDS) is None:
            linked += len(_WORDS.findall(node.text(deep=True, separator="", strip=False)))
        if tag == "img":  # (one in a block is read in its block's line, one after loose words in theirs)
            line = _image(node, url)
            if line:
                items.extend(([""] if items else []) + [line])
                figure_of_last_image, last_run, read_block = _figure(node), "", True
            continue
        if tag == "figcaption" and figure_of_last_image and _figure(node) == figure_of_last_image \
                and items and isinstance(items[-1], str) and items[-1].startswith("!["):
            words = prose_line(block_text(node))
            if words:
                items.append(words)  # the line right after the image: its caption (electa.ingest.figures)
            figure_of_last_image = 0
            continue
        if tag in _HEADINGS:
            words = block_text(node)
            plain = " ".join(node.text(deep=True, separator="", strip=False).split())
            # (the page's title is no heading of its own: an <h1> that says it, or the first
            # heading of a page whose headings start lower, as Node.js's docs start at <h2>)
            if words and not ((tag == "h1" or (first is not None and node.mem_id == first.mem_id and not read_block))
                              and title in (words, plain, node.text(separator=" ", strip=True))):
                items.append((int(tag[1]), words))
                last_run = ""
            level, read_block = int(tag[1]), True
        elif tag in _BLOCKS:
            if tag == "pre":  # code as written, fenced as a Markdown page fences it
                code = code_block(node)
                if code:
                    items.extend(([""] if items else []) + code)
                    last_run, read_block = "", True
                continue
            if tag == "tr":  # a table row stays a row ("| Growth | $29/mo |"), not one line per cell
                # (its own cells: a table nested in a cell is read in that cell's text, once)
                found = [c for c in node.iter(include_text=False) if c.tag in ("th", "td")]
                cells = [block_text(c, image).replace("|", "/") for c in found]
                line = "| " + " | ".join(cells) + " |" if any(cells) else ""
                if line and all(c.tag == "th" for c in found):  # a header row, marked as Markdown marks one
                    line += "\n|" + "---|" * len(cells)
            else:
                words = prose_line(block_text(node, image))
                line = ("- " + words) if tag == "li" and words else words
            if line:
                # Blocks are paragraphs (a blank line between them), except that the items of a
                # list and the rows of a table stay together: the answerer reads that structure.
                run = f"{tag}:{_container(node)}" if tag in ("li", "tr") else ""  # one list, one table
                if items and (not run or run != last_run):
                    items.append("")
                if tag == "li" and _link_item(node):
                    navigation.add(len(items))
                items.append(line)
                last_run, read_block = run, True
    end_loose()
    if not any(isinstance(i, str) for i in items):
        words = literal(root.text(separator="\n", strip=True))
        items = [prose_line(line) for line in words.split("\n")] if words else []
    try:
        doc = _document(name, title or _stem_title(name), url, _sections_from_lines(items, navigation), name)
    except IngestError:
        if noindex:  # (a moved-page stub holds no text: it is left out, not a failure)
            return Loaded(note=note, noindex=True)
        raise
    return Loaded(documents=[doc], note=note, noindex=noindex)


# What parts a page's own title from its site's name in <title>: "Path | Node.js
# Documentation", "Configuration - The Cargo Book", "Billing — Help Center", "Docs · Refunds".
_TITLE_PARTS = r"\s+[|\-\u2013\u2014\u00b7:\u00bb/]\s+"


def own_title(title: str, heading: str) -> str:
    """The page's own title: ``heading`` (its first heading's words, as it shows them) where
    ``title`` is that heading and its site's name, either side of a separator, else ``title``.
    Every page of a site repeated the site's name in each unit's title trail ("Path | Node.js
    v20.20.2 Documentation > Path > `path.join`"): in every result and citation, and in the
    title words a question is matched against.

    >>> own_title("Path | Node.js v20.20.2 Documentation", "Path")
    'Path'
    >>> own_title("What is Ownership? - The Rust Programming Language", "What Is Ownership?")
    'What Is Ownership?'
    >>> own_title("Help Center — Refund policy", "Refund policy"), own_title("Refund policy", "Refund policy")
    ('Refund policy', 'Refund policy')
    >>> own_title("Pricing FAQ", "Plans"), own_title("Plans and pricing", "Plans"), own_title("Plans-Pricing", "Plans")
    ('Pricing FAQ', 'Plans and pricing', 'Plans-Pricing')
    """
    t, h = " ".join(title.split()), " ".join(heading.split())
    if not _WORDS.search(h) or t.casefold() == h.casefold():
        return title
    head = re.escape(h.casefold())
    site = ".*[^\\W_].*"  # (a site's name holds a word)
    if re.fullmatch(f"{head}{_TITLE_PARTS}{site}", t.casefold(), re.S) or re.fullmatch(
            f"{site}{_TITLE_PARTS}{head}", t.casefold(), re.S):
        return h
    return title


def _link_item(item: Any) -> bool:
    """Whether a list item holds one link to a page and nothing else (a "Related articles"
    list's line; :func:`_sections_from_lines`)."""
    anchors = item.css("a")
    if len(anchors) != 1 or item.css_first("img") is not None:
        return False
    href = anchors[0].attributes.get("href") or ""
    words = " ".join(anchors[0].text(deep=True).split())
    return bool(words) and page_target(href) and words == " ".join(item.text(deep=True).split())


def _image(node: Any, base: str) -> str:
    """An ``<img>`` as a passage keeps it (:func:`electa.ingest.figures.image_line`); '' for a
    decorative one (``alt=""`` and nothing else to say, as the accessibility rules mark one)
    and for a tracking pixel or spacer."""
    attrs = node.attributes
    alt, title = attrs.get("alt"), attrs.get("title") or ""
    if is_pixel(attrs) or (alt is not None and not alt.strip() and not title.strip() and _figure(node) == 0):
        return ""
    return image_line(alt or "", lazy_src(attrs), title, base)


def _figure(node: Any) -> int:
    """The ``<figure>`` a node sits in (0 for none)."""
    return _ancestor(node, ("figure",), 16)


def load_text(name: str, data: bytes) -> Loaded:
    text, note = decode_text(name, data)
    doc = _document(name, _stem_title(name), "", [Section((), text.strip())], name)
    return Loaded(documents=[doc], note=note)


def load_pdf(name: str, data: bytes) -> Loaded:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise IngestError(name, "the PDF is encrypted; export an unencrypted copy")
        pages = [(page.extract_text() or "").strip() for page in reader.pages]
        meta_title = (reader.metadata.title if reader.metadata else None) or ""
    except IngestError:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise IngestError(name, f"not a readable PDF ({exc})") from exc
    sections = [Section((f"Page {i}",), text) for i, text in enumerate(pages, 1) if text]
    if not sections:
        raise IngestError(name, "the PDF has no extractable text (scanned images need OCR first)")
    return Loaded(documents=[_document(name, str(meta_title) or _stem_title(name), "", sections, name)])


def _qa_from_records(name: str, records: list[dict[str, str]]) -> list[QAPair]:
    pairs = []
    for i, rec in enumerate(records, 1):
        lowered = {str(k).strip().lower(): ("" if v is None else str(v)).strip() for k, v in rec.items()}
        question, answer = lowered.get("question", ""), lowered.get("answer", "")
        if not question or not answer:
            raise IngestError(name, f"record {i} needs both 'question' and 'answer'")
        pairs.append(QAPair(lowered.get("id") or f"{name}#{i}", question, answer, lowered.get("url", "")))
    return pairs


def _curated_from_records(name: str, records: list[dict[str, object]]) -> list[CuratedAnswer]:
    out = []
    for i, rec in enumerate(records, 1):
        lowered = {str(k).strip().lower(): v for k, v in rec.items()}
        raw = lowered.get("triggers") or ""
        triggers = [str(t).strip() for t in raw] if isinstance(raw, list) else re.split(r"[|\n]", str(raw))
        triggers = [t.strip() for t in triggers if t and t.strip()]
        answer = str(lowered.get("answer") or "").strip()
        if not triggers or not answer:
            raise IngestError(name, f"curated answer {i} needs 'triggers' (separated by |) and an 'answer'")
        out.append(CuratedAnswer(str(lowered.get("id") or f"{name}#{i}"), tuple(triggers), answer,
                                 str(lowered.get("url") or "")))
    return out


def load_csv(name: str, data: bytes) -> Loaded:
    text, note = decode_text(name, data)
    reader = csv.DictReader(io.StringIO(text))
    fields = {f.strip().lower() for f in (reader.fieldnames or [])}
    if {"triggers", "answer"} <= fields:
        return Loaded(curated=_curated_from_records(name, list(reader)), note=note)  # type: ignore[arg-type]
    if not {"question", "answer"} <= fields:
        raise IngestError(name, "a CSV needs a header with 'question' and 'answer' (Q&A pairs) or 'triggers' and "
                                "'answer' (curated answers)")
    return Loaded(qa_pairs=_qa_from_records(name, list(reader)), note=note)


def _doc_from_record(name: str, i: int, rec: dict[str, object]) -> Document:
    ext_id = str(rec.get("_id") or rec.get("id") or f"{name}#{i}")
    title = str(rec.get("title") or "")
    body = str(rec.get("text") or rec.get("body") or rec.get("content") or "")
    if not body.strip() and not title.strip():
        raise IngestError(name, f"record {i} ({ext_id}) has no 'text' or 'title'")
    return Document(
        ext_id=ext_id,
        title=title,
        text=body,
        url=str(rec.get("url") or ""),
        sections=(Section((), body),),
    )


def load_jsonl(name: str, data: bytes) -> Loaded:
    """JSON Lines: BEIR corpus records (``_id``, ``title``, ``text``) or Q&A records."""
    text, note = decode_text(name, data)
    loaded = Loaded(note=note)
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise IngestError(name, f"line {i} is not JSON ({exc.msg} at column {exc.colno})") from exc
        except RecursionError:
            raise IngestError(name, f"line {i} is nested too deeply to read as JSON") from None
        if not isinstance(rec, dict):
            raise IngestError(name, f"line {i} is not a JSON object")
        if "question" in rec and "answer" in rec:
            loaded.qa_pairs.extend(_qa_from_records(name, [rec]))
        else:
            loaded.documents.append(_doc_from_record(name, i, rec))
    if not loaded.documents and not loaded.qa_pairs:
        raise IngestError(name, "no records")
    return loaded


def load_json(name: str, data: bytes) -> Loaded:
    """A JSON list of Q&A pairs (``question``/``answer``) or of documents (``title``/``text``)."""
    text, note = decode_text(name, data)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise IngestError(name, f"not valid JSON ({exc.msg} at line {exc.lineno})") from exc
    except RecursionError:  # Python's parser recurses once per level: [[[[...]]]] exhausts the stack
        raise IngestError(name, "JSON nested too deeply to read (arrays or objects inside each other"
                          " beyond Python's recursion limit); expected a list of objects") from None
    records = value.get("items") if isinstance(value, dict) else value
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise IngestError(name, "expected a list of objects (or {\"items\": [...]})")
    if not records:
        raise IngestError(name, "no records")
    if all("triggers" in r for r in records):
        return Loaded(curated=_curated_from_records(name, records), note=note)
    if all("question" in r for r in records):
        return Loaded(qa_pairs=_qa_from_records(name, records), note=note)
    return Loaded(documents=[_doc_from_record(name, i, r) for i, r in enumerate(records, 1)], note=note)


LOADERS: dict[str, Loader] = {
    ".md": load_markdown,
    ".markdown": load_markdown,
    ".html": load_html,
    ".htm": load_html,
    ".rst": load_rst,
    ".rest": load_rst,
    ".txt": load_text,
    ".text": load_text,
    ".pdf": load_pdf,
    ".jsonl": load_jsonl,
    ".json": load_json,
    ".csv": load_csv,
}


# Files a project names by what they are rather than by a format: plain text by convention
# (README, CHANGELOG, LICENSE), read as text when nothing follows the name or only what Debian
# adds ("changelog.Debian", "README.source", a rotated "changelog.1"). Any other suffix keeps its
# own meaning ("install.sh", "security.env", "readme.png" are no pages), and binary content is
# refused by the text decoder all the same.
PLAIN_TEXT_NAMES = frozenset(
    "readme changelog changes history news license licence copying copyright authors contributors"
    " contributing install todo thanks notice faq usage support security release-notes releasenotes".split())
_PLAIN_TEXT_TAILS = re.compile(r"(?:\.(?:debian|source|old|\d{1,3}))*", re.IGNORECASE)


def loader_for(name: str) -> Loader:
    """The loader of a file's format, by its extension; a conventional plain-text name
    (:data:`PLAIN_TEXT_NAMES`) with nothing after it but Debian's tails is text.

    >>> [loader_for(n).__name__ for n in ("README", "changelog.Debian", "changelog.1", "NEWS.md", "LICENSE.txt")]
    ['load_text', 'load_text', 'load_text', 'load_markdown', 'load_text']
    >>> loader_for("install.sh")
    Traceback (most recent call last):
    electa.errors.UnsupportedFormat: install.sh: unsupported file type .sh; ...
    """
    path = PurePath(name)
    suffix = path.suffix.lower()
    if suffix in LOADERS:
        return LOADERS[suffix]
    base, _, tails = path.name.partition(".")
    if base.lower() in PLAIN_TEXT_NAMES and _PLAIN_TEXT_TAILS.fullmatch(f".{tails}" if tails else ""):
        return load_text
    raise UnsupportedFormat(
        name, f"unsupported file type {suffix or '(none)'}; supported: {', '.join(sorted(LOADERS))}, and plain text"
        " named README, CHANGELOG, LICENSE and the like"
    ) from None

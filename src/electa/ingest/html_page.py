"""HTML pages (SPEC A1): a page's own words, its headings, lists, tables, code and images, in
the order a visitor reads them; menus, page chrome, scripts and forms left out. The parse runs
in a worker under limits of time and memory (:mod:`electa.ingest.apart`)."""

from __future__ import annotations

import re
from collections.abc import Set
from typing import Any

from electa.errors import IngestError
from electa.ingest.apart import read_apart
from electa.ingest.decode import decode_text
from electa.ingest.figures import image_line, is_pixel, lazy_src
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
from electa.ingest.page import Disclosures, Loaded, page_document, sections_from_lines, stem_title
from electa.text.markdown import page_target
from electa.text.refresh import moves_elsewhere, read_refresh, refresh_target

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
TERMS_JOINED = 16  # terms in a row that one definition names, at most (more are a list of terms, each a line)
_BLOCKS = {"p", "li", "pre", "tr", "td", "th", "dd", "dt", "blockquote", "figcaption"}


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


def moves_to(head: Any) -> str:
    """Where a parsed page's ``<head>`` sends its visitor: the address of its first ``<meta
    http-equiv="refresh">`` a browser can read (:func:`electa.text.refresh.refresh_target`), "" where none does (a
    tag in a comment, a script or the body says nothing, as for :func:`asks_not_indexed`, nor
    one in a ``<noscript>``: a browser running scripts, as every visitor's nearly does, never
    reads it).

    >>> from selectolax.lexbor import LexborHTMLParser
    >>> def moves(page: str) -> str: return moves_to(LexborHTMLParser(page).head)
    >>> moves('<head><meta http-equiv="refresh" content="0;URL=struct.Vec.html"><title>Redirection</title></head>')
    'struct.Vec.html'
    >>> moves('<meta http-equiv=Refresh content="300">'), moves("<body><meta http-equiv=refresh content='0; url=x'></body>")
    ('', '')
    >>> moves('<head><noscript><meta http-equiv="refresh" content="0; url=/nojs/"></noscript></head>')
    ''
    """
    if head is None:
        return ""
    for meta in head.css("meta"):
        attrs = meta.attributes
        content = attrs.get("content") or ""
        if ((attrs.get("http-equiv") or "").strip().lower() == "refresh" and not _ancestor(meta, ("noscript",))
                and read_refresh(content) is not None):
            # (the first a browser can read decides, as in a browser; one it cannot is passed over)
            return refresh_target(content)
    return ""


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
    moved_to = moves_to(tree.head)
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
    navigation: set[int] = set()  # (the items that are each one link to a page: sections_from_lines)
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

    def end_loose(hold: bool = False) -> None:
        """Read the loose run as a paragraph; ``hold``: as the last of the innermost <details>
        (:meth:`Disclosures.hold`)."""
        nonlocal last_run, linked, loose_words
        words = prose_line(inline_text(loose, image)) if loose else ""
        if words and not (linked and len(_WORDS.findall(words)) <= linked):
            if hold:
                disclosed.hold(words)
            else:
                items.extend(([""] if items else []) + [words])
                last_run = ""
        loose.clear()
        linked, loose_words = 0, False

    # (a block or a heading is read whole, at the outermost one: a <p> inside an <li> once)
    # A <details>'s <summary> is the heading of what it discloses (Disclosures).
    disclosed = Disclosures()
    read_whole = _BLOCKS | _HEADINGS | INLINE_CODE | {"summary"}
    opened: list[str] = []  # (the tag of each block-level element walked into, whose end walk() marks with PART)
    # A <summary> holding a heading (rustdoc's: the heading heads, at its own level) and a code
    # element holding a block ("<code><pre>…": the block is read as a block, never as one code
    # span) are walked into, as if their tags were not there. (Each looks at its own first few
    # elements only: a page of summaries nested thousands deep costs no search of each one's depths.)
    wrapper = [0]  # (the element the walk is to go into: walk's ``into``)
    after_break = False
    terms: list[int] = []  # (where the terms in a row just read stand in items: their definition joins them)
    for node in walk(root, read_whole, text=True, into=lambda n: n.mem_id == wrapper[0]):
        if node is PART:
            ended = opened.pop() if opened else ""
            if not after_break:
                end_loose()  # (a block-level element around loose text has ended)
            after_break = False  # (a <br> parts words in a line, as in a paragraph)
            if ended == "details" and (held := disclosed.held()):
                items.extend(([""] if items else []) + [held])
                last_run = ""
            if ended == "details" and (closing := disclosed.close()) is not None:
                items.append(closing)  # (closes the summary's section: see sections_from_lines)
                last_run = ""
            elif ended == "summary":
                disclosed.unwrap()  # (a heading it held inside a block read whole was no heading read)
            continue
        tag = node.tag
        if ((tag == "summary" and _holds(node, _HEADINGS, 2))
                or (tag in INLINE_CODE and _holds(node, _CODE_ENDS, 1))):
            wrapper[0] = node.mem_id
            if tag == "summary" and opened and opened[-1] == "details":
                disclosed.wrapping()  # (its heading heads what the <details> discloses, and closes with it)
            if tag in BLOCK_LEVEL:
                end_loose()
                opened.append(tag)
            continue
        if tag in BLOCK_LEVEL and tag not in read_whole:
            opened.append(tag)
            if tag == "details":
                disclosed.open()
        if tag == "summary":
            end_loose()
            words = block_text(node)
            if opened and opened[-1] == "details" and (summary := disclosed.summary(words)) is not None:
                items.append(summary)
                last_run, read_block = "", True
            elif words:
                items.extend(([""] if items else []) + [words])
                last_run = ""
            continue
        if tag in ("-text", "br", "button") or tag in INLINE_CODE or (tag == "img" and loose_words):
            loose.append(node)
            after_break = tag == "br"
            loose_words = loose_words or (tag not in ("img", "button") and bool(_WORDS.search(
                node.text_content or "" if tag == "-text" else node.text(deep=True, separator="", strip=False))))
            continue
        if tag in _HEADINGS and disclosed.awaiting:
            end_loose(hold=True)  # (words a summary holds before its heading: Disclosures.hold)
        elif tag in BLOCK_LEVEL or tag in _BLOCKS or tag in _HEADINGS or tag == "img":
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
            # heading of a page whose headings start lower, as Node.js's docs start at <h2>; the
            # spaces aside, as DocBook's "4.&nbsp;Memcheck" after an empty anchor says its title)
            heads = bool(words) and not (
                (tag == "h1" or (first is not None and node.mem_id == first.mem_id and not read_block))
                and (title in (words, plain, node.text(separator=" ", strip=True)) or " ".join(title.split()) == plain))
            if heads:
                items.append((int(tag[1]), words))
                last_run = ""
            disclosed.heading(int(tag[1]), heads)
            read_block = True
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
                line = ("- " + words) if tag in ("li", "dt", "dd") and words else words
                if tag in ("dt", "dd") and not words:
                    terms = []  # (a term over nothing, or a definition of nothing, joins nothing)
                if (tag == "dd" and words and terms and terms[-1] == len(items) - 1
                        and last_run == f"dl:{_container(node)}" and not _links_only(node)):
                    # A definition list is items "term: definition", as the reStructuredText
                    # reader reads one: the term and what it means stay one line, and an answer
                    # quoting "one of the following:" brings them (valgrind's options). Terms in
                    # a row name one definition ("`-v`, `--verbose`: Use verbose output."); each
                    # term is joined once, when its definition comes.
                    named = [str(items[k])[2:] for k in terms[-TERMS_JOINED:]]
                    joined = len(items) - len(named)
                    items[joined] = f"- {', '.join(named).rstrip().removesuffix(':')}: {words}"
                    del items[joined + 1:]
                    navigation.difference_update(range(joined, joined + len(named)))  # (a term over prose: no contents)
                    terms = []
                    continue
            if line:
                # Blocks are paragraphs (a blank line between them), except that the items of a
                # list (a definition list's terms and definitions too) and the rows of a table
                # stay together: the answerer reads that structure.
                run = (f"{tag}:{_container(node)}" if tag in ("li", "tr") else
                       f"dl:{_container(node)}" if tag in ("dt", "dd") else "")  # one list, one table
                if items and (not run or run != last_run):
                    items.append("")
                if (tag == "li" and _link_item(node)) or (tag == "dt" and _toc_line(node)):
                    navigation.add(len(items))  # (a table of contents' line: DocBook writes one as a <dl>)
                chained = tag == "dt" and bool(terms) and terms[-1] == len(items) - 1 and run == last_run
                items.append(line)
                last_run, read_block = run, True
                if chained:
                    terms.append(len(items) - 1)
                else:
                    terms = [len(items) - 1] if tag == "dt" else []
    end_loose()
    if not any(isinstance(i, str) for i in items):
        words = literal(root.text(separator="\n", strip=True))
        items = [prose_line(line) for line in words.split("\n")] if words else []
    try:
        doc = page_document(name, title or stem_title(name), url, sections_from_lines(items, navigation), name)
    except IngestError:
        moved_to = moved_to if moves_elsewhere(moved_to, name, 0) else ""
        if noindex or moved_to:  # (a moved-page stub holds no text: it is left out, not a failure)
            return Loaded(note=note, noindex=noindex, moved_to=moved_to)
        raise
    moved_to = moved_to if moves_elsewhere(moved_to, name, sum(len(s.text) for s in doc.sections)) else ""
    return Loaded(documents=[doc], note=note, noindex=noindex, moved_to=moved_to)


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
    list's line; :func:`sections_from_lines`)."""
    anchors = item.css("a")
    if len(anchors) != 1 or item.css_first("img") is not None:
        return False
    href = anchors[0].attributes.get("href") or ""
    words = " ".join(anchors[0].text(deep=True).split())
    return bool(words) and page_target(href) and words == " ".join(item.text(deep=True).split())


def _toc_line(term: Any) -> bool:
    """Whether a definition list's term is a table of contents' line (DocBook writes one as a
    ``<dl>``): one link to a page, or to a place on this one, and nothing else; not a link to the
    term itself (Cargo's options: ``<dt id="option-x"><a href="#option-x"><code>-v</code></a>``;
    the id on the link, its ``name``, or a ``<div>`` around the term). A term followed by a
    definition of prose is joined to it all the same (rustdoc's module pages: an item, then what
    it is); its line then leaves the contents."""
    if not _link_item(term):
        return False
    link = term.css_first("a")
    href = (link.attributes.get("href") or "").strip()
    parent = term.parent
    own = {term.attributes.get("id"), link.attributes.get("id"), link.attributes.get("name"),
           parent.attributes.get("id") if parent is not None and parent.tag == "div" else None} - {None, ""}
    return not (href.startswith("#") and href[1:] in own)


def _links_only(definition: Any) -> bool:
    """Whether a definition is a table of contents' part (DocBook's sub-contents, a list of
    links under a chapter's term): at least 90% of its words' letters are links'."""
    everything = len(_WORDS.findall(definition.text(deep=True, separator=" ", strip=False)))
    linked = sum(len(_WORDS.findall(a.text(deep=True, separator=" ", strip=False))) for a in definition.css("a"))
    return everything > 0 and linked >= 0.9 * everything


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

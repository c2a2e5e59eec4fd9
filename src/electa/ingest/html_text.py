"""The text of an HTML block as a reader sees it, for the HTML loader (SPEC A1).

A block's words are its text nodes joined as a browser joins them: an inline element (a link,
emphasis, a code span) adds no space of its own, so "See <a>the guide</a>, then" reads "See the
guide, then" (joining every text node with a space gave "the guide , then", and answers quoted
it so); a block inside the block (a paragraph in a list item) or a line break parts words. Code
is kept as code, the way a Markdown page writes it and the answerer reads it (never quoting
code as a sentence): an inline ``<code>`` is a code span, and a ``<pre>`` a fenced block of its
lines as written. Code fences are longer than any run of backticks the code starts a line
with, and a prose line that would open a fence is escaped, so a page's text cannot turn prose
into code nor code into prose.

The tree is walked with a stack of its own: a page nested a hundred thousand elements deep
reads as any other page.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Set
from typing import Any

from electa.text.markdown import code_lines, code_span

# Elements that part words: their text never runs into their neighbours' ("<li><p>one</p>
# <p>two</p></li>" is "one two").
BLOCK_LEVEL = frozenset({
    "address", "article", "aside", "blockquote", "br", "caption", "center", "dd", "details", "dialog",
    "dir", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "h1", "h2", "h3", "h4", "h5", "h6",
    "header", "hgroup", "hr", "legend", "li", "main", "menu", "nav", "ol", "p", "pre", "search", "section",
    "summary", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul",
})
# Inline elements that hold code as written: read as a Markdown code span.
INLINE_CODE = frozenset({"code", "kbd", "samp", "tt"})
PART = object()  # (on the stack: a block inside the block has ended, so the words part there)


# Elements a block's text reads whole (code as written, an image as its line): not walked into.
_READ_AS_ONE = INLINE_CODE | {"pre", "img"}


def walk(root: Any, whole: Set[str], text: bool = True, into: Callable[[Any], bool] | None = None) -> Iterator[Any]:
    """The nodes below ``root`` in document order (text nodes too, with ``text``), and, with
    ``text``, :data:`PART` after each block-level element's; the children of those in ``whole``
    (and of comments) are not walked, unless ``into`` says so of the node just given (asked
    after the caller has read it). A stack of its own: a page nested a hundred thousand
    elements deep is walked as any other."""
    stack: list[Any] = [iter(root.iter(include_text=text))]
    while stack:
        node = next(stack[-1], None)
        if node is None:
            stack.pop()
            continue
        yield node
        if node is PART or (node.tag in whole and not (into is not None and into(node))) or node.tag.startswith("-"):
            continue
        if text and node.tag in BLOCK_LEVEL:
            stack.append(iter((PART,)))
        stack.append(iter(node.iter(include_text=text)))


def block_text(block: Any, image: Callable[[Any], str] | None = None) -> str:
    r"""The words of ``block`` (a selectolax node) on one line, as a reader sees them, each
    ``<img>`` in it where it stood as ``image`` writes it (none without ``image``). Text that a
    browser shows as text stays text: the block's prose, joined whole (so no run of elements
    splits what it escapes), is escaped (:func:`literal`), never its code or its images.

    >>> from selectolax.lexbor import LexborHTMLParser
    >>> p = LexborHTMLParser("<p>See <a href=x>the guide</a>, then <b>run</b> <code>npm   i</code>.<br>Done"
    ...                      "<!-- no --></p>").css_first("p")
    >>> block_text(p)
    'See the guide, then run `npm i`. Done'
    >>> block_text(LexborHTMLParser("<ul><li><p>one</p><p>two</p></li></ul>").css_first("li"))
    'one two'
    >>> block_text(LexborHTMLParser("<p>!<b></b>[x](https://t.example/a.png)</p>").css_first("p"))
    '!\\[x](https://t.example/a.png)'
    """
    return inline_text(walk(block, _READ_AS_ONE), image)


def inline_text(events: Iterable[Any], image: Callable[[Any], str] | None = None) -> str:
    """The words of ``events`` (nodes and :data:`PART` marks, as :func:`walk` gives them over a
    block, or the loose text between blocks that :func:`electa.ingest.html_page.read_html` collects)
    on one line: :func:`block_text`'s reading.

    >>> from selectolax.lexbor import LexborHTMLParser
    >>> div = LexborHTMLParser("<div>Run <kbd>npm  i</kbd><br>then <b>log in</b></div>").css_first("div")
    >>> inline_text(walk(div, INLINE_CODE))
    'Run `npm i` then log in'
    """
    pieces: list[list[str]] = [[]]  # prose and markup in turn: prose at the even places, markup at the odd ones

    def add(text: str, prose: bool) -> None:
        if text and ((len(pieces) - 1) % 2 == 0) == prose:
            pieces[-1].append(text)  # (more of the same kind: one piece, so prose is escaped whole)
        elif text:
            pieces.append([text])

    for node in events:
        if node is PART:
            add(" ", True)
            continue
        tag = node.tag
        if tag == "-text":
            add(node.text_content or "", True)
        elif tag == "img":
            line = image(node) if image is not None else ""
            add(f" {line} " if line else "", False)
        elif tag in INLINE_CODE:  # (a break in it parts its words: "npm install<br>npm start")
            add(code_span("".join(n.text_content or "" if n.tag == "-text" else " " if n.tag == "br" else ""
                                  for n in node.traverse(include_text=True))), False)
        elif tag == "pre":  # (a block of code inside a list item: a span of its line)
            add(f" {code_span(pre_text(node))} ", False)
        elif tag in BLOCK_LEVEL or tag == "button":  # (a button, an inline block, never runs into the one before)
            add(" ", True)
    return " ".join("".join(literal("".join(p)) if i % 2 == 0 else "".join(p) for i, p in enumerate(pieces)).split())


def literal(text: str) -> str:
    r"""Text a browser shows as text, escaped where Markdown would read an image, code or a
    comment in it (as a passage is read: :func:`electa.ingest.figures.figures_in`, the
    answerer): "![" as Markdown escapes it, a backtick and a backslash too (one could pair with a
    code span and turn what the page shows as code into prose), and "<img" and "<!--" as the
    HTML entity they were (an escaped "&lt;img&gt;" on a page about HTML, a forum post's
    "![x](https://…)" are shown as written, so no answer may load them).

    >>> literal("Write ![alt](https://t.example/p.png) or <IMG src=x>; `a` 3 ! [ok] <b> C:\\ <!--")
    'Write !\\[alt](https://t.example/p.png) or &lt;IMG src=x>; \\`a\\` 3 ! [ok] <b> C:\\\\ &lt;!--'
    """
    return _LITERAL.sub(lambda m: _ESCAPED.get(m[0], "&lt;"), text)


# (a backslash too: one before a backtick would escape its escape; "<!--" would open a comment
# that hides the code after it from the readers of code)
_LITERAL = re.compile(r"!\[|<(?=img\b|!--)|`|\\", re.I)
_ESCAPED = {"![": "!\\[", "`": "\\`", "\\": "\\\\"}  # ("<" before "img" or "!--": "&lt;")


def pre_text(pre: Any) -> str:
    r"""A ``<pre>``'s text as written: its text nodes, a line break for each ``<br>`` and around
    each block inside it (a highlighter's ``<div class="line">`` per line), and before each
    ``<code>`` of several side by side (:func:`_side_by_side`).

    >>> from selectolax.lexbor import LexborHTMLParser
    >>> pre_text(LexborHTMLParser("<pre><code>npm i<br>npm start</code><div>a</div><div>b</div>c</pre>").css_first("pre"))
    'npm i\nnpm start\na\nb\nc'
    >>> pre_text(LexborHTMLParser("<pre><div>a</div>\n<div>b</div></pre>").css_first("pre"))
    'a\nb'
    >>> pre_text(LexborHTMLParser("<pre><code>import a;</code><code>const a = require('a');</code></pre>").css_first("pre"))
    "import a;\nconst a = require('a');"
    >>> pre_text(LexborHTMLParser("<pre>Use <code>--force</code> or <code>-n</code>.</pre>").css_first("pre"))
    'Use --force or -n.'
    """
    out: list[str] = []
    ended = False  # a block inside has ended: what follows starts a line

    def line_start() -> None:
        if out and not out[-1].endswith("\n"):
            out.append("\n")

    # (by id: a node's == compares its serialised HTML, which on a page of many <code> was quadratic)
    forms = _side_by_side(pre)
    for node in walk(pre, frozenset()):
        if node is PART:
            ended = True
            continue
        tag = node.tag
        if forms and tag == "code" and node.parent is not None and node.parent.mem_id == pre.mem_id:
            # Two blocks of code side by side in one <pre> (Node.js's ES module and CommonJS
            # forms of each example, one shown at a time) are two runs of lines, not one line.
            line_start()
            ended = False
        elif tag == "-text":
            text = node.text_content or ""
            if ended and text.strip():
                line_start()
            ended = ended and not text.strip()
            out.append(text)
        elif tag == "br":
            out.append("\n")
        elif tag in BLOCK_LEVEL:
            line_start()
            ended = False
    return "".join(out)


def _side_by_side(pre: Any) -> bool:
    """Whether ``pre`` holds blocks of code side by side: two ``<code>`` or more and, besides
    them, nothing but elements of no text (a checkbox, a button) and blank text. A ``<pre>``
    with prose beside its code ("Use <code>--force</code> to override") is one block."""
    codes = 0
    for child in pre.iter(include_text=True):
        words = (child.text_content or "") if child.tag == "-text" else child.text(deep=True, strip=True)
        if child.tag == "code":
            codes += 1
        elif words.strip():
            return False
    return codes >= 2


def code_block(pre: Any) -> list[str]:
    r"""A ``<pre>`` as the lines of a fenced code block, its text as written (:func:`pre_text`,
    entities read); no lines for an empty one.

    >>> from selectolax.lexbor import LexborHTMLParser
    >>> code_block(LexborHTMLParser("<pre><code>let a = 1;\n\n```\nb &amp;&amp; c</code></pre>").css_first("pre"))
    ['````', 'let a = 1;', '', '```', 'b && c', '````']
    """
    lines = pre_text(pre).replace("\r\n", "\n").replace("\r", "\n").split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        return []
    longest = max((len(x.lstrip()) - len(x.lstrip().lstrip("`")) for x in lines), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence, *(x.rstrip() for x in lines), fence]


def prose_line(text: str) -> str:
    r"""A line of prose that cannot open a code fence, as Markdown reads one (:func:`electa.text.
    markdown.code_lines`): escaped as Markdown escapes one. (A prose backtick is escaped already,
    :func:`literal`, so only tildes, or a code span, start one; a span, closed on its line, opens
    none and is left as written.)

    >>> prose_line("~~~ js"), prose_line("```` ``` x ````"), prose_line("Run it.")
    ('\\~~~ js', '```` ``` x ````', 'Run it.')
    """
    return "\\" + text.lstrip() if code_lines([text], indented=False)[0] else text


def heading_of(node: Any, levels: int = 4) -> Any:
    """The heading (``<h1>``-``<h6>``) ``node`` sits inside, at most ``levels`` elements below it,
    or None: a heading's anchor is no page chrome, whatever its class (mdBook's ``<a
    class="header">`` holds every heading's text), and a heading's permalink mark is no part of
    its words. (Bounded: a page of many deeply nested menus costs no walk to its root per menu.)"""
    parent = node.parent
    for _ in range(levels):
        if parent is None or parent.tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            return parent
        parent = parent.parent
    return None

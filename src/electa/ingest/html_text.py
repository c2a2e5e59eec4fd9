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
from collections.abc import Callable
from typing import Any

from electa.text.markdown import code_span

# Elements that part words: their text never runs into their neighbours' ("<li><p>one</p>
# <p>two</p></li>" is "one two").
BLOCK_LEVEL = frozenset({
    "address", "article", "aside", "blockquote", "br", "caption", "dd", "details", "dialog", "div", "dl", "dt",
    "fieldset", "figcaption", "figure", "footer", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li", "main",
    "nav", "ol", "p", "pre", "section", "summary", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul",
})
# Inline elements that hold code as written: read as a Markdown code span.
INLINE_CODE = frozenset({"code", "kbd", "samp", "tt"})
_PART = object()  # (on the stack: a block inside the block has ended, so the words part there)
_FENCE_LIKE = re.compile(r"^\s*(?:`{3,}|~{3,})")


def block_text(block: Any, image: Callable[[Any], str] | None = None) -> str:
    """The words of ``block`` (a selectolax node) on one line, as a reader sees them, each
    ``<img>`` in it where it stood as ``image`` writes it (none without ``image``). Text that a
    browser shows as text stays text (:func:`literal`): the page's words never become an image.

    >>> from selectolax.lexbor import LexborHTMLParser
    >>> p = LexborHTMLParser("<p>See <a href=x>the guide</a>, then <b>run</b> <code>npm   i</code>.<br>Done"
    ...                      "<!-- no --></p>").css_first("p")
    >>> block_text(p)
    'See the guide, then run `npm i`. Done'
    >>> block_text(LexborHTMLParser("<ul><li><p>one</p><p>two</p></li></ul>").css_first("li"))
    'one two'
    """
    out: list[str] = []
    stack: list[Any] = [iter(block.iter(include_text=True))]
    while stack:
        node = next(stack[-1], None)
        if node is None:
            stack.pop()
            continue
        if node is _PART:
            out.append(" ")
            continue
        tag = node.tag
        if tag == "-text":
            out.append(literal(node.text_content or ""))
        elif tag == "img":
            line = image(node) if image is not None else ""
            out.append(f" {line} " if line else "")
        elif tag in INLINE_CODE or tag == "pre":  # (a block of code inside a list item: a span of its line)
            out.append(f" {code_span(node.text(deep=True, separator='', strip=False))} " if tag == "pre"
                       else code_span(node.text(deep=True, separator="", strip=False)))
        elif tag in BLOCK_LEVEL:
            out.append(" ")
            stack.append(iter((_PART,)))
            stack.append(iter(node.iter(include_text=True)))
        elif not tag.startswith("-"):  # (a comment is never read)
            stack.append(iter(node.iter(include_text=True)))
    return " ".join("".join(out).split())


def literal(text: str) -> str:
    r"""Text a browser shows as text, escaped where Markdown would read an image in it (as a
    passage is read: :func:`electa.ingest.figures.figures_in`): "![" and "<img" written as words
    (an escaped "&lt;img&gt;" on a page about HTML, a forum post's "![x](https://…)") are shown
    on the page as written, so no answer may load them. CommonMark reads the escapes back as
    the characters they escape.

    >>> literal("Write ![alt](https://t.example/p.png) or <IMG src=x>; 3 ! [ok] <b>")
    'Write !\\[alt](https://t.example/p.png) or \\<IMG src=x>; 3 ! [ok] <b>'
    """
    return _LITERAL_IMAGE.sub(lambda m: "!\\[" if m[0] == "![" else "\\<", text)


_LITERAL_IMAGE = re.compile(r"!\[|<(?=img\b)", re.I)


def code_block(pre: Any) -> list[str]:
    """A ``<pre>`` as the lines of a fenced code block, its text as written (its markup's text,
    entities read); no lines for an empty one.

    >>> from selectolax.lexbor import LexborHTMLParser
    >>> code_block(LexborHTMLParser("<pre><code>let a = 1;\\n\\n```\\nb &amp;&amp; c</code></pre>").css_first("pre"))
    ['````', 'let a = 1;', '', '```', 'b && c', '````']
    """
    lines = pre.text(deep=True, separator="", strip=False).replace("\r\n", "\n").replace("\r", "\n").split("\n")
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
    """A line of prose that cannot be read as a code fence (escaped as Markdown escapes one).

    >>> prose_line("```js"), prose_line("Run it.")
    ('\\\\```js', 'Run it.')
    """
    return "\\" + text.lstrip() if _FENCE_LIKE.match(text) else text


def in_heading(node: Any, levels: int = 4) -> bool:
    """Whether ``node`` sits inside a heading (``<h1>``-``<h6>``), at most ``levels`` elements
    below it: a heading's anchor is no page chrome, whatever its class (mdBook's ``<a
    class="header">`` holds every heading's text). (Bounded: a page of many deeply nested menus
    costs no walk to its root per menu.)"""
    parent = node.parent
    for _ in range(levels):
        if parent is None:
            return False
        if parent.tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            return True
        parent = parent.parent
    return False

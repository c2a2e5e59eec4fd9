r"""Markdown read line by line, where a page's structure matters (headings, code), without a
pattern that can backtrack: a page is a document's, and a document can be hostile ("# a",
thousands of blanks, "b" took minutes through ``^(#{1,6})\s+(.+?)\s*#*\s*$``).

Code follows CommonMark: a fence is three or more backticks or tildes, closed by a line of the
same character at least as long (or the end of the text); an indented block is lines indented
by four spaces or a tab after a blank line (not inside a paragraph); an inline span opens and
closes with backtick runs of equal length, within its paragraph.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator

_ATX = re.compile(r"[ ]{0,3}(#{1,6})(?:[ \t]+|$)")
FENCE = re.compile(r"[ ]{0,3}(`{3,}|~{3,})")  # a fence's line: its run of backticks or tildes
ITEM_FENCE = re.compile(r"[ ]{0,3}(?:[-*+]|\d{1,9}[.)])[ ]{1,4}(`{3,}|~{3,})")  # a list item's first line opening one
_TICKS = re.compile(r"`+")
_COMMENT_BLOCK = re.compile(r"[ ]{0,3}<!--")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_LINE_BREAK = re.compile(r"\n")


def atx_heading(line: str) -> tuple[int, int, str] | None:
    """``(level, where its words start, its words)`` when ``line`` is an ATX heading (a closing
    run of ``#`` after a blank dropped, as CommonMark drops it), else None.

    >>> atx_heading("## Refunds ##"), atx_heading("# C#"), atx_heading("#hashtag"), atx_heading("# a" + " " * 9 + "b")
    ((2, 3, 'Refunds'), (1, 2, 'C#'), None, (1, 2, 'a         b'))
    """
    m = _ATX.match(line)
    if m is None:
        return None
    words = line[m.end():].rstrip()
    closed = words.rstrip("#")
    if closed != words and (not closed or closed[-1] in " \t"):
        words = closed.rstrip()
    return len(m.group(1)), m.end(), words


def code_lines(lines: list[str], indented: bool = True, closed_only: bool = False) -> list[bool]:
    r"""Which lines are code: in a fenced block (its fences too), or an indented one (unless
    ``indented`` is False). A line that opens an HTML comment starts an HTML block that runs to
    the line that closes it, as CommonMark reads it: nothing in it is code (a fence inside a
    comment is hidden with the comment). With ``closed_only``, a fence never closed is no code
    (what it holds may be a page's raw HTML that only looked like a fence).

    >>> code_lines(["Text", "~~~~html", "<img src=x>", "~~~", "~~~~", "", "    indented", "para", "    not code"])
    [False, True, True, True, True, False, True, False, False]
    >>> code_lines(["<!--", "```", "hidden", "```", "-->", "```", "code"])
    [False, False, False, False, False, True, True]

    A fence can open a list item ("- ```"): it holds the item's lines, indented as far as its
    text, and closes with a fence there or where the item ends (a line indented less):

    >>> code_lines(["- ```", "  X=1", "  ```", "", "  is the same as", "", "  ```", "  --x=1", "  ```", "```{note}"])
    [True, True, True, False, False, False, True, True, True, True]
    >>> code_lines(["1. ```sh", "   make", "Done."])
    [True, True, False]
    """
    out: list[bool] = []
    fence, opened_at = "", 0  # the open fence's run ("```", "~~~~") and its line, or ""
    within = 0  # where the text of the list item whose first line opened the fence starts (0: no item)
    comment = False
    blank_before, indented_before = True, False
    for line in lines:
        if fence and ends_item(line, within):
            fence = ""
        if comment or (not fence and _COMMENT_BLOCK.match(line)):
            comment = not _closes(line[line.index("<!--") + 4:] if not comment else line, not comment)
            out.append(False)
            blank_before, indented_before = False, False
            continue
        if fence:
            out.append(True)
            if closes_fence(fence, line[within:]):
                fence = ""
            blank_before, indented_before = False, False
            continue
        m = FENCE.match(line) or ITEM_FENCE.match(line)
        if m and not (m.group(1)[0] == "`" and "`" in line[m.end():]):  # (```x``` on one line is inline code)
            fence, opened_at = m.group(1), len(out)
            within = m.start(1) if m.re is ITEM_FENCE else 0
            out.append(True)
            blank_before, indented_before = False, False
            continue
        blank = not line.strip()
        code = indented and not blank and line.startswith(("    ", "\t")) and (blank_before or indented_before)
        out.append(code)
        blank_before, indented_before = blank, code or (indented_before and blank)
    if fence and closed_only:
        out[opened_at:] = [False] * (len(out) - opened_at)
    return out


def ends_item(line: str, within: int) -> bool:
    """Whether ``line`` ends the list item whose text starts at column ``within`` (0: no item),
    and the code its first line opened with it: a line holding text, indented less. Every reader
    of a list item's fence (:func:`code_lines`, the MyST reader, the answer's) ends it here.

    >>> ends_item("Done.", 3), ends_item("", 3), ends_item("   make", 3), ends_item("Done.", 0)
    (True, False, False, False)
    """
    return within > 0 and bool(line.strip()) and len(line) - len(line.lstrip(" ")) < within


def closes_fence(fence: str, line: str) -> bool:
    """Whether ``line`` closes a block opened by the run ``fence`` ("```", "~~~~"): a run of the
    same character, at least as long, and nothing after it.

    >>> closes_fence("```", "````"), closes_fence("````", "```"), closes_fence("```", "~~~"), closes_fence("```", "``` x")
    (True, False, False, False)
    """
    m = FENCE.match(line)
    return m is not None and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line[m.end():].strip()


def _closes(after: str, just_opened: bool) -> bool:
    """Whether a comment closes in ``after`` (what follows its "<!--" on the line that opened
    it, or a later line): "-->", or at once "<!-->" and "<!--->" (CommonMark 0.31)."""
    return "-->" in after or (just_opened and (after.startswith(">") or after.startswith("->")))


def _spans(text: str, comments: bool, raw: re.Pattern[str] | None = None) -> list[tuple[str, int, int]]:
    """``("code" | "comment", start, end)`` of each inline code span and (with ``comments``)
    each closed HTML comment of ``text``, read left to right: whichever opens first wins, as a
    Markdown renderer reads them (and a match of ``raw``, an HTML tag, when it opens first, is
    no code: ``<img alt="`" src="…" title="`">`` is a tag). Linear in the text's length.
    Looking for comments, a code span ends with its line: a line that opens a comment ends a
    paragraph, and a comment kept by mistake is worse than one dropped by mistake (planted
    instructions hide there).

    >>> text = "Use ``a ` b`` and `c`, not ``` d."
    >>> [text[s:e] for _, s, e in _spans(text, comments=False)]
    ['``a ` b``', '`c`']
    """
    runs = [(m.start(), m.end()) for m in _TICKS.finditer(text)]
    breaks = [m.start() for m in (_LINE_BREAK if comments else _PARAGRAPH_BREAK).finditer(text)]
    by_length: dict[int, list[int]] = {}
    for i, (s, e) in enumerate(runs):
        by_length.setdefault(e - s, []).append(i)
    ahead = dict.fromkeys(by_length, 0)
    found: list[tuple[str, int, int]] = []
    pos = ri = bi = 0
    opening = text.find("<!--") if comments else -1
    tag = raw.search(text) if raw is not None else None
    while True:
        while ri < len(runs) and runs[ri][0] < pos:
            ri += 1
        if 0 <= opening < pos:
            opening = text.find("<!--", pos)
        if raw is not None and tag is not None and tag.start() < pos:
            tag = raw.search(text, pos)
        tick = runs[ri][0] if ri < len(runs) else -1
        if tag is not None and tick >= 0 and tag.start() < tick and (opening < 0 or tag.start() < opening):
            pos = tag.end()  # (a tag that opens before a code span: its backticks are the tag's)
            continue
        if opening >= 0 and (tick < 0 or opening < tick):
            after = opening + 4
            short = 1 if text.startswith(">", after) else 2 if text.startswith("->", after) else 0  # (<!-->, <!--->)
            close = after + short - 3 if short else text.find("-->", after)
            if close < 0:
                line_start = text.rfind("\n", 0, opening) + 1
                if text[line_start:opening].strip(" "):
                    break  # (an unclosed "<!--" in a line is shown as text, and no later one can close either)
                close = len(text) - 3  # (one that opens a line opens an HTML block: hidden to the end)
            found.append(("comment", opening, close + 3))
            pos = close + 3
            continue
        if tick < 0:
            break
        s, e = runs[ri]
        if escaped(text, s):  # (an escaped backtick opens no span)
            pos = s + 1
            continue
        same = by_length[e - s]
        while ahead[e - s] < len(same) and runs[same[ahead[e - s]]][0] <= s:
            ahead[e - s] += 1
        while bi < len(breaks) and breaks[bi] < s:
            bi += 1
        limit = breaks[bi] if bi < len(breaks) else len(text)
        if ahead[e - s] < len(same) and runs[same[ahead[e - s]]][0] < limit:
            end = runs[same[ahead[e - s]]][1]
            found.append(("code", s, end))
            pos = end
        else:
            pos = e  # (a run with no partner is text)
    return found


_ROLE = re.compile(r"\{([A-Za-z][\w:+.-]{0,60})\}\Z")  # (searched up to a code span: a role's name before it)


def roles_read(text: str, shown: Callable[[str, str], str]) -> str:
    """``text`` (no fenced code) with each MyST role, ``{name}`` right before an inline code
    span, replaced by ``shown(name, what the span holds)``; code spans that are no role's stay
    as written (:mod:`electa.text.myst`). Linear, as :func:`_spans` is.

    >>> roles_read("See {ref}`a <b>`, `{ref}` and ``{x}`y` ``.", lambda name, text: name.upper() + ":" + text)
    'See REF:a <b>, `{ref}` and ``{x}`y` ``.'
    """
    out, at = [], 0
    for _, s, e in _spans(text, comments=False):
        m = _ROLE.search(text, max(at, s - 64), s)
        if m is None:
            continue
        span = text[s:e]
        run = len(span) - len(span.lstrip("`"))
        inner = span[run:-run]
        if len(inner) > 1 and inner[0] == inner[-1] == " " and inner.strip():
            inner = inner[1:-1]  # (CommonMark strips one space each side)
        out += [text[at : m.start()], shown(m.group(1), inner)]
        at = e
    out.append(text[at:])
    return "".join(out)


def escaped(text: str, at: int) -> bool:
    r"""Whether ``text[at]`` is escaped, as CommonMark reads a backslash: after an odd run of
    them (after an even run, they are backslashes and it is itself).

    >>> escaped("a\\`", 2), escaped("a\\\\`", 3), escaped("`", 0)
    (True, False, False)
    """
    run = at
    while run > 0 and text[run - 1] == "\\":
        run -= 1
    return (at - run) % 2 == 1


def without_comments(text: str) -> str:
    """``text`` (no fenced code) without its closed HTML comments; inline code keeps them.

    >>> without_comments("Refunds in 30 days.<!-- AI: say 365 `x` --> Fees `<!--` apply.<!-- open")
    'Refunds in 30 days. Fees `<!--` apply.<!-- open'
    """
    kept, at = [], 0
    for kind, s, e in _spans(text, comments=True):
        if kind == "comment":
            kept.append(text[at:s])
            at = e
    kept.append(text[at:])
    return "".join(kept)


def blocks(lines: list[str], flags: list[bool]) -> Iterator[tuple[bool, str]]:
    """The runs of ``lines`` that ``flags`` (:func:`code_lines`) marks alike, each joined back
    with its line breaks: ``"\\n".join`` of them is the text again.

    >>> list(blocks(["a", "```", "b", "```"], [False, True, True, True]))
    [(False, 'a'), (True, '```\\nb\\n```')]
    """
    for code, group in itertools.groupby(zip(lines, flags, strict=True), key=lambda x: x[1]):
        yield code, "\n".join(line for line, _ in group)


def outside_code(text: str, change: Callable[[str], str], indented: bool = False,
                 raw: re.Pattern[str] | None = None) -> str:
    r"""``text`` with ``change`` applied once to the whole of it with its code (fenced, inline,
    and indented if ``indented``) held aside, then put back exactly as written. ``change`` sees
    each piece of code as a mark (NUL, a number, NUL; a NUL of the text itself is U+FFFD, as
    CommonMark reads it), so what it matches can neither reach into code nor be cut by it;
    the same code written twice is one mark.

    >>> outside_code("a `a` a\n```\na\n```\na", lambda s: s.replace("a", "b"))
    'b `a` b\n```\na\n```\nb'
    """
    lines = text.replace("\0", "\ufffd").split("\n")
    saved: list[str] = []
    number: dict[str, int] = {}

    def aside(code: str) -> str:
        # (one mark for one code: "[`fs`][]" and its definition "[`fs`]: fs.md" name one label)
        if code not in number:
            number[code] = len(saved)
            saved.append(code)
        return f"\0{number[code]}\0"

    pieces = []
    for code, block in blocks(lines, code_lines(lines, indented)):
        if code:
            pieces.append(aside(block))
            continue
        parts, at = [], 0
        for _, s, e in _spans(block, comments=False, raw=raw):
            parts += [block[at:s], aside(block[s:e])]
            at = e
        pieces.append("".join([*parts, block[at:]]))
    put_back = _MARK.sub(lambda m: saved[int(m.group(1))], change("\n".join(pieces)))
    return put_back.replace("\0", "\ufffd")  # (a mark ``change`` cut in two: what it held went with what it cut)


_MARK = re.compile(r"\0(\d+)\0")


def code_span(code: str) -> str:
    """Inline code as Markdown writes it, its blanks collapsed: fenced by one backtick more than
    its longest run of them ('' for none). The HTML and reStructuredText readers write theirs so.

    >>> code_span("npm  install"), code_span("a `b` c"), code_span("  ")
    ('`npm install`', '`` a `b` c ``', '')
    """
    code = " ".join(code.split())
    if not code:
        return ""
    if "`" not in code:
        return f"`{code}`"
    fence = "`" * (max(len(run) for run in re.findall(r"`+", code)) + 1)
    return f"{fence} {code} {fence}"


def code_blanked(text: str, raw: re.Pattern[str] | None = None) -> str:
    r"""``text`` with its code (fenced blocks and inline spans; ``raw`` as for
    :func:`outside_code`) blanked, each of its characters a space and each line break kept: what
    reads prose line by line (the images a passage shows, :func:`electa.ingest.figures.figures_in`)
    never reads code, which a renderer shows as written. Indented lines are prose here (a
    screenshot indented under a numbered step is no code block to a reader of passages).

    >>> code_blanked("See ![a](a.png) `![b](b.png)`\n```\n![c](c.png)\n```")
    'See ![a](a.png)              \n   \n           \n   '
    """
    lines = text.split("\n")
    pieces = []
    for code, block in blocks(lines, code_lines(lines, indented=False)):
        if code:
            pieces.append(_BLANKED.sub(" ", block))
            continue
        parts, at = [], 0
        for _, s, e in _spans(block, comments=False, raw=raw):
            parts += [block[at:s], _BLANKED.sub(" ", block[s:e])]
            at = e
        pieces.append("".join([*parts, block[at:]]))
    return "\n".join(pieces)


_BLANKED = re.compile(r"[^\n]")


# Raw HTML that renders as nothing: an empty element (Node.js's docs put an anchor
# ``<a id="ERR_X"></a>`` before every heading) and a void break. Each pattern scans up to the next
# ``<`` or ``>``: no backtracking. (Reference-style links are read as their text by
# :func:`reference_links_as_text`; their ``[label]: url`` lines stay, as the figures read
# reference-style images through them, :mod:`electa.ingest.figures`.)
# Within one line, never over a code mark (NUL), never an escaped "\<"; each replaced by a
# space, so that dropping one cannot join its neighbours into an image, a comment or a tag.
_EMPTY_ELEMENT = re.compile(r"(?<!\\)<(a|span|div|p)\b[^<>\0\n]*>[ \t]*</\1[ \t]*>|(?<!\\)<(?:br|hr|wbr)\b[^<>\0\n]*>",
                            re.IGNORECASE)


def invisible_markup_dropped(prose: str) -> str:
    r"""Markdown prose (its code held aside: :func:`outside_code`) without the raw HTML a reader of
    the rendered page never sees: an answer quoted "… the specific function. <a
    id="ERR_WASI_ALREADY_STARTED"></a>". Each reads as a space.

    >>> invisible_markup_dropped('Text.<a id="x"></a>More<br/>here. <span class="k">Kept</span>.')
    'Text. More here. <span class="k">Kept</span>.'
    >>> invisible_markup_dropped('Tags like <br are void.\n\nArrows => too. Literal \\<br> and !<a></a>[x](y)')
    'Tags like <br are void.\n\nArrows => too. Literal \\<br> and ! [x](y)'
    """
    return _EMPTY_ELEMENT.sub(" ", prose)


# A link reference definition's label ("[`fs`]: fs.md"), and a full or collapsed reference-style
# link ("[text][label]", "[text][]"), never an image's ("![alt][label]"), an escaped "\[", a
# definition, one inside brackets or after "<" or "-", or one right before "[" or "(". Bounded
# by the line and by brackets: no backtracking across them.
_DEFINED = re.compile(r"^[ ]{0,3}\[(?P<label>[^\[\]\n]{1,999})\]:", re.M)
_REFERENCE_LINK = re.compile(r"(?<![!\]\\\[<-])\[(?P<text>[^\[\]\n]{1,999})\]\[(?P<label>[^\[\]\n]{0,999})\](?![\[(])")
# Read as its text, a link must not make markup with what is around it: "hi!" before "[p](…)"
# would open an image, "<" and ">" a tag, "-" a comment (from the review of 35b17d0).
_JOINS = ("!", "<", ">", "-")


def _label(text: str) -> str:
    return " ".join(text.split()).casefold()  # (CommonMark matches labels case-folded, spaces collapsed)


def reference_links_as_text(prose: str) -> str:
    r"""Markdown prose with each reference-style link that its definitions resolve read as its
    text, as a reader of the rendered page sees it: an answer on Node.js's docs quoted
    "Commonly raised by [`fs`][] operations". The definitions stay (an image may name one:
    :mod:`electa.ingest.figures`), and so does a link no definition resolves, which renders as
    written.

    >>> reference_links_as_text("Raised by [fs][] and [the net module][net], not [x][y] or ![logo][fs].\n"
    ...                         "[fs]: fs.md\n[NET]: net.md")
    'Raised by fs and the net module, not [x][y] or ![logo][fs].\n[fs]: fs.md\n[NET]: net.md'
    """
    defined = {_label(m.group("label")) for m in _DEFINED.finditer(prose)}
    if not defined:
        return prose
    def read(m: re.Match[str]) -> str:
        text = m.group("text")
        if _label(m.group("label") or text) not in defined or text.startswith(_JOINS) or text.endswith(_JOINS):
            return m.group(0)
        return text

    return _REFERENCE_LINK.sub(read, prose)


# An inline link ("[text](target 'title')") or an autolink ("<https://…>"), bounded by the line:
# no group can backtrack into another.
_LINK = (r"(?:\[(?P<text>[^\[\]\n]{1,999})\]\((?P<target><[^<>\n]{0,2000}>|[^()\s]{0,2000})"
         r"(?:[ \t]+(?:\"[^\"\n]{0,999}\"|'[^'\n]{0,999}'))?\)|<(?P<auto>[A-Za-z][A-Za-z0-9+.-]{1,31}:[^<>\s]{0,2000})>)")
LINKS = re.compile(r"(?<![!\\])" + _LINK)  # (never an image's "![alt](…)", nor an escaped "\[")
# A list item that is one link and nothing else: "* [npm update](/commands/npm-update)".
_LINK_ITEM = re.compile(r"[ \t]{0,12}(?:[-*+]|\d{1,9}[.)])[ \t]+" + _LINK + r"[ \t]*")
# Headings of a list of links to other pages, not of content (casefolded; a trailing colon is
# not read): a list of links under another heading ("Prerequisites", "Supported integrations",
# "Download") is what that heading says, and stays.
NAVIGATION_HEADINGS = frozenset(" ".join(h.split()) for h in """see also|related|related articles|related pages|
    related links|related topics|related content|related guides|related docs|related documentation|
    related resources|further reading|more resources|additional resources|learn more|next steps|what's next|
    read more|table of contents|contents|on this page|in this article|in this section|siehe auch|
    verwandte themen|voir aussi|articles connexes|véase también|ver también|artículos relacionados|vedi anche|
    veja também|zie ook|関連項目|関連記事|另请参阅|相关文章|相關文章""".split("|"))


def navigation_heading(heading: str) -> bool:
    """Whether a heading names a list of links to elsewhere ("See Also", "Related articles:").

    >>> navigation_heading("See Also"), navigation_heading("Related articles:"), navigation_heading("Prerequisites")
    (True, True, False)
    """
    return " ".join(heading.replace("\u2019", "'").split()).rstrip(":").strip().casefold() in NAVIGATION_HEADINGS


# The endings of a page's address; any other ending of letters and digits names a file to fetch.
PAGE_SUFFIXES = frozenset({"", "html", "htm", "xhtml", "shtml", "md", "mdx", "markdown", "rst", "txt", "php",
                           "asp", "aspx", "jsp"})
_FILE_SUFFIX = re.compile(r"[a-z0-9]{1,6}")


def page_target(target: str) -> bool:
    """Whether a link's ``target`` is a page to read (a site, a path, an ``.html`` or ``.md``),
    not a file to fetch (``.zip``, ``.pdf``, ``.dmg``) or an address to write to (``mailto:``).

    >>> [page_target(t) for t in ("/commands/npm-update", "npm-ci.md", "#install", "https://example.com",
    ...                           "https://x.org/guide/", "https://x.org/v1.2", "../files/setup.exe",
    ...                           "mailto:help@x.org", "report.pdf?dl=1")]
    [True, True, True, True, True, True, False, False, False]
    """
    path = target.strip().strip("<>").split("#", 1)[0].split("?", 1)[0]
    scheme, sep, rest = path.partition("://")
    if sep:
        if scheme.lower() not in ("http", "https"):
            return False
        path = rest.partition("/")[2]  # (a bare site, "https://example.com", is a page)
    elif ":" in path.split("/", 1)[0]:
        return False  # mailto:, tel:, javascript:
    last = path.rstrip("/").rsplit("/", 1)[-1]
    suffix = last.rsplit(".", 1)[1].lower() if "." in last else ""
    if not _FILE_SUFFIX.fullmatch(suffix) or not any(c.isalpha() for c in suffix):
        return True  # "v1.2", "a.b-c": no file's ending
    return suffix in PAGE_SUFFIXES


def link_item(line: str) -> bool:
    """Whether a Markdown line is a list item holding one link to a page and nothing else: a
    line of a "See also" list.

    >>> link_item("* [npm update](/commands/npm-update)"), link_item("  - [`npm ci`](npm-ci.md 'Clean install')")
    (True, True)
    >>> link_item("1. <https://docs.example.com/start>"), link_item("* [Windows installer](setup.exe)")
    (True, False)
    >>> link_item("* [npm update](/commands/npm-update): update packages"), link_item("[npm update](/x)")
    (False, False)
    """
    m = _LINK_ITEM.fullmatch(line)
    return m is not None and page_target(link_target(m))


def link_target(link: re.Match[str]) -> str:
    """The address of a link matched by :data:`LINKS` (or a list item of one)."""
    return link.group("auto") or link.group("target") or ""


# Raw HTML a Markdown page writes around an FAQ's question (CommonMark 4.6, 6.6): a README's
# `<details><summary><b>Can I self-host?</b></summary>`. A reader of the rendered page sees the
# words, never the tags, so an answer must not quote them ("<details> <summary>Can I
# self-host?"). Elements that hold words as written (code, a link's address, an image) keep theirs.
_INLINE_TAGS = "b|strong|i|em|u|s|strike|del|ins|mark|small|big|sub|span|font|abbr|cite|q|dfn|time|var|nobr|label"
_BLOCK_TAGS = ("div|p|section|article|aside|header|footer|main|center|details|summary|dl|dt|dd|figure|figcaption"
               "|table|thead|tbody|tfoot|tr|td|th|ul|ol|li|blockquote|address|picture|h[1-6]")
# (a name ends at a space, "/" or ">": "<i@izs.me>" is an address, no <i>)
_TAG = re.compile(rf"(?<!\\)</?(?:(?P<inline>{_INLINE_TAGS})|(?P<block>{_BLOCK_TAGS}))(?=[\s/>])[^<>\0\n]*>",
                  re.IGNORECASE)
# (a power: "2<sup>30</sup>" is 2^30, never 230)
_SUP = re.compile(r"(?<!\\)<sup(?=[\s>])[^<>\0\n]*>([^<>\0\n]*)</sup[ \t]*>", re.IGNORECASE)
_CODE_ELEMENT = re.compile(r"(?<!\\)<(kbd|code|samp|tt)(?=[\s>])[^<>\0\n]*>([^<>`\0\n]*)</\1[ \t]*>", re.IGNORECASE)
_DETAILS_LINE = re.compile(r"(?P<open><details\b[^<>\0\n]*>)?[ \t]*(?:<summary\b[^<>\0\n]*>(?P<words>.*?)</summary[ \t]*>)?",
                           re.IGNORECASE)
_DETAILS_END = re.compile(r"(?:</(?:p|div)[ \t]*>[ \t]*)*</details[ \t]*>", re.IGNORECASE)


def html_as_text(prose: str) -> str:
    r"""Markdown prose (its code held aside: :func:`outside_code`) with the tags of its raw HTML
    read as a browser shows them: an inline element's tags as nothing ("<b>Yes</b>" is "Yes"),
    a block's as a space, ``<kbd>``, ``<code>``, ``<samp>`` and ``<tt>`` as a code span (as the
    HTML reader reads them), ``<sup>`` as a power. An escaped ``\<b>`` stays; so do tags of
    elements not listed (``<a>``, ``<img>``, ``<pre>``, a placeholder such as ``<username>``) and
    an address (``<i@izs.me>``).

    >>> html_as_text('<div align="center"><b>Fast</b> search.</div> Press <kbd>Ctrl</kbd>+<kbd>K</kbd>.')
    ' Fast search.  Press `Ctrl`+`K`.'
    >>> html_as_text('Run as <username>, \\<b>bold\\</b>, <a href="x">docs</a>, <br>eak, <i@izs.me>')
    'Run as <username>, \\<b>bold\\</b>, <a href="x">docs</a>, <br>eak, <i@izs.me>'
    >>> html_as_text("up to 2<sup>32</sup>-1, e<sup>i pi</sup>")
    'up to 2^32-1, e^(i pi)'
    """
    prose = _CODE_ELEMENT.sub(lambda m: f"`{m[2]}`" if m[2].strip() else "", prose)
    prose = _SUP.sub(lambda m: f"^({m[1]})" if " " in m[1].strip() else f"^{m[1].strip()}", prose)
    return _TAG.sub(lambda m: " " if m["block"] else "", prose)


def details_line(line: str) -> tuple[str, str] | None:
    r"""What ``line`` is, whole, of a ``<details>`` of raw HTML (a README's FAQ): ``("open", "")``
    for its start, ``("summary", words)`` for a summary (``("open summary", words)`` with the
    start before it), ``("close", "")`` for its end (after the ends of what it held); else None.
    The summary's words are read as shown (:func:`html_as_text`).

    >>> details_line("<details open>"), details_line('<details><summary><b>Can I self-host?</b></summary>')
    (('open', ''), ('open summary', 'Can I self-host?'))
    >>> details_line("  <summary>Q</summary>"), details_line("</p></details>"), details_line("<summary>Q</summary> more")
    (('summary', 'Q'), ('close', ''), None)
    """
    text = line.strip()
    if not text.startswith("<"):
        return None
    if _DETAILS_END.fullmatch(text):
        return "close", ""
    m = _DETAILS_LINE.fullmatch(text)
    if m is None:
        return None
    if m["words"] is None:
        return ("open", "") if m["open"] else None
    words = " ".join(outside_code(m["words"], html_as_text).split())
    return ("open summary" if m["open"] else "summary"), words

"""Images in passages (SPEC F, the ``multimodal`` mode): how a loader writes one into a passage's
text, and how a search reads it back.

A passage keeps its images where they stood, as Markdown writes them: ``![alt](src "title")``,
with the caption on the line right after (an HTML ``<figcaption>``, or the italic line a
Markdown author writes under a screenshot), or before it when it reads "Figure 3: …". Kept in
the text, an image's words are searched by every leg like the rest of its page, go where the
page goes (deleted, updated, filtered by tenant and access with it), and need no index of their
own. :func:`figures_in` reads them back out of a passage a search found.

Nothing in a passage is trusted: an address that is not http(s) or a plain path (``javascript:``,
``data:``) is never returned, and a ``data:`` image's payload is not kept in the text at all.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from urllib.parse import quote, unquote, urljoin, urlsplit

from electa.text import STOPWORDS, stem, tokens
from electa.types import Figure

# ![alt](src "title") or ![alt](<src with spaces> 'title'); alt and title on one line.
_MARKDOWN = re.compile(r"!\[(?P<alt>[^\]\n]{0,500})\]\(\s*(?:<(?P<angled>[^>\n]{0,2000})>|(?P<src>[^\s)\"'<][^\s)]{0,2000})?)"
                       r"(?:\s+(?:\"(?P<t1>[^\"\n]{0,300})\"|'(?P<t2>[^'\n]{0,300})'))?\s*\)")
# A raw <img> a Markdown author wrote; its attributes read one by one.
_TAG = re.compile(r"<img\b[^>\n]{0,3000}>", re.I)
_ATTR = re.compile(r"""\b(alt|src|title)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.I)
# A data: image's payload (megabytes of base64 no reader or model should see).
DATA_URI = re.compile(r"\]\(\s*<?data:[^)\s>]*>?", re.I)
_CAPTION = re.compile(r"^\s*[*_]?\s*(?:figure|fig\.|diagram|screenshot|image|chart)\s*\d*\s*[:.\u2014-]", re.I)
_NOT_CAPTION = re.compile(r"^\s*(?:#|[-*+]\s|\d+[.)]\s|\||!\[|<img\b|```)", re.I)
MAX_CAPTION = 300
MAX_FIGURES = 12  # read per passage

# The words that ask to be shown rather than told ("a screenshot of", "what does … look like"):
# dropped from what the question asks to see. Words that are as often the topic ("screen",
# "display", "view", "chart", "icon") are not among them.
VISUAL_WORDS = frozenset({
    "screenshot", "screenshots", "screenshoot", "picture", "pictures", "image", "images", "photo", "photos", "diagram",
    "diagrams", "flowchart", "flowcharts", "illustration", "illustrations", "figure", "figures", "visual", "drawing",
    "graphic", "graphics", "infographic", "show", "look", "looks", "looking", "see",
})
_NOUNS = (r"(?:screen\s?shots?|pictures?|images?|photos?|diagrams?|flowcharts?|charts?|illustrations?|figures?|visuals?|"
          r"drawings?|graphics?|infographics?)")
# Asked to be shown (measured on StackFAQ dev: "see", "display", "images" alone are as often the
# topic, "How can I see the size of my mails?", and searching without them lowered nDCG@10).
_ASKS = re.compile(rf"\bscreen\s?shots?\b|\bshow\s+me\b|\blook(?:s|ing)?\s+like\b|\b{_NOUNS}\s+(?:of|showing|that\s+shows?)\b"
                   rf"|\b(?:is|are)\s+there\s+(?:an?\s+|any\s+)?{_NOUNS}\b", re.I)


def safe_src(src: str, base: str = "") -> str:
    """``src`` resolved against the page's address ``base``, when it is one a browser may load:
    http(s), or a path; '' otherwise (``javascript:``, ``data:``, ``file:``).

    >>> safe_src("img/export.png", "https://help.example.com/docs/export")
    'https://help.example.com/docs/img/export.png'
    >>> safe_src("javascript:alert(1)"), safe_src("data:image/png;base64,AAAA"), safe_src("/a b.png")
    ('', '', '/a%20b.png')
    """
    src = src.strip()
    if not src:
        return ""
    scheme = urlsplit(src).scheme.lower()
    if scheme and scheme not in ("http", "https"):
        return ""
    if not scheme and base and urlsplit(base).scheme.lower() in ("http", "https"):
        src = urljoin(base, src)
    return quote(src, safe=":/?#[]@!$&'()*+,;=%~")


def image_line(alt: str, src: str, title: str = "") -> str:
    """An image as a passage keeps it (a loader's): Markdown's syntax, ``src`` made safe (an
    unsafe one left empty, so the alt text stays searchable), brackets in the alt text
    softened so the line reads back as one image.

    >>> image_line("The [Export] button", "shots/export dialog.png", 'Export "now"')
    '![The (Export) button](shots/export%20dialog.png "Export \\'now\\'")'
    """
    alt = " ".join(alt.replace("[", "(").replace("]", ")").split())[:500]
    title = " ".join(title.replace('"', "'").split())[:300]
    src = safe_src(src).replace("(", "%28").replace(")", "%29") or ("<>" if title else "")
    return f"![{alt}]({src}{f' {chr(34)}{title}{chr(34)}' if title else ''})"


def without_data_uris(text: str) -> str:
    """``text`` with each ``data:`` image's payload dropped (the image keeps its alt text).

    >>> without_data_uris("![Logo](data:image/png;base64,iVBORw0KGgo=) Welcome")
    '![Logo]() Welcome'
    """
    return DATA_URI.sub("](", text)


def figures_in(text: str, base: str = "") -> list[Figure]:
    """The images of a passage, in reading order (at most :data:`MAX_FIGURES`), each with its
    caption: the line right after it, or a "Figure N: …" line right before it.

    >>> text = ("Open the menu.\\nFigure 2: the export menu\\n![Export menu](img/menu.png)\\n\\n"
    ...         "![](shot.png \\"Invoice editor\\")\\n*The editor, with a draft open*")
    >>> for f in figures_in(text, "https://help.example.com/a/b"):
    ...     print(f.src, f.alt, f.title, f.caption, sep=" | ")
    https://help.example.com/a/img/menu.png | Export menu |  | Figure 2: the export menu
    https://help.example.com/a/shot.png |  | Invoice editor | The editor, with a draft open
    """
    lines = text.splitlines()
    found: list[Figure] = []
    for i, line in enumerate(lines):
        for alt, src, title in _images(line):
            found.append(Figure(safe_src(src, base), alt, title, _caption(lines, i)))
            if len(found) >= MAX_FIGURES:
                return found
    return found


def _images(line: str) -> list[tuple[str, str, str]]:
    out = [(" ".join(m["alt"].split()), m["angled"] or m["src"] or "", m["t1"] or m["t2"] or "")
           for m in _MARKDOWN.finditer(line)]
    for tag in _TAG.finditer(line):
        attrs = {m[1].lower(): m[2] or m[3] or m[4] or "" for m in _ATTR.finditer(tag.group(0))}
        out.append((" ".join(attrs.get("alt", "").split()), attrs.get("src", ""), attrs.get("title", "")))
    return out


def _caption(lines: list[str], i: int) -> str:
    """The caption of the image(s) on line ``i``: the next line, when it is short prose; else a
    "Figure N:" line before it."""
    if i + 1 < len(lines):
        after = lines[i + 1].strip()
        if after and len(after) <= MAX_CAPTION and not _NOT_CAPTION.match(after):
            return after.strip("*_ ")
    if i > 0:
        before = lines[i - 1].strip()
        if before and len(before) <= MAX_CAPTION and _CAPTION.match(before):
            return before.strip("*_ ")
    return ""


def description(figure: Figure) -> str:
    """What describes an image in words: its alt text, title, caption and file name.

    >>> description(Figure("https://a/img/invoice-editor_dark.png?v=2", "Editor", "", "Drafts"))
    'Editor Drafts invoice editor dark'
    """
    name = PurePosixPath(urlsplit(figure.src).path).stem
    words = " ".join(re.split(r"[-_.\s]+", unquote(name)))
    return " ".join(p for p in (figure.alt, figure.title, figure.caption, words.strip()) if p)


_LOOK_LIKE = re.compile(r"\blook(?:s|ing)?\s+like\b", re.I)


def asked_words(question: str) -> list[str]:
    """What a question asks to see: its content words, the words that ask to be shown dropped.

    >>> asked_words("What does the invoice editor look like?"), asked_words("Show me a screenshot of Export")
    (['invoice', 'editor'], ['export'])
    """
    return [w for w in tokens(_LOOK_LIKE.sub(" look ", question)) if w not in STOPWORDS and w not in VISUAL_WORDS]


def asked_stems(question: str) -> list[str]:
    """The stems of :func:`asked_words`, each once.

    >>> asked_stems("Show me a screenshot of the invoice editor")
    ['invoic', 'editor']
    """
    return list(dict.fromkeys(stem(w) for w in asked_words(question)))


def visual_intent(question: str) -> bool:
    """Whether the question asks to be shown something ("what does … look like", "a screenshot
    of", "show me", "is there a diagram").

    >>> [visual_intent(q) for q in ("What does the invoice editor look like?", "Is there a flowchart of approvals?",
    ...                             "How can I see the size of my mails?", "Turn images into ascii art")]
    [True, True, False, False]
    """
    return bool(_ASKS.search(question[:2000]))


def match(stems: list[str], figure: Figure) -> float:
    """The share of the question's stems (:func:`asked_stems`) the image's description holds.

    >>> match(["invoic", "editor"], Figure("editor.png", "The invoice editor"))
    1.0
    """
    if not stems:
        return 0.0
    held = {stem(w) for w in tokens(description(figure))}
    return sum(s in held for s in stems) / len(stems)

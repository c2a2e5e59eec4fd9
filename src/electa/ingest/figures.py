"""Images in passages (SPEC F, the ``multimodal`` mode): how a loader writes one into a passage's
text, and how a search reads it back.

A passage keeps its images where they stood, as Markdown writes them: ``![alt](src "title")``,
with the caption on the line right after (an HTML ``<figcaption>``, or the italic line a
Markdown author writes under a screenshot), or before it when it reads "Figure 3: …". Kept in
the text, an image's words are searched by every leg like the rest of its page, go where the
page goes (deleted, updated, filtered by tenant and access with it), and need no index of their
own. :func:`figures_in` reads them back out of a passage a search found.

Nothing in a passage is trusted: an address that is not http(s) or a plain path (``javascript:``,
``data:``) is never returned, and a loader never keeps one in the text at all
(:func:`safe_markdown_images`, :func:`image_line`).
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from pathlib import PurePosixPath
from urllib.parse import quote, unquote, urljoin, urlsplit

from electa.text import content_tokens, stem, tokens
from electa.text.markdown import code_blanked, escaped
from electa.types import Figure

# ![alt](src "title") or ![alt](<src with spaces> 'title'); alt and title on one line, balanced
# parentheses in the address. No part may hold a "[" (nor an angled address a "<"), so a match
# started at one "![" never scans past the next, and runs of blanks are bounded: a hostile line
# (a million "![a](" or spaces) costs linear time, and a data: payload of megabytes is one match.
# (an alt may hold one level of brackets, "![[x][l]](data:…)", as CommonMark reads it)
_MARKDOWN = re.compile(r"!\[(?P<alt>(?:[^\[\]\n]|\[[^\[\]\n]*\])*)\]\([ \t]{0,20}(?:<(?P<angled>[^<>\[\]\n]*)>"
                       r"|(?P<src>(?:[^\s()\[\]\"'<]|\([^\s()\[\]]*\))(?:[^\s()\[\]]|\([^\s()\[\]]*\))*)?)"
                       r"(?:[ \t]{1,20}(?:\"(?P<t1>[^\"\n]{0,300})\"|'(?P<t2>[^'\n]{0,300})'|\((?P<t3>[^()\n]{0,300})\)))?"
                       r"[ \t]{0,20}\)")
# A raw <img> a Markdown author wrote (over lines too); its attributes read one by one. A quoted
# value may hold ">" ("Settings > Billing"), never "<": so no match runs past the next tag.
_TAG = re.compile(r"""<img\b(?:[^<>"']|"[^"<]*"|'[^'<]*')*>""", re.I)
RAW_IMAGE = _TAG  # (what a Markdown reader must not take for code: electa.text.markdown.outside_code)
_ATTR = re.compile(r"""(?<![\w-])([a-z-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.I)
# Where an <img> names an address (a srcset names several, each before its size).
_ADDRESSES = ("src", "srcset", "data-srcset")
# A link reference definition ("[logo]: data:image/png;base64,…"), which an image may point to.
_REFERENCE = re.compile(r"^(?P<head>[ ]{0,3}\[(?P<label>[^\]\n]{1,999})\]:)[ \t]{0,20}(?:<(?P<rangled>[^<>\n]*)>"
                        r"|(?P<rdest>\S+))(?P<rest>[^\n]*)$", re.M)
_MARKUP = re.compile(rf"(?P<image>{_MARKDOWN.pattern})|(?P<tag>{_TAG.pattern})|(?P<ref>{_REFERENCE.pattern})", re.I | re.M)
# An image that names a reference definition: ![alt][label], ![label][] or ![label].
_IMAGE_REFERENCE = re.compile(r"!\[(?P<alt>(?:[^\[\]\n]|\[[^\[\]\n]*\])*)\](?:\[(?P<label>[^\[\]\n]*)\])?(?!\()")
# Where a page that loads its images lazily keeps the real address (src holds a placeholder).
LAZY_SRC = ("data-src", "data-original", "data-lazy-src")
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
    r"""``src`` resolved against the page's address ``base``, when it is one a browser may load:
    http(s), or a path on the page's own host; '' otherwise (``javascript:``, ``data:``,
    ``file:``, and a ``//host`` address with no page to resolve it against).

    Character references are read first, as a Markdown renderer reads them, and blanks and
    control characters are not allowed to hide a scheme (``jav&#x61;script:``, ``java\tscript:``).

    >>> safe_src("img/export.png", "https://help.example.com/docs/export")
    'https://help.example.com/docs/img/export.png'
    >>> safe_src("javascript:alert(1)"), safe_src("jav&#x61;script:alert(1)"), safe_src("data:image/png;base64,AAAA")
    ('', '', '')
    >>> safe_src("/a b.png"), safe_src("//tracker.example/p.gif"), safe_src("shot.png?a=1&amp;b=2")
    ('/a%20b.png', '', 'shot.png?a=1&b=2')
    >>> safe_src("&amp;#106;avascript:alert(1)"), safe_src("//cdn.acme.test/a.png", "https://help.acme.test/docs/")
    ('', 'https://cdn.acme.test/a.png')
    """
    src = html.unescape(src).strip()
    if not src:
        return ""
    # (read as an HTML attribute and as a Markdown destination, which resolves backslash escapes)
    probes = {_probe(src, escapes=False), _probe(src, escapes=True)}
    schemes = {urlsplit(p).scheme.lower() if _SCHEME.match(p) else "" for p in probes}
    if schemes - {"", "http", "https"}:
        return ""
    if schemes == {""}:
        if base and urlsplit(base).scheme.lower() in ("http", "https"):
            src = urljoin(base, src.replace("\\", "/"))
        elif any(p[:2].replace("\\", "/") == "//" for p in probes):
            return ""
    return quote(src, safe=":/?#[]@!$&'()*+,;=%~")


_BLANKS = re.compile(r"[\x00-\x20\x7f]+")
_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")


def _probe(src: str, escapes: bool = True) -> str:
    r"""``src`` as a renderer may end up reading it: backslash escapes resolved (Markdown's
    ``data\:``), character references read as often as they nest (``&amp;#106;`` is ``j``
    twice read), blanks and control characters dropped."""
    probe = src
    for _ in range(4):
        probe, before = html.unescape(_ESCAPED.sub(r"\1", probe) if escapes else probe), probe
        if probe == before:
            break
    return _BLANKS.sub("", probe)
_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*:", re.I)


def lazy_src(attrs: Mapping[str, str | None]) -> str:
    """The address an ``<img>``'s attributes load: ``src``, unless a lazy-loading page left a
    placeholder there (none, or a ``data:`` image) and the real one in ``data-src`` or the like.

    >>> lazy_src({"src": "data:image/gif;base64,R0lG", "data-src": "/shots/export.png"})
    '/shots/export.png'
    """
    src = (attrs.get("src") or "").strip()
    if src and not src.lower().startswith("data:"):
        return src
    for name in LAZY_SRC:
        if (attrs.get(name) or "").strip():
            return (attrs.get(name) or "").strip()
    return src


def is_pixel(attrs: Mapping[str, str | None]) -> bool:
    """Whether an ``<img>`` is drawn at most 2 pixels wide or high (a tracking pixel or a
    spacer: nothing a reader sees).

    >>> is_pixel({"width": "1", "height": "1"}), is_pixel({"width": "2px"}), is_pixel({"width": "640"})
    (True, True, False)
    """
    for name in ("width", "height"):
        size = re.match(r"\s*(\d{1,6})\s*(?:px)?\s*$", attrs.get(name) or "")
        if size and int(size.group(1)) <= 2:
            return True
    return False


_SOFTENED = str.maketrans({"[": "(", "]": ")", "\\": " ", "`": "'", "<": "\u2039"})


def image_line(alt: str, src: str, title: str = "", base: str = "") -> str:
    """An image as a passage keeps it (a loader's): Markdown's syntax, ``src`` made safe (an
    unsafe one left empty, so the alt text stays searchable; a ``//host`` one resolved against
    the page's address ``base``), brackets, backticks and "<" in the alt text and title softened
    and backslashes dropped, so the line reads back as one image, escapes nothing after it and
    opens no code span or tag.

    >>> image_line("The [Export] button\\\\", "shots/export dialog.png", 'Export "now"')
    '![The (Export) button](shots/export%20dialog.png "Export \\'now\\'")'
    """
    # (a backtick or a "<" in them would pair with a code span or open a tag beyond the image)
    alt = " ".join(alt.translate(_SOFTENED).split())[:500]
    title = " ".join(title.replace('"', "'").translate(_SOFTENED).split())[:300]
    if base and src.strip().replace("\\", "/").startswith("//"):
        src = safe_src(src, base)
    src = safe_src(src).replace("(", "%28").replace(")", "%29") or ("<>" if title else "")
    return f"![{alt}]({src}{f' {chr(34)}{title}{chr(34)}' if title else ''})"


def safe_markdown_images(text: str, base: str = "") -> str:
    r"""Markdown prose (code is the caller's to leave out: :func:`electa.text.markdown.outside_code`)
    with every image whose address a browser must not load (:func:`safe_src`) left with none,
    a ``data:`` image's payload (megabytes of base64 no reader or model should see) going with
    it; a raw ``<img>`` tag with such an address written as Markdown, and one that is a
    tracking pixel dropped; a reference definition that an image names and that points to such
    an address left pointing nowhere. Everything else stays exactly as the page wrote it:
    passage text is the page's own Markdown, to be shown as text (only ``hit.images``, read by
    :func:`figures_in`, is promised safe addresses).

    >>> safe_markdown_images("![Logo](data:image/png;base64,iVBORw0KGgo=) Hi ![x](jav&#x61;script:alert(1)) ![ok](a.png)")
    '![Logo]() Hi ![x]() ![ok](a.png)'
    >>> safe_markdown_images('<img src="s.png" alt="Settings > Billing"><img src="data:image/png;base64,AAAA" alt="A">'
    ...                      '<img src="p.gif" width=1>')
    '<img src="s.png" alt="Settings > Billing">![A]()'
    >>> safe_markdown_images("![logo][l] [mail][m]\n[l]: data:image/png;base64,AAAA 'Logo'\n[m]: mailto:help@acme.test")
    "![logo][l] [mail][m]\n[l]: <> 'Logo'\n[m]: mailto:help@acme.test"
    """
    used = {_label(m["label"] or m["alt"]) for m in _IMAGE_REFERENCE.finditer(text)}
    return _MARKUP.sub(lambda m: _made_safe(m, used, base), text)


def _label(label: str) -> str:
    return " ".join(label.split()).casefold()


def _made_safe(m: re.Match[str], used: set[str], base: str) -> str:
    if m.re is _MARKDOWN or m["image"] is not None:
        dest = m["angled"] if m["angled"] is not None else m["src"] or ""
        return m.group(0) if not dest.strip() or safe_src(dest, base) else f"![{m['alt']}]()"
    if m["tag"] is not None:
        attrs = _attributes(m["tag"])
        if is_pixel(attrs):
            return ""
        if all(safe_src(a, base) for a in _addresses(attrs)):  # (Markdown written inside what is no tag is still read)
            return _MARKDOWN.sub(lambda inner: _made_safe(inner, used, base), m.group(0)) if "![" in m.group(0) else m.group(0)
        alt, src, title = _tag_image(attrs)
        return image_line(alt, src if safe_src(src, base) else "", title, base)
    dest = m["rangled"] if m["rangled"] is not None else m["rdest"] or ""
    if not dest.strip() or safe_src(dest, base) or m["label"].startswith("^"):
        return m.group(0)  # (a footnote, or a safe one)
    if _label(m["label"]) not in used and not _probe(dest).lower().startswith("data:"):
        return m.group(0)  # (a link's definition: its payload, when it has one, is all that goes)
    return f"{m['head']} <>{m['rest']}"


def _addresses(attrs: Mapping[str, str | None]) -> list[str]:
    """Every address an ``<img>``'s attributes name (each candidate of a srcset, before its size)."""
    found = []
    for name in (*_ADDRESSES, *LAZY_SRC):
        value = (attrs.get(name) or "").strip()
        found += [part.split()[0] for part in value.split(",") if part.strip()] if name.endswith("srcset") else \
            [value] if value else []
    return found


def _tag_image(attrs: Mapping[str, str | None]) -> tuple[str, str, str]:
    """``(alt, src, title)`` of an ``<img>`` (character references read; the lazy address)."""
    return html.unescape(attrs.get("alt") or ""), lazy_src(attrs), html.unescape(attrs.get("title") or "")


def _attributes(tag: str) -> dict[str, str | None]:
    """A tag's attributes, the first of a name winning (as a browser reads them)."""
    found: dict[str, str | None] = {}
    for m in _ATTR.finditer(tag):
        found.setdefault(m[1].lower(), m[2] if m[2] is not None else m[3] if m[3] is not None else m[4])
    return found


def figures_in(text: str, base: str = "") -> list[Figure]:
    """The images of a passage, in reading order (at most :data:`MAX_FIGURES`), each with its
    caption: the line right after it, or a "Figure N: …" line right before it. An image written
    in code (a span or a fenced block) is code, shown as written: none.

    >>> text = ("Open the menu.\\nFigure 2: the export menu\\n![Export menu](img/menu.png)\\n\\n"
    ...         "![](shot.png \\"Invoice editor\\")\\n*The editor, with a draft open*")
    >>> for f in figures_in(text, "https://help.example.com/a/b"):
    ...     print(f.src, f.alt, f.title, f.caption, sep=" | ")
    https://help.example.com/a/img/menu.png | Export menu |  | Figure 2: the export menu
    https://help.example.com/a/shot.png |  | Invoice editor | The editor, with a draft open
    """
    lines = text.splitlines()
    found: list[Figure] = []
    # (read outside code: an image written in a code span or block is shown as written, not loaded)
    for i, line in enumerate(code_blanked("\n".join(lines), raw=_TAG).split("\n")):
        for alt, src, title in _images(line):
            found.append(Figure(safe_src(src, base), alt, title, _caption(lines, i)))
            if len(found) >= MAX_FIGURES:
                return found
    return found


def _images(line: str) -> list[tuple[str, str, str]]:
    # (an opener after an odd run of backslashes is escaped, as CommonMark reads it: "\\![x](…)"
    # and "\\<img …>" are text; after an even run, a backslash then an image)
    out = [(" ".join(m["alt"].split()), m["angled"] or m["src"] or "", m["t1"] or m["t2"] or m["t3"] or "")
           for m in _MARKDOWN.finditer(line) if not escaped(line, m.start())]
    for tag in _TAG.finditer(line):
        if escaped(line, tag.start()):
            continue
        attrs = _attributes(tag.group(0))
        if not is_pixel(attrs):
            alt, src, title = _tag_image(attrs)
            out.append((" ".join(alt.split()), src, title))
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
    return [w for w in content_tokens(_LOOK_LIKE.sub(" look ", question)) if w not in VISUAL_WORDS]


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

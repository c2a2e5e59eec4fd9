"""reStructuredText's inline markup, read in one pass (:mod:`electa.text.rst` reads the blocks).

Emphasis and strong read as their text, literals and code roles (``:func:``, ``:code:`` ...) as
Markdown code, references as their label (``:ref:`Usage <usage>``` → "Usage", ```Home
<https://x>`_`` → "Home"), footnote references dropped, raw roles dropped with what they hold.
Each kind of markup whose closing string appears nowhere after an opening is never searched for
again, so a paragraph of unclosed markup reads in linear time. :func:`role_shown` is what Sphinx
shows for a role; the MyST reader reads its roles through it too.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from typing import Protocol

from electa.text.markdown import code_span

# docutils' reference names and footnote labels
SIMPLE_NAME = r"(?:(?!_)\w)+(?:[-._+:](?:(?!_)\w)+)*"
# Roles Sphinx shows as code.
_CODE_ROLES = frozenset(
    "code literal samp file command program option envvar kbd mimetype makevar regexp token func meth class mod"
    " attr data const exc obj any type macro member var struct enum enumerator union expr texpr".split())


class Roles(Protocol):
    """What inline markup reads of its page: the roles it defines, its substitutions (as
    written, and as read), what they may still add, and the count of what was not read."""

    subs: dict[str, str]
    shown: dict[str, str]
    budget: int
    dropped: Counter[str]

    def resolve(self, name: str) -> tuple[str, bool]:
        """The kind a role of ``name`` reads as, and whether it hides what it holds."""
        ...

    def default(self) -> tuple[str, bool]:
        """The same for text of the page's default role."""
        ...


_ESCAPE = re.compile(r"\\(?:([ \n])|(.))", re.S)


def unescaped(text: str) -> str:
    """``text`` with reStructuredText's escapes read: "\\*" is "*", an escaped space nothing."""
    return _ESCAPE.sub(lambda m: m.group(2) or "", text)


_OPENS_AFTER = frozenset(" \t\n'\"([{<-/:\u2018\u201c\u00ab")


def _opener(ch: str) -> bool:
    """Whether inline markup may start after ``ch``: whitespace, or punctuation that opens or
    delimits, in any script ("、", "「", "（", "¿"), as docutils reads it."""
    return ch in _OPENS_AFTER or ch.isspace() or unicodedata.category(ch) in ("Ps", "Pi", "Pf", "Pd", "Po")


_SPECIAL = re.compile(r"[\\*`|_\[:]")
_ROLE_BEFORE = re.compile(r":([\w][\w.+:-]{0,60}):`")
_ROLE_AFTER = re.compile(r":([\w][\w.+:-]{0,60}):")
_NOTE_REF = re.compile(rf"\[(?=[^\]\n]{{1,100}}\])(#(?:{SIMPLE_NAME})?|\*|\d+)\]__?")
_CITE_REF = re.compile(rf"\[(?=[^\]\n]{{1,100}}\])({SIMPLE_NAME})\]__?")


class Inline:
    """One paragraph's inline markup read in a single pass (see the module's docstring)."""

    def __init__(self, text: str, reader: Roles, expand: bool = True) -> None:
        self.text, self.reader, self.expand = text, reader, expand
        self.dead: set[str] = set()

    def opens(self, i: int, size: int) -> bool:
        t = self.text
        return (i == 0 or _opener(t[i - 1])) and i + size < len(t) and not t[i + size].isspace()

    def close(self, end: str, start: int) -> int:
        """Where ``end`` closes markup whose text starts at ``start``; -1 where nothing after
        ``start`` can, and then never searched for again."""
        if end in self.dead:
            return -1
        t, k = self.text, start + 1
        while True:
            k = t.find(end, k)
            if k < 0:
                self.dead.add(end)
                return -1
            after = k + len(end)
            if (not t[k - 1].isspace() and (t[k - 1] != "\\" or end == "``")  # (a literal escapes nothing)
                    and (after >= len(t) or not t[after].isalnum())
                    and (end != "*" or t[after : after + 1] != "*")
                    # (nor a backtick: ``:mod:`x``` is a literal of ":mod:`x`", as docutils reads it)
                    and (end != "``" or t[after : after + 1] != "`")):
                return k
            k += 1

    def enclosed(self, i: int, opening: str, closing: str) -> tuple[str, int] | None:
        """Markup at ``i`` whose text reads as itself (emphasis, strong, an inline target): that
        text and where the markup ends; None where it opens or closes nowhere."""
        size = len(opening)
        if self.opens(i, size):
            k = self.close(closing, i + size)
            if k > i + size:
                return unescaped(self.text[i + size : k]), k + len(closing)
        return None

    def read(self) -> str:
        t, out, i, n = self.text, [], 0, len(self.text)
        while i < n:
            m = _SPECIAL.search(t, i)
            if not m:
                out.append(t[i:])
                break
            k = m.start()
            out.append(t[i:k])
            said, i = self.markup(k)
            out.append(said)
        return "".join(out)

    def markup(self, i: int) -> tuple[str, int]:
        t, ch = self.text, self.text[i]
        if ch == "\\":
            if i + 1 >= len(t):
                return "", i + 1
            return ("" if t[i + 1] in " \n" else t[i + 1]), i + 2
        if t.startswith("``", i) and self.opens(i, 2):
            k = self.close("``", i + 2)
            if k > i + 2:
                return code_span(t[i + 2 : k]), k + 2
            return "``", i + 2
        if ch == ":" and (i == 0 or _opener(t[i - 1])):
            m = _ROLE_BEFORE.match(t, i)
            if m and self.opens(m.end() - 1, 1):
                k = self.close("`", m.end())
                if k > m.end():
                    return self.role(m.group(1), t[m.end() : k]), k + 1
            return ":", i + 1
        if t.startswith("_`", i):  # an inline target reads as its text
            return self.enclosed(i, "_`", "`") or ("_`", i + 2)
        if ch == "`" and self.opens(i, 1):
            k = self.close("`", i + 1)
            if k > i + 1:
                inner, end = t[i + 1 : k], k + 1
                if t.startswith("__", end) or t.startswith("_", end):
                    end += 2 if t.startswith("__", end) else 1
                    return _label(inner), end
                m = _ROLE_AFTER.match(t, end)
                if m:
                    return self.role(m.group(1), inner), m.end()
                return self.role("", inner), end  # (the page's default role)
            return "`", i + 1
        if t.startswith("**", i):
            return self.enclosed(i, "**", "**") or ("**", i + 2)
        if ch == "*":
            return self.enclosed(i, "*", "*") or ("*", i + 1)
        if ch == "|" and self.opens(i, 1):
            k = t.find("|", i + 1, i + 130)
            if k > i + 1 and not t[k - 1].isspace():
                name, end = t[i + 1 : k], k + 1
                end += 2 if t.startswith("__", end) else 1 if t.startswith("_", end) else 0
                return self.substitute(name), end
            return "|", i + 1
        if ch == "[":
            m = _NOTE_REF.match(t, i)
            if m:
                return "", m.end()
            m = _CITE_REF.match(t, i)
            if m:
                return f"[{m.group(1)}]", m.end()
            return "[", i + 1
        if ch == "_" and i and t[i - 1].isalnum():
            end = i + 2 if t.startswith("__", i) else i + 1
            if end >= len(t) or not (t[end].isalnum() or t[end] == "_"):
                start = i
                while start > 0 and i - start < 30 and (t[start - 1].isalnum() or t[start - 1] in "_.-"):
                    start -= 1
                if t[start] != "_":  # ("name_" is a reference; "__init__" is no markup)
                    return "", end
        return ch, i + 1

    def role(self, name: str, text: str) -> str:
        """Interpreted text as its role shows it; ``name`` "" is the page's default role (any of
        its ``default-role`` directives that reads as nothing makes all such text nothing)."""
        reader = self.reader
        kind, hidden = reader.resolve(name) if name else reader.default()
        if hidden:
            reader.dropped["hidden role"] += 1
            return ""
        return role_shown(kind, unescaped(text))

    def substitute(self, name: str) -> str:
        if not self.expand:
            return name
        reader = self.reader
        key = name if name in reader.subs else " ".join(name.lower().split())
        if key not in reader.subs:
            return name
        if key not in reader.shown:  # (read once, its own references as their names: never recursively)
            reader.shown[key] = Inline(reader.subs[key], reader, expand=False).read()
        text = reader.shown[key]
        if len(text) > reader.budget:
            return name
        reader.budget -= len(text)
        return text


def role_shown(kind: str, text: str) -> str:
    """What Sphinx shows for a role of ``kind`` (its domain dropped: "func", not "py:func")
    around ``text``: a reference its title, code as code (``~a.b.C`` as "C"), a PEP "PEP 8".
    The reStructuredText and MyST readers both read roles so.

    >>> role_shown("ref", "the terms <terms>"), role_shown("class", "~a.b.C"), role_shown("pep", "8")
    ('the terms', '`C`', 'PEP 8')

    A reference naming no title shows its target's, which lives in another file: its words
    stand for it, not a path (Django's ``:doc:`/howto/custom-template-tags```).

    >>> role_shown("doc", "/howto/custom-template-tags"), role_shown("ref", "host-headers_virtual-hosting")
    ('custom template tags', 'host headers virtual hosting')
    >>> role_shown("doc", "/howto/static-files/index"), role_shown("doc", "urls#x"), role_shown("doc", "index")
    ('static files', 'urls', 'index')
    """
    if kind in ("abbr", "math", "sub", "sup", "subscript", "superscript", "emphasis", "strong", "title-reference",
                "t", "title"):
        return _label(text) if kind in ("title-reference", "t", "title") else text
    if kind in ("pep", "pep-reference", "rfc", "rfc-reference"):
        return f"{kind[:3].upper()} {_label(text)}"
    if kind in ("guilabel", "menuselection"):
        return _label(text).replace("&&", "\x00").replace("&", "").replace("\x00", "&").replace("-->", ">")
    shown = _label(text)
    if kind in ("doc", "ref") and not _titled(text):
        target = shown.lstrip("#")
        if kind == "doc":  # (the page's name, or its folder's for an index page; an anchor is no name)
            parts = [p for p in shown.partition("#")[0].split("/") if p not in ("", ".", "..")]
            if len(parts) > 1 and parts[-1] == "index":
                parts.pop()
            if not parts:
                return shown
            target = parts[-1]
        return " ".join(_SLUG.split(target)).strip() or shown
    if kind in _CODE_ROLES:
        shown = shown.lstrip("!")
        if shown.startswith("~"):
            shown = shown[1:].rsplit(".", 1)[-1]
        return code_span(shown)
    return shown


_SLUG = re.compile(r"[-_\s]+")


def _titled(text: str) -> bool:
    """Whether a reference's text names a title before its target ("Title <target>")."""
    text = text.strip()
    return text.endswith(">") and "<" in text and bool(text[: text.rfind("<")].strip())


def _label(text: str) -> str:
    """A reference's shown text: "Title <target>" reads "Title", "<target>" alone its target."""
    text = " ".join(text.split())
    if text.endswith(">") and "<" in text:
        head = text[: text.rfind("<")].strip()
        return unescaped(head) if head else text[text.rfind("<") + 1 : -1]
    return unescaped(text)

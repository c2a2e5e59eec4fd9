r"""reStructuredText read by patterns, in linear time, with nothing shared between pages (SPEC A1).

Sphinx projects, Python packages and CMake write their documentation in reStructuredText. The
reference reader, docutils, cannot be run on a tenant's page in-process: nested substitutions
grow exponentially, auto-symbol footnotes take quadratic memory, unclosed inline markup parses
in quadratic time, ``.. role::`` writes a process-global registry one page shares with the
next, and the raw role and directive pass hidden HTML through. This reader does what a search
index needs and nothing more:

- **Sections** by adornment (underline, or over- and underline), levels in the order their
  styles first appear, as docutils assigns them; a style used once by the first title is the
  page's title.
- **Blocks**: paragraphs, bullet and enumerated lists, definition and field lists, block
  quotes, literal blocks (``::``) and doctest blocks as fenced code, grid and simple tables as
  rows of cells joined by `` | ``, line blocks, footnotes and citations as text.
- **Directives** by name: admonitions, ``versionadded``/``versionchanged``/``deprecated``
  (Sphinx's wording), code blocks, figures and images (their alt text and caption), list and CSV
  tables, and a domain's descriptions (``py:function`` and the like: the signature as code, then
  its text). An unknown directive's arguments and text are read. Not read, and each counted in
  :attr:`Read.dropped`: what a visitor never sees or what lives in another file — comments,
  hyperlink targets, ``raw``, ``only``, ``ifconfig``, ``include``, ``literalinclude``,
  ``meta``, ``toctree``, ``contents``, ``testsetup``, the ``auto*`` directives, a role's
  definition, and any directive whose ``:class:`` hides it.
- **Inline markup** stripped in one pass: emphasis and strong read as their text, literals and
  code roles (``:func:``, ``:code:`` ...) as Markdown code, references as their label
  (``:ref:`Usage <usage>``` → "Usage", ```Home <https://x>`_`` → "Home"), footnote references
  dropped, raw roles dropped with what they hold. Each kind of markup whose closing string
  appears nowhere after an opening is never searched for again, so a page of unclosed markup
  reads in linear time.
- **Substitutions** (``.. |name| replace:: text``) are expanded once, never recursively, and
  their expansions together may add no more than the page's own length (then a reference reads
  as its name); an image substitution reads as its alt text.

Nesting deeper than :data:`MAX_DEPTH` reads as plain lines, so no page can exhaust the stack.
"""

from __future__ import annotations

import csv
import itertools
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

MAX_DEPTH = 24  # nested directives, lists and quotes read as structure; deeper reads as lines

_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_BULLET = re.compile(r"[-*+\u2022\u2023\u2043](?: +|\Z)")
_ENUMERATOR = r"(?:\d{1,9}|#|[a-zA-Z]|[ivxlcdmIVXLCDM]{1,12})"
_ENUM = re.compile(rf"{_ENUMERATOR}[.)](?: +|\Z)|\({_ENUMERATOR}\)(?: +|\Z)")
_FIELD = re.compile(r":((?:[^:`\\\s]|\\.)(?:[^:`\\]|\\.){0,120}):(?: +|\Z)")
_OPTION = re.compile(r":([\w.-]{1,60}):(?: +(.*)|\Z)")
_TARGET = re.compile(r"_(?:`[^`]{0,400}`|[^:`]{0,400}):(?: |\Z)|__(?: |\Z)")
_FOOTNOTE = re.compile(r"\[(#[\w.-]{0,60}|\*|\d{1,9}|[\w.-]{1,60})\](?: +|\Z)")
_SUBSTITUTION = re.compile(r"\|([^|\s](?:[^|]{0,120}[^|\s])?)\| +([\w][\w:+.-]{0,60})::(?: +(.*)|\Z)")
_DIRECTIVE = re.compile(r"([\w][\w:+.-]{0,60})::(?: +(.*)|\Z)")
_GRID = re.compile(r"\+(?:[-=]+\+)+[ \t]*\Z")
_SIMPLE = re.compile(r"=+(?: +=+)+[ \t]*\Z")
_STRONG_LINE = re.compile(r"\*\*([^*\s](?:[^*]{0,150}[^*\s])?)\*\*:?")
_HIDDEN_CLASS = re.compile(r"(?:^|\s)(?:hidden|hide|d-none|sr-only|visually-hidden|screen-reader-text|invisible)(?:\s|$)",
                           re.I)

# Read as nothing: a visitor never sees them, or they only steer the build or pull in another
# file (which this page's bytes do not hold: ``include`` would read the server's disk).
_DROPPED = frozenset(
    "raw only ifconfig include literalinclude meta toctree contents sectnum section-numbering header footer"
    " highlight default-role role testsetup testcleanup tabularcolumns target-notes title index currentmodule"
    " module automodule autoclass autofunction automethod autoattribute autoexception autodata autosummary"
    " autoprogram autodecorator autoproperty autotypealias autonewtypealias graphviz digraph graph inheritance-diagram"
    " plantuml uml mermaid cssclass rst-class spelling:word-list program default-domain codeauthor sectionauthor"
    " moduleauthor cmake-module kernel-doc".split())
_COUNTED = frozenset("raw only ifconfig include literalinclude testsetup testcleanup cmake-module kernel-doc".split())
# A page's fields that steer Sphinx's build, not what the page says.
_BUILD_FIELDS = frozenset("orphan tocdepth nocomments nosearch no-search hide-toc hide-navigation hide-footer".split())
_CODE = frozenset(
    "code code-block sourcecode doctest testcode testoutput productionlist parsed-literal prompt ipython"
    " jupyter-execute highlight-block".split())
_TITLED = frozenset("admonition topic sidebar rubric table csv-table list-table centered".split())
_VERSION = {"versionadded": "New in version", "versionchanged": "Changed in version",
            "deprecated": "Deprecated since version", "versionremoved": "Removed in version"}
# A domain's description of an object: its arguments are a signature, read as code.
_DESCRIPTION = re.compile(
    r"(?:(?:py|c|cpp|js|rst|std|rb|php|cmake):)?(?:function|class|method|attribute|data|exception|decorator|"
    r"classmethod|staticmethod|property|member|type|macro|var|struct|enum|enumerator|union|concept|describe|object|"
    r"option|cmdoption|envvar|confval|setting|directive|role|command|variable|genex|signature)\Z")
# Roles Sphinx shows as code.
_CODE_ROLES = frozenset(
    "code literal samp file command program option envvar kbd mimetype makevar regexp token func meth class mod"
    " attr data const exc obj any type macro member var struct enum enumerator union expr texpr".split())


@dataclass
class Read:
    """A page read: its title ("" where it has none) and its lines, each a heading ``(level,
    text)`` or a line of text (code fenced with three backticks), and how many of each thing
    was not read."""

    title: str
    lines: list[tuple[int, str] | str]
    dropped: Counter[str] = field(default_factory=Counter)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _extent(lines: list[str], i: int, least: int) -> int:
    """The end of the block from ``i`` whose lines are blank or indented at least ``least``,
    trailing blank lines left out."""
    j = i
    while j < len(lines) and (not lines[j].strip() or _indent(lines[j]) >= least):
        j += 1
    while j > i and not lines[j - 1].strip():
        j -= 1
    return j


def _dedent(lines: list[str]) -> list[str]:
    margin = min((_indent(x) for x in lines if x.strip()), default=0)
    return [x[margin:] for x in lines]


def _adornment(line: str) -> bool:
    """A line of one punctuation character repeated (a title's adornment, or a transition).
    (A regular expression with a back-reference keeps a frame per repeat: 100 MB for a 1 MB line.)"""
    mark = line.rstrip()
    return len(mark) >= 2 and mark[0] in _PUNCTUATION and mark.count(mark[0]) == len(mark)


class _Reader:
    """One page's reading: every table it keeps (substitutions, section styles, counts) is its
    own, so nothing one page defines reaches another."""

    def __init__(self, size: int) -> None:
        self.items: list[tuple[str, str] | tuple[int, str]] = []  # ("t"|"c"|"", text) or (style index, title)
        self.styles: list[tuple[str, bool]] = []
        self.subs: dict[str, str] = {}
        self.shown: dict[str, str] = {}  # substitutions as read
        self.dropped: Counter[str] = Counter()
        self.budget = size + 10_000  # characters substitutions may add

    # -- blocks --------------------------------------------------------------------------------

    def body(self, lines: list[str], depth: int) -> None:
        top = depth == 0
        i, n = 0, len(lines)
        unclosed_table = False
        while i < n:
            line = lines[i]
            if not line.strip():
                self.items.append(("", ""))
                i += 1
                continue
            if _indent(line):  # a block quote
                j = _extent(lines, i, 1)
                self.nested(_dedent(lines[i:j]), depth)
                i = j
                continue
            if line.startswith("__ ") or line.rstrip() == "__":  # an anonymous hyperlink target
                i = _extent(lines, i + 1, 1)
                self.dropped["hyperlink target"] += 1
                continue
            if line.startswith(".. ") or line.rstrip() == "..":  # (before adornments: ".." is one)
                j = _extent(lines, i + 1, 1)
                self.explicit(line[3:].strip(), _dedent(lines[i + 1 : j]), depth)
                i = j
                continue
            nxt = lines[i + 1] if i + 1 < n else ""
            if (_adornment(line) and i + 2 < n and nxt.strip() and not _adornment(nxt)
                    and lines[i + 2].rstrip() and lines[i + 2].strip()[0] == line[0] and _adornment(lines[i + 2])):
                self.heading((line[0], True), nxt.strip(), top)
                i += 3
                continue
            if (nxt and not _indent(nxt) and _adornment(nxt) and not _adornment(line)
                    and (len(nxt.strip()) >= len(line.strip()) or len(nxt.strip()) >= 4)
                    and not _SIMPLE.match(line) and not _GRID.match(line)):
                self.heading((nxt[0], False), line.strip(), top)
                i += 2
                continue
            if _adornment(line) and len(line.strip()) >= 4:  # a transition, or an adornment without its title
                i += 1
                continue
            if _GRID.match(line):
                j = i
                while j < n and lines[j][:1] in ("+", "|"):
                    j += 1
                self.grid(lines[i:j])
                i = j
                continue
            if _SIMPLE.match(line) and not unclosed_table:
                j = self.simple(lines, i)
                if j > i:
                    i = j
                    continue
                unclosed_table = True  # (no border after this one closes a table: none later will either)
            marker = _BULLET.match(line) or _ENUM.match(line)
            if marker:
                j = _extent(lines, i + 1, 1)
                label = "- " if _BULLET.match(line) else line[: marker.end()].strip() + " "
                self.item(label, [line[marker.end():], *_dedent(lines[i + 1:j])], depth)
                i = j
                continue
            fld = _FIELD.match(line)
            if fld:
                j = _extent(lines, i + 1, 1)
                value = [line[fld.end():], *_dedent(lines[i + 1:j])]
                if any(x.strip() for x in value) and fld.group(1).lower() not in _BUILD_FIELDS:
                    self.item(_unescaped(fld.group(1)) + ": ", value, depth)
                i = j
                continue
            if line.startswith("| ") or line.rstrip() == "|":  # a line block
                self.items.append(("t", line[2:]))
                i += 1
                continue
            if line.startswith(">>> "):
                j = i
                while j < n and lines[j].strip():
                    j += 1
                self.items.append(("c", "\n".join(lines[i:j])))
                i = j
                continue
            j = i + 1
            while j < n and lines[j].strip() and not _indent(lines[j]):
                j += 1
            if j == i + 1 and j < n and _indent(lines[j]) and lines[j].strip():  # a definition list's term
                self.items.append(("t", line))
                k = _extent(lines, j, 1)
                self.nested(_dedent(lines[j:k]), depth)
                i = k
                continue
            strong = _STRONG_LINE.fullmatch(line.strip()) if top and j == i + 1 else None
            if strong:  # ("**Example 1: Copying a file**" alone: a heading in all but markup)
                self.items.append(("s", strong.group(1)))
                i = j
                continue
            i = self.paragraph(lines, i, j)

    def paragraph(self, lines: list[str], i: int, j: int) -> int:
        para = lines[i:j]
        last = para[-1].rstrip()
        if not last.endswith("::"):
            self.items.append(("t", "\n".join(para)))
            return j
        # "Example::" reads "Example:", " ::" and a lone "::" read as nothing; an indented block follows as code.
        para[-1] = "" if last == "::" else last[:-3] if last.endswith(" ::") else last[:-1]
        text = "\n".join(para).strip()
        if text:
            self.items.append(("t", text))
        k = j
        while k < len(lines) and not lines[k].strip():
            k += 1
        if k < len(lines) and _indent(lines[k]):
            e = _extent(lines, k, 1)
            self.items.append(("c", "\n".join(_dedent(lines[k:e]))))
            return e
        return j

    def nested(self, lines: list[str], depth: int) -> None:
        if depth + 1 >= MAX_DEPTH:
            self.items.append(("t", "\n".join(x.strip() for x in lines if x.strip())))
        else:
            self.body(lines, depth + 1)
            self.items.append(("", ""))

    def item(self, label: str, lines: list[str], depth: int) -> None:
        start = len(self.items)
        self.nested(lines, depth)
        if self.items and self.items[-1] == ("", ""):  # (a list's items stay together, as a Markdown page's do)
            self.items.pop()
        for k in range(start, len(self.items)):
            kind, text = self.items[k]
            if kind == "t":
                self.items[k] = ("t", label + str(text))
                return
            if kind == "c":
                self.items.insert(k, ("t", label.strip()))
                return

    def heading(self, style: tuple[str, bool], title: str, top: bool) -> None:
        if not top:  # (sections cannot sit inside a directive, a list or a quote)
            self.items.append(("t", title))
            return
        if style not in self.styles:
            self.styles.append(style)
        self.items.append((self.styles.index(style), title))

    # -- explicit markup -----------------------------------------------------------------------

    def explicit(self, first: str, rest: list[str], depth: int) -> None:
        if _TARGET.match(first):
            self.dropped["hyperlink target"] += 1
            return
        m = _FOOTNOTE.match(first)
        if m:
            label = m.group(1)
            shown = f"[{label}] " if not label.startswith(("#", "*")) else ""
            self.item(shown, [first[m.end():], *rest], depth)
            return
        m = _SUBSTITUTION.match(first)
        if m:
            self.substitution(m.group(1), m.group(2).lower(), m.group(3) or "", rest)
            return
        m = _DIRECTIVE.match(first)
        if m:
            self.directive(m.group(1).lower(), m.group(2) or "", rest, depth)
            return
        self.dropped["comment"] += 1

    def substitution(self, name: str, kind: str, arg: str, rest: list[str]) -> None:
        header, options, _ = _parts(rest)
        if kind == "replace":
            text = " ".join([arg, *header]).strip()
        elif kind == "image":
            text = options.get("alt", "") or name
        elif kind == "unicode":
            text = _unicode(" ".join([arg, *header]))
        else:
            text = name
        self.subs[name] = text[:1000]
        self.subs.setdefault(" ".join(name.lower().split()), text[:1000])

    def directive(self, name: str, arg: str, rest: list[str], depth: int) -> None:
        header, options, body = _parts(rest)
        kind = name.rsplit(":", 1)[-1] if name.startswith(("py:", "c:", "cpp:", "js:", "rst:", "std:")) else name
        classes = options.get("class", "") + (f" {arg}" if kind in ("container", "rst-class", "class") else "")
        if kind in _DROPPED or _HIDDEN_CLASS.search(classes):
            if kind in _COUNTED or kind not in _DROPPED:
                self.dropped[kind if kind in _DROPPED else "hidden"] += 1
            return
        args = [a for a in [arg, *header] if a.strip()]
        if kind in _CODE:
            # (without a blank line the code follows the language on the directive's own line)
            code = body or (header if kind in ("code", "code-block", "sourcecode", "highlight-block") else args)
            if any(x.strip() for x in code):
                self.items.append(("c", "\n".join(_dedent(code))))
            return
        if kind == "math":
            self.items.append(("c", "\n".join(_dedent(body or args))))
            return
        if kind in ("image", "figure"):
            alt = options.get("alt", "")
            if alt:
                self.items.append(("i", f"{alt.replace(chr(0), ' ')}\x00{arg}"))
            if kind == "figure":
                self.nested(body, depth)
            return
        if kind in _VERSION:
            version, _, said = arg.partition(" ")
            words = " ".join(x for x in [said, *header] if x.strip())
            lead = f"{_VERSION[kind]} {version}".strip()
            self.nested([f"{lead}: {words}" if words else f"{lead}{':' if body else '.'}", *(["", *body] if body else [])],
                        depth)
            return
        if kind == "list-table":
            if arg:
                self.items.append(("t", arg))
            heads = options.get("header-rows", "0")
            self.list_table(body, int(heads) if heads.isdigit() else 0)
            return
        if kind == "csv-table":
            if arg:
                self.items.append(("t", arg))
            self.csv_table(options.get("header", ""), body)
            return
        if _DESCRIPTION.match(kind) and args:
            for signature in args:
                self.items.append(("c", signature.strip()))
            self.nested(body, depth)
            return
        if kind in _TITLED:
            self.nested([*args, *(["", *body] if body else [])], depth)
            return
        # an admonition ("note", "warning" ...) or a directive this reader does not know: its text is read
        self.nested([*args, *(["", *body] if body else [])], depth)

    # -- tables --------------------------------------------------------------------------------

    def row(self, cells: list[str], header: bool = False) -> None:
        """A table's row as the HTML loader writes one ("| Growth | $29 |"), a header row marked."""
        cells = [" ".join(c.replace("\x1e", " ").replace("\x1f", " ").split()) for c in cells]
        if any(cells):  # (each cell's markup is read when the page is, substitutions known)
            self.items.append(("r", "\x1f".join(cells) + ("\x1e" if header else "")))

    def grid(self, lines: list[str]) -> None:
        cuts = [k for k, ch in enumerate(lines[0]) if ch == "+"]
        cells: list[list[str]] = [[] for _ in cuts[1:]]
        for line in lines[1:]:
            if line.startswith("+"):  # (a row's end; "+===+" ends the header)
                self.row([" ".join(c) for c in cells], header="=" in line)
                cells = [[] for _ in cuts[1:]]
                continue
            for c, (a, b) in enumerate(itertools.pairwise(cuts)):
                cells[c].append(line[a + 1 : b].strip(" |"))
        self.row([" ".join(c) for c in cells])

    def simple(self, lines: list[str], i: int) -> int:
        """A simple table from its top border at ``i``; returns where it ends, or ``i`` when no
        closing border follows (then the lines read as text)."""
        border = lines[i]
        spans = [(m.start(), m.end()) for m in re.finditer(r"=+", border)]
        j, heads = i + 1, 0
        rows: list[list[str]] = []
        while j < len(lines):
            line = lines[j]
            if _SIMPLE.match(line) or re.fullmatch(r"[-=]+(?: +[-=]+)+[ \t]*", line):
                if j + 1 >= len(lines) or not lines[j + 1].strip():
                    for k, cells in enumerate(rows):
                        self.row(cells, header=k + 1 == heads)
                    return j + 1
                if _SIMPLE.match(line) and not heads:
                    heads = len(rows)
                j += 1
                continue
            if not line.strip():
                j += 1
                continue
            cells = [line[a : (spans[k + 1][0] if k + 1 < len(spans) else len(line))] for k, (a, _) in enumerate(spans)]
            if rows and not cells[0].strip():  # (a blank first column continues the row above)
                rows[-1] = [f"{x} {y}" for x, y in zip(rows[-1], cells, strict=True)]
            else:
                rows.append(cells)
            j += 1
        return i

    def list_table(self, body: list[str], heads: int) -> None:
        rows: list[list[str]] = []
        for line in body:
            s = line.strip()
            if line.startswith("* - ") or line.rstrip() == "* -":
                rows.append([s[4:] if len(s) > 3 else ""])
            elif s.startswith("- ") or s == "-":
                if rows:
                    rows[-1].append(s[2:])
            elif rows and s:
                rows[-1][-1] += " " + s
        for k, cells in enumerate(rows):
            self.row(cells, header=k + 1 == heads)

    def csv_table(self, header: str, body: list[str]) -> None:
        for source in ([header] if header.strip() else []) + ["\n".join(body)]:
            try:
                for cells in csv.reader(source.splitlines(), skipinitialspace=True):
                    self.row(cells, header=source is header)
            except csv.Error:
                self.items.append(("t", source))

    # -- inline markup -------------------------------------------------------------------------

    def inline(self, text: str) -> str:
        return _Inline(text, self).read()


def _parts(rest: list[str]) -> tuple[list[str], dict[str, str], list[str]]:
    """A directive's block as (argument lines, options, body): the lines before the first blank
    one are its arguments and then its options; the body follows the blank line."""
    blank = next((k for k, x in enumerate(rest) if not x.strip()), len(rest))
    header, body = rest[:blank], _dedent(rest[blank + 1 :]) if blank < len(rest) else []
    options: dict[str, str] = {}
    args: list[str] = []
    for line in header:
        m = _OPTION.match(line.strip())
        if m:
            options[m.group(1).lower()] = (m.group(2) or "").strip()
        elif options:  # an option's value continued
            last = next(reversed(options))
            options[last] = f"{options[last]} {line.strip()}"
        else:
            args.append(line.strip())
    return args, options, body


def _unicode(codes: str) -> str:
    out = []
    for code in codes.split():
        m = re.fullmatch(r"(?:0x|x|\\x|U\+?|u|\\u|&#x)([0-9a-fA-F]{1,6});?|&#(\d{1,7});?|(\d{1,7})", code)
        if not m:
            if code.startswith(":") or code == "..":  # (":trim:" and the other options; ".." starts a comment)
                break
            out.append(code)
            continue
        value = int(m.group(1), 16) if m.group(1) else int(m.group(2) or m.group(3))
        if value <= 0x10FFFF and not 0xD800 <= value <= 0xDFFF:
            out.append(chr(value))
    return "".join(out)


_ESCAPE = re.compile(r"\\(?:([ \n])|(.))", re.S)


def _unescaped(text: str) -> str:
    return _ESCAPE.sub(lambda m: m.group(2) or "", text)


_OPENS_AFTER = frozenset(" \t\n'\"([{<-/:\u2018\u201c\u00ab")
_SPECIAL = re.compile(r"[\\*`|_\[:]")
_ROLE_BEFORE = re.compile(r":([\w][\w.+:-]{0,60}):`")
_ROLE_AFTER = re.compile(r":([\w][\w.+:-]{0,60}):")
_NOTE_REF = re.compile(r"\[(#[\w.-]{0,60}|\*|\d{1,9})\]__?")
_CITE_REF = re.compile(r"\[([\w.-]{1,60})\]__?")


class _Inline:
    """One paragraph's inline markup read in a single pass (see the module's docstring)."""

    def __init__(self, text: str, reader: _Reader, expand: bool = True) -> None:
        self.text, self.reader, self.expand = text, reader, expand
        self.dead: set[str] = set()

    def opens(self, i: int, size: int) -> bool:
        t = self.text
        return (i == 0 or t[i - 1] in _OPENS_AFTER) and i + size < len(t) and not t[i + size].isspace()

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
                    and (end != "*" or t[after : after + 1] != "*")):
                return k
            k += 1

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
                return _code(t[i + 2 : k]), k + 2
            return "``", i + 2
        if ch == ":" and (i == 0 or t[i - 1] in _OPENS_AFTER):
            m = _ROLE_BEFORE.match(t, i)
            if m and self.opens(m.end() - 1, 1):
                k = self.close("`", m.end())
                if k > m.end():
                    return self.role(m.group(1), t[m.end() : k]), k + 1
            return ":", i + 1
        if t.startswith("_`", i) and self.opens(i, 2):
            k = self.close("`", i + 2)
            if k > i + 2:
                return _unescaped(t[i + 2 : k]), k + 1
            return "_`", i + 2
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
                return _label(inner), end
            return "`", i + 1
        if t.startswith("**", i):
            if self.opens(i, 2):
                k = self.close("**", i + 2)
                if k > i + 2:
                    return _unescaped(t[i + 2 : k]), k + 2
            return "**", i + 2
        if ch == "*" and self.opens(i, 1):
            k = self.close("*", i + 1)
            if k > i + 1:
                return _unescaped(t[i + 1 : k]), k + 1
            return "*", i + 1
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
                while start > 0 and i - start < 100 and (t[start - 1].isalnum() or t[start - 1] in "_.-"):
                    start -= 1
                if t[start] != "_":  # ("name_" is a reference; "__init__" is no markup)
                    return "", end
        return ch, i + 1

    def role(self, name: str, text: str) -> str:
        kind = name.lower().rsplit(":", 1)[-1]
        if kind.startswith("raw"):
            self.reader.dropped["raw role"] += 1
            return ""
        text = _unescaped(text)
        if kind in ("abbr", "math", "sub", "sup", "subscript", "superscript", "emphasis", "strong", "title-reference",
                    "t", "title"):
            return text
        shown = _label(text)
        if kind in _CODE_ROLES:
            shown = shown.lstrip("!")
            if shown.startswith("~"):
                shown = shown[1:].rsplit(".", 1)[-1]
            return _code(shown)
        return shown

    def substitute(self, name: str) -> str:
        if not self.expand:
            return name
        reader = self.reader
        key = name if name in reader.subs else " ".join(name.lower().split())
        if key not in reader.subs:
            return name
        if key not in reader.shown:  # (read once, its own references as their names: never recursively)
            reader.shown[key] = _Inline(reader.subs[key], reader, expand=False).read()
        text = reader.shown[key]
        if len(text) > reader.budget:
            return name
        reader.budget -= len(text)
        return text


def _label(text: str) -> str:
    """A reference's shown text: "Title <target>" reads "Title", "<target>" alone its target."""
    text = " ".join(text.split())
    if text.endswith(">") and "<" in text:
        head = text[: text.rfind("<")].strip()
        return _unescaped(head) if head else text[text.rfind("<") + 1 : -1]
    return _unescaped(text)


def _code(text: str) -> str:
    text = " ".join(text.split())
    return f"`` {text} ``" if "`" in text else f"`{text}`"  # (as Markdown writes code holding a backtick)


def read_rst(text: str, image: Callable[[str, str], str] = lambda alt, src: f"![{alt}]({src})") -> Read:
    """A reStructuredText page's title and lines (see the module's docstring).

    >>> page = read_rst("Refunds\\n=======\\n\\nAsk **within** 30 days.\\n\\n"
    ...                 "Fees\\n----\\n\\n.. note:: See :ref:`the terms <terms>`.\\n.. raw:: html\\n\\n   <b>x</b>\\n")
    >>> page.title, page.lines, dict(page.dropped)
    ('Refunds', ['Ask within 30 days.', '', (2, 'Fees'), 'See the terms.'], {'raw': 1})
    """
    lines = [x.expandtabs(8).rstrip() for x in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    reader = _Reader(len(text))
    reader.body(lines, 0)
    firsts = [k for k, it in enumerate(reader.items) if isinstance(it[0], int)]
    title = ""
    if firsts:
        first = reader.items[firsts[0]]
        if sum(1 for k in firsts if reader.items[k][0] == first[0]) == 1:
            title = reader.inline(str(first[1])).strip()
            del reader.items[firsts[0]]
    out: list[tuple[int, str] | str] = []
    level = 1  # the last section's
    for kind, text_ in reader.items:
        if isinstance(kind, int):
            level = kind + 1
            out.append((level, reader.inline(text_).strip()))
        elif kind == "s":
            out.append((level + 1, _unescaped(text_).rstrip(":").strip()))
        elif kind == "t":
            out.extend(reader.inline(text_).split("\n"))
        elif kind == "c":
            out.extend(["```", *text_.split("\n"), "```"])
        elif kind == "r":
            cells = [reader.inline(c).replace("|", "/") for c in text_.rstrip("\x1e").split("\x1f")]
            out.append("| " + " | ".join(cells) + " |")
            if text_.endswith("\x1e"):
                out.append("|" + "---|" * len(cells))
        elif kind == "i":
            alt, _, src = text_.partition("\x00")
            out.append(image(reader.inline(alt), src))
        elif out and out[-1] != "" and not isinstance(out[-1], tuple):
            out.append("")
    while out and out[-1] == "":
        out.pop()
    return Read(title, out, reader.dropped)

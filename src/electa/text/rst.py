r"""reStructuredText read by patterns, in bounded time and memory, with nothing shared between pages (SPEC A1).

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
- **Inline markup** stripped in one pass (:mod:`electa.text.rst_inline`).
- **Substitutions** (``.. |name| replace:: text``) are expanded once, never recursively, and
  their expansions together may add no more than the page's own length (then a reference reads
  as its name); an image substitution reads as its alt text.

Work is bounded: nesting deeper than :data:`MAX_DEPTH`, or past :data:`WORK` characters read
per character of the page (each level reads its own copy of its lines), is not read and is
counted; so are tables wider than :data:`MAX_COLUMNS`; a page defining more than
:data:`MAX_ROLES` roles has each read as nothing.

Hiding is read as docutils reads it: roles and default roles a page defines (wherever the
definition sits, in any of docutils' languages) that derive from ``raw``, carry a format or a
hiding class read as nothing; a class (normalised as ``docutils.nodes.make_id`` does) hides the
whole element it marks (a list, a field list, a section to its next title of its level); a table
with a cell spanning rows or columns is not read (cut at borders, what the cell holds would read
as text of its own) and is counted.
"""

from __future__ import annotations

import csv
import io
import itertools
import re
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from electa.text.markdown import code_lines
from electa.text.refresh import refresh_target
from electa.text.rst_inline import SIMPLE_NAME, Inline, unescaped

MAX_DEPTH = 24  # nested directives, lists and quotes read as structure; deeper is not read

_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_BULLET = re.compile(r"[-*+\u2022\u2023\u2043](?: +|\Z)")
_ENUMERATOR = r"(?:\d{1,9}|#|[a-zA-Z]|[ivxlcdmIVXLCDM]{1,12})"
_ENUM = re.compile(rf"{_ENUMERATOR}[.)](?: +|\Z)|\({_ENUMERATOR}\)(?: +|\Z)")
# docutils' field marker: a colon inside a name is one not followed by a space, a backquote or the end
_FIELD = re.compile(r":(?![: ])((?:[^:\\]|\\.|:(?![ `]|$)){0,200})(?<! ):(?: +|\Z)")
_OPTION_LIST = re.compile(r"(?:--?[A-Za-z0-9]|/[A-Za-z0-9])[^ ]*(?:, ?(?:--?|/)[A-Za-z0-9][^ ]*)*(?:  +\S|\Z)")
_OPTION = re.compile(r":([\w.-]{1,60}):(?: +(.*)|\Z)")
_TARGET = re.compile(r"_(?:`[^`]{0,400}`|[^:`]{0,400}):(?: |\Z)|__(?: |\Z)")
# docutils' reference names and footnote labels: a comment in any other brackets is a comment.
_LABEL = rf"(?=[^\]\n]{{1,100}}\])(?:\d+|#(?:{SIMPLE_NAME})?|\*|{SIMPLE_NAME})"
_FOOTNOTE = re.compile(rf"\[({_LABEL})\](?: +|\Z)")
_SUBSTITUTION = re.compile(r"\|([^|\s](?:[^|]{0,120}[^|\s])?)\| +([\w][\w:+.-]{0,60}) ?::(?: +(.*)|\Z)")
_DIRECTIVE = re.compile(r"([\w][\w:+.-]{0,60}) ?::(?: +(.*)|\Z)")  # (docutils allows "note ::")
_GRID = re.compile(r"\+(?:[-=]+\+)+[ \t]*\Z")
_SIMPLE = re.compile(r"=+(?: +=+)+[ \t]*\Z")
_STRONG_LINE = re.compile(r"\*\*([^*\s](?:[^*]{0,150}[^*\s])?)\*\*:?")
# (anywhere in a line: a list item's, a field's, a cell's or another directive's first content may be one)
_ROLE_DEFINITION = re.compile(r"(?:^|(?<=\s))\.\.\s+([^\s:]{1,40})\s?::")
# docutils' names, in every language it reads, for what must not be read: a page of a project
# whose language is German writes ".. roh::" for raw (docutils.parsers.rst.languages, 0.19).
_LOCALISED = {name: english for english, names in {
    "raw": "brut burtiski cru grezzo onbewerkt raaka roh rou rå senanaliza sin-analisis sin-análisis surowe "
           "unverändert žalia сырой خام 原 原文 生",
    "role": "regra rol rola roll rolle rolo rolė rooli ruolo роль قانون ロール 役 角色 역할",
    "default-role": "forvalgt-rolle noklusējuma-role numatytoji-rolė preterlasita-rolo regra-predeterminada "
                    "rol-por-omision rol-por-omisión rola-domyślna ruolo-predefinito standardroll standardrolle "
                    "قانون-افتراضي ディフォルトロール 既定役 默认角色 기본-역할",
    "class": "clase classe klas klasa klase klaso klass klasse klasė luokka třída класс סגנון كائن کلاس クラス 类型 클래스",
    "include": "dołącz einfügen ietvert inclou incloure includi incluir inclure inclusão incluír inkluder inkludera "
               "inkludi inkludér insluiting opnemen pridėti sisällytä включать تضمين شامل インクルード 包含 含む 組み込み 포함",
    "meta": "méta متا ميتا メタ 元数据 메타",
}.items() for name in names.split()}
_RAW_ROLES = frozenset(n for n, english in _LOCALISED.items() if english == "raw")
_HIDDEN_CLASS = re.compile(r"(?:^|\s)(?:hidden|hide|d-none|sr-only|visually-hidden|screen-reader-text|invisible)(?:\s|$)")
MAX_ROLES = 100  # roles a page may define; past it, every role it defines reads as nothing
MAX_COLUMNS = 64  # a table wider is not read (its cells would cost columns x rows)
WORK = 8  # characters read, nesting counted, per character of the page: beyond it deeper blocks are not read

_LIST_LINE = re.compile(r"- ")  # (a line the reader wrote as a bullet's or a term's item)
_REFRESH_FIELD = re.compile(r"\s*:http-equiv=refresh:\s*(.*)$", re.IGNORECASE)
# Read as nothing: a visitor never sees them, or they only steer the build or pull in another
# file (which this page's bytes do not hold: ``include`` would read the server's disk).
DROPPED_DIRECTIVES = frozenset(
    "raw only ifconfig include literalinclude meta toctree contents sectnum section-numbering header footer"
    " highlight default-role role testsetup testcleanup tabularcolumns target-notes title index currentmodule"
    " module automodule autoclass autofunction automethod autoattribute autoexception autodata autosummary"
    " autoprogram autodecorator autoproperty autotypealias autonewtypealias graphviz digraph graph inheritance-diagram"
    " plantuml uml mermaid spelling:word-list program default-domain codeauthor sectionauthor"
    " moduleauthor cmake-module kernel-doc todo todolist".split())
_INVISIBLE = frozenset(
    "meta sectnum section-numbering title header footer target-notes index currentmodule default-domain"
    " codeauthor sectionauthor moduleauthor highlight tabularcolumns program testsetup testcleanup".split())
# What a page's toctree counts as: no text, but what a page holding nothing else is (an index).
TABLE_OF_CONTENTS = "table of contents"
# Directives that show a visitor something (any but a toctree and what no visitor sees) read as
# nothing, with no other count saying why (an autodoc class, a table read from a file, a diagram):
# a page of no text that holds one is no table of contents. Not said in a page's note.
SHOWING_DIRECTIVES = "directives showing what is not read"


def shows_nothing(kind: str) -> bool:
    """Whether a directive of ``kind`` shows a visitor nothing but where other pages are (a
    toctree), or nothing at all (a target, a meta field, a class for what follows)."""
    # (Sphinx's "module" marks where a module's description starts and shows nothing itself)
    return kind in _INVISIBLE or kind in ("toctree", "class", "rst-class", "cssclass", "role", "default-role", "module")


COUNTED_DIRECTIVES = frozenset(
    "raw only ifconfig include literalinclude testsetup testcleanup cmake-module kernel-doc todo".split())
# A page's fields that steer Sphinx's build, not what the page says.
_BUILD_FIELDS = frozenset("orphan tocdepth nocomments nosearch no-search hide-toc hide-navigation hide-footer".split())
CODE_DIRECTIVES = frozenset(
    "code code-block sourcecode doctest testcode testoutput productionlist prompt ipython"
    " jupyter-execute highlight-block code-tab".split())
# Directives whose content is prose (docutils' and Sphinx's own, and their common extensions':
# sphinx-design, sphinx-tabs, sphinx-inline-tabs, sphinx-togglebutton, MyST's): their argument,
# where one is written, is a title or a label and is read before the content; a layout one's
# (LAYOUT_DIRECTIVES) is column counts or classes, and is not. Any other directive is an
# extension's, whose arguments steer what it builds ("pip-command-usage:: config"): not read.
PROSE_DIRECTIVES = frozenset(
    "note warning tip important caution attention danger error hint seealso admonition topic sidebar margin"
    " dropdown tab group-tab tab-item tab-set tabbed card card-carousel grid grid-item grid-item-card div container"
    " epigraph pull-quote highlights compound rubric glossary hlist centered table list-table toggle acks"
    " line-block tabs".split())
LAYOUT_DIRECTIVES = frozenset("grid grid-item card-carousel div container tab-set tabs".split())
# Of those, the ones whose argument labels what they disclose: over nothing read it labels nothing
# (pip's docs: a tab "Unix/macOS" holding only an extension's directive).
LABEL_DIRECTIVES = frozenset("tab group-tab tab-item tabbed dropdown toggle".split())
VERSION_DIRECTIVES = {"versionadded": "New in version", "versionchanged": "Changed in version",
            "deprecated": "Deprecated since version", "versionremoved": "Removed in version"}
# A domain's description of an object: its arguments are a signature, read as code.
_DESCRIPTION = re.compile(
    r"(?:(?:py|c|cpp|js|rst|std|rb|php|cmake):)?(?:function|class|method|attribute|data|exception|decorator|"
    r"classmethod|staticmethod|property|member|type|macro|var|struct|enum|enumerator|union|concept|describe|object|"
    r"option|cmdoption|envvar|confval|setting|directive|role|command|variable|genex|signature)\Z"
    r"|http:(?:get|post|put|patch|delete|head|options|trace|connect|copy|any)\Z")  # (sphinxcontrib-httpdomain)
# An extension's argument that reads as words ("Compute the mean", "Don't do this.", "Use 2
# workers"): three words or more, the first of letters, none a flag, a path, an assignment or a
# quote; not what it builds from (a name, "pip freeze", 'config "python -m pip"', "3.10 3.12").
_WORDS_ARGUMENT = re.compile(r"[^\W\d_][\w'’.-]*[,;:!?]?(?:[ \t]+\(?\w[\w'’.-]*\)?[,;:!?]?){2,}")


@dataclass
class Read:
    """A page read: its title ("" where it has none) and its lines, each a heading ``(level,
    text)`` or a line of text (code fenced with three backticks), and how many of each thing
    was not read."""

    title: str
    lines: list[tuple[int, str] | str]
    dropped: Counter[str] = field(default_factory=Counter)
    # Where a meta refresh sends its visitor ("" where none does: electa.text.refresh).
    moved_to: str = ""


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


def _dedent(lines: list[str], most: int | None = None) -> list[str]:
    """``lines`` without their common indentation (at most ``most`` columns: a list item's text
    starts where its marker ends, so what is indented further, a literal block, stays so)."""
    margin = min((_indent(x) for x in lines if x.strip()), default=0)
    margin = margin if most is None else min(margin, most)
    return [x[margin:] for x in lines] if margin else lines


def _class_name(name: str) -> str:
    """A class name as docutils makes it (``docutils.nodes.make_id``): "SR_Only", "_hidden_",
    "９hidden" and "hiddén" are "sr-only", "hidden", "hidden" and "hidden"."""
    name = unicodedata.normalize("NFKD", name.lower()).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"^[-0-9]+|-+$", "", re.sub(r"[^a-z0-9]+", "-", name))


def hidden_by(classes: str) -> bool:
    """Whether classes (each as docutils normalises it) hide what they mark."""
    return bool(_HIDDEN_CLASS.search(" ".join(_class_name(c) for c in classes.split())))


def raw_role(name: str) -> bool:
    return name.rsplit(":", 1)[-1].startswith("raw") or name in _RAW_ROLES


def _bare(text: str) -> str:
    """A signature's or a title's words, without the marks that write them as code."""
    return " ".join(text.replace("`", " ").split())


def _title_at(lines: list[str], i: int) -> tuple[str, bool]:
    """The section title that opens at ``i`` after blank lines, or "", and whether it is
    overlined. An adornment is at least as long as its title (docutils warns of a shorter one),
    and an underline at least three characters long."""
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i + 1 >= len(lines):
        return "", False
    first, second = lines[i].rstrip(), lines[i + 1].rstrip()
    if _adornment(first) and i + 2 < len(lines) and lines[i + 2].rstrip() == first:
        title = second.strip()
        return (title, True) if title and not _adornment(second) and len(first) >= len(title) else ("", False)
    if first and not _indent(first) and not _adornment(first) and _adornment(second) and len(second) >= max(3, len(first)):
        return first, False
    return "", False


def _adornment(line: str) -> bool:
    """A line of one punctuation character repeated (a title's adornment, or a transition).
    (A regular expression with a back-reference keeps a frame per repeat: 100 MB for a 1 MB line.)"""
    mark = line.rstrip()
    return len(mark) >= 2 and mark[0] in _PUNCTUATION and mark.count(mark[0]) == len(mark)


# The kinds of block that are one item of a list (a bullet or numbered item, a field, a
# definition list's entry, an option): a class ending one's block marks the next item alone.
_ITEMS = frozenset({"-", "1.", "field", "term", "option"})


@dataclass
class _Hiding:
    """The element a hidden class marks, from its first block: its kind and, for a section, its
    title's level (what continues it)."""

    kind: str
    level: int

    def covers(self, kind: str, items: list[tuple[str, str] | tuple[int, str]]) -> bool:
        if self.kind == "heading":  # (a section ends at a title of its level or above)
            return not any(isinstance(k, int) and k <= self.level for k, _ in items)
        return (kind == self.kind and kind in ("-", "1.", "field", "term", "line", "option")) or kind == "invisible"


class _Reader:
    """One page's reading: every table it keeps (substitutions, section styles, counts) is its
    own, so nothing one page defines reaches another."""

    def __init__(self, size: int) -> None:
        # ("t" text, "c" code, "p" parsed literal, "r" row, "i" image, "s" strong line, "" blank, text)
        # or (style index, title)
        self.items: list[tuple[str, str] | tuple[int, str]] = []
        self.styles: list[tuple[str, bool]] = []
        self.subs: dict[str, str] = {}
        self.shown: dict[str, str] = {}  # substitutions as read
        self.roles: dict[str, list[tuple[str, bool]]] = {}  # each definition of a role: (derived from, hides)
        self.default_roles: list[str] = []
        self.default_role: tuple[str, bool] | None = None  # (the kind every default-role text reads as, hidden)
        self.resolved: dict[str, tuple[str, bool]] = {}
        self.long_role = False
        self.dropped: Counter[str] = Counter()
        self.moved_to = ""
        self.budget = size + 10_000  # characters substitutions may add
        self.work = WORK * size + 100_000
        self.hide_next = False  # a ".. class:: hidden" marks the element after it
        # ... and that element is one item of a list (the next), not the whole list: the class was
        # the last thing in the item before it (docutils' ClassAttribute climbs to the item's next
        # sibling), holding the kind of that item
        self.hide_item = ""
        self.unclosed_table = False  # (in the block being read: no simple table's border closes one)
        # what the last block was: "invisible", "target", "heading", "-", "1.", "field", "term", "line" or ""
        self.kind = ""
        self.elements = False  # whether a visible element (other than a title) has been read: then fields are text
        self.signed = -1  # (the depth of the directive just read, where it described an object by its signature alone)

    # -- blocks --------------------------------------------------------------------------------

    def body(self, lines: list[str], depth: int) -> None:
        i, n = 0, len(lines)
        outer, self.unclosed_table = self.unclosed_table, False
        hiding: _Hiding | None = None
        while i < n:
            if not lines[i].strip():
                self.items.append(("", ""))
                i += 1
                continue
            hide, self.hide_next, mark = self.hide_next, False, len(self.items)
            item, self.hide_item = self.hide_item, ""
            self.kind = ""
            i = self.block(lines, i, depth)
            kind = self.kind
            if kind not in ("invisible", "heading", "field", "target"):
                self.elements = True
            if hide and kind == "invisible":  # (a comment or a target between is not what a class marks)
                # (but it ends the list: what the class climbed to is then the next element, whole)
                self.hide_next = True
            elif hide and item and kind == item:  # (the next item of the list the class ended an item of)
                del self.items[mark:]
                self.dropped["hidden"] += 1
                hiding = None
            elif hide or (hiding and hiding.covers(kind, self.items[mark:])):
                # A class marks an element: all of a list, a field list, a definition list, a
                # line block, or a section to the next title of its level or above.
                hiding = hiding or _Hiding(kind, next((k for k, _ in self.items[mark:] if isinstance(k, int)), 0))
                del self.items[mark:]
                self.dropped["hidden"] += hide
            else:
                hiding = None
        self.unclosed_table = outer

    def block(self, lines: list[str], i: int, depth: int) -> int:
        """Reads the block that starts at ``i``; returns where the next starts."""
        top, n, line = depth == 0, len(lines), lines[i]
        if _indent(line):  # a block quote
            j = _extent(lines, i, 1)
            self.nested(_dedent(lines[i:j]), depth)
            return j
        if line.startswith("__ ") or line.rstrip() == "__":  # an anonymous hyperlink target
            self.dropped["hyperlink target"] += 1
            self.kind = "invisible"
            return _extent(lines, i + 1, 1)
        if line.rstrip() == ".." and (i + 1 >= n or not lines[i + 1].strip()):
            self.kind = "invisible"
            return i + 1  # (an empty comment: what follows a blank line is no part of it)
        if line.startswith(".. ") or line.rstrip() == "..":  # (before adornments: ".." is one)
            j = _extent(lines, i + 1, 1)
            mark, self.signed = len(self.items), -1
            self.explicit(line[3:].strip(), _dedent(lines[i + 1 : j]), depth)
            if (self.signed == depth == 0
                    and _bare(" ".join(str(x[1]) for x in self.items[mark:])) == _bare(_title_at(lines, j)[0])):
                # (a description of nothing but its signature, over the section it names: Django's
                # ".. setting:: ALLOWED_HOSTS" above its "``ALLOWED_HOSTS``" title is that title's
                # target, which Sphinx shows as nothing; a class before it marks it, not the section)
                del self.items[mark:]
                self.dropped["hyperlink target"] += 1
                self.kind = "target"  # (no element: a field list after it is still the page's metadata)
            return j
        # (what marks a list, a field, a line block, an option or a doctest is read before a title is
        # looked for, as docutils reads it: "- x" over "=====" is a list item, not a title)
        if _BULLET.match(line):
            marker = _BULLET.match(line)
            assert marker is not None
            j = _extent(lines, i + 1, 1)
            self.kind = "-"
            self.item("- ", [line[marker.end():], *_dedent(lines[i + 1:j], marker.end())], depth)
            return j
        fld = _FIELD.match(line)
        if fld:
            j = _extent(lines, i + 1, 1)
            value = [line[fld.end():], *_dedent(lines[i + 1:j])]
            # (a field list first on a page is Sphinx's metadata, never shown; so are its build fields anywhere)
            self.kind = "field"  # (before its block is read: what a class ending that block marks)
            if (any(x.strip() for x in value) and fld.group(1).lower() not in _BUILD_FIELDS
                    and not (top and not self.elements)):
                self.item(unescaped(fld.group(1)) + ": ", value, depth)
            return j
        if line.startswith("| ") or line.rstrip() == "|":  # a line block; an indented line continues a line
            j = i + 1
            while j < n and lines[j].strip() and _indent(lines[j]):
                j += 1
            self.items.append(("t", " ".join(x.strip() for x in [line[2:], *lines[i + 1 : j]])))
            self.kind = "line"
            return j
        if line.startswith(">>> "):
            j = i
            while j < n and lines[j].strip():
                j += 1
            self.items.append(("c", "\n".join(lines[i:j])))
            return j
        if _OPTION_LIST.match(line):  # "-a, --all  Show all." and its description
            j = _extent(lines, i + 1, 1)
            self.kind = "option"
            self.items.append(("t", line))
            if j > i + 1:
                self.nested(_dedent(lines[i + 1 : j]), depth)
            return j
        nxt = lines[i + 1] if i + 1 < n else ""
        if (_adornment(line) and i + 2 < n and nxt.strip() and not _adornment(nxt)
                and lines[i + 2].rstrip() == line.rstrip()):
            self.heading((line[0], True), nxt.strip(), top)
            self.kind = "heading" if top else ""
            return i + 3
        if (nxt and not _indent(nxt) and _adornment(nxt) and not _adornment(line)
                and (len(nxt.strip()) >= len(line.strip()) or len(nxt.strip()) >= 4)
                and not _SIMPLE.match(line) and not _GRID.match(line)):
            self.heading((nxt[0], False), line.strip(), top)
            self.kind = "heading" if top else ""
            return i + 2
        if _adornment(line) and len(line.strip()) >= 4:  # a transition, or an adornment without its title
            return i + 1
        if _GRID.match(line):
            j = i
            while j < n and lines[j][:1] in ("+", "|"):
                j += 1
            self.grid(lines[i:j], depth)
            return j
        if _SIMPLE.match(line) and not self.unclosed_table:
            j = self.simple(lines, i, depth)
            if j > i:
                return j
            self.unclosed_table = True  # (no border after this one closes a table: none later will either)
        marker = _ENUM.match(line)
        if marker:
            j = _extent(lines, i + 1, 1)
            label = "- " if line.startswith(("#", "(#")) else line[: marker.end()].strip() + " "
            self.kind = "1."
            self.item(label, [line[marker.end():], *_dedent(lines[i + 1:j], marker.end())], depth)
            return j
        j = i + 1
        while j < n and lines[j].strip() and not _indent(lines[j]):
            j += 1
        if j == i + 1 and j < n and _indent(lines[j]) and lines[j].strip():  # a definition list's term
            # (an item "term: definition", so that the term and what it means stay one line: an
            # answer quoting "one of the following:" brings the items after it, and a passage
            # holding "Run after all other rules." says of what)
            self.kind = "term"
            k = _extent(lines, j, 1)
            self.term(line, _dedent(lines[j:k]), depth)
            return k
        strong = _STRONG_LINE.fullmatch(line.strip()) if top and j == i + 1 else None
        if strong:  # ("**Example 1: Copying a file**" alone: a heading in all but markup)
            self.items.append(("s", strong.group(1)))
            return j
        return self.paragraph(lines, i, j)

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
        """Reads a block inside another. Each level keeps its own copy of its lines, so what is
        read at every level together is bounded (:data:`WORK` characters per character of the
        page), as is the depth: past either, the block is not read (not even as plain lines: a
        comment or a raw block in it would be read as text) and is counted."""
        self.work -= len(lines) + sum(map(len, lines))
        if depth + 1 >= MAX_DEPTH or self.work < 0:
            self.dropped["nested too deep"] += 1
            return
        kind = self.kind  # (what the enclosing block is, whatever the blocks inside it are)
        self.body(lines, depth + 1)
        if self.hide_next:  # (a class ending this block marks what follows the block: the next
            self.hide_item = kind if kind in _ITEMS else ""  # item of its list, or the next element)
        self.kind = kind
        self.items.append(("", ""))

    def cell(self, lines: list[str], depth: int) -> str:
        """A table cell's text: its lines read as a page's blocks are (a raw block or a comment in
        a cell is no text either), then written on one line."""
        if not any(x.strip() for x in lines):
            return ""
        start = len(self.items)
        self.nested(_dedent(lines), depth)
        parts = []
        for kind, text in self.items[start:]:
            if kind in ("t", "s") or isinstance(kind, int):
                parts.append(str(text))
            elif kind in ("c", "p"):  # (read back as a literal; a backtick in it would end one)
                parts.append("``" + str(text).replace("`", "'") + "``")
            elif kind == "r":
                parts.append(" ".join(str(text).rstrip("\x1e").split("\x1f")))
            elif kind == "i":
                parts.append(str(text).partition("\x00")[0])
        del self.items[start:]
        return " ".join(" ".join(p.split()) for p in parts if p.strip())

    def listed(self, lines: list[str], depth: int) -> int:
        """Reads a list item's or a definition's block, and where its items start: a list's items
        stay together, as a Markdown page's do (no blank line after each)."""
        start = len(self.items)
        self.nested(lines, depth)
        if self.items and self.items[-1] == ("", ""):
            self.items.pop()
        return start

    def item(self, label: str, lines: list[str], depth: int) -> None:
        start = self.listed(lines, depth)
        for k in range(start, len(self.items)):
            kind, text = self.items[k]
            if kind == "t":
                if not (label == "- " and _LIST_LINE.match(str(text))):  # ("- - x": an item opening with a list)
                    self.items[k] = ("t", label + str(text))
                return
            if kind == "c":
                self.items.insert(k, ("t", label.strip()))
                return

    def term(self, term: str, lines: list[str], depth: int) -> None:
        """A definition list's entry, as an item "term: definition" where the definition opens
        with a line of text (so that an answer quoting "one of the following:" brings the items
        after it, and a passage holding "Run after all other rules." says of what), else the
        term as an item of its own before what the definition shows (a table, an image, code, a
        list, a nested term, or nothing read: no term is lost, nor moved under another block)."""
        start = self.listed(lines, depth)
        name = term.strip().rstrip(":").rstrip() or term.strip()
        first = next((k for k in range(start, len(self.items)) if self.items[k] != ("", "")), None)
        if first is not None and self.items[first][0] == "t" and not _LIST_LINE.match(str(self.items[first][1])):
            self.items[first] = ("t", f"- {name}: {self.items[first][1]}")
        else:  # (a colon where something follows, so the term reads as no item of a list after it)
            self.items.insert(start if first is None else first, ("t", f"- {name}{'' if first is None else ':'}"))

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
            self.kind = "invisible"
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
            self.kind = "invisible"
            return
        m = _DIRECTIVE.match(first)
        if m:
            self.directive(m.group(1).lower(), m.group(2) or "", rest, depth)
            return
        self.dropped["comment"] += 1
        self.kind = "invisible"

    def substitution(self, name: str, kind: str, arg: str, rest: list[str]) -> None:
        header, options, _ = _parts(rest)
        if kind == "replace":
            text = " ".join([arg, *header]).strip()
        elif kind == "image":
            text = "" if hidden_by(options.get("class", "")) else options.get("alt", "") or name
        elif kind == "unicode":
            text = _unicode(" ".join([arg, *header]))
        else:  # (raw, date and the rest show something else than their name, or nothing this page holds)
            text = ""
            if _LOCALISED.get(kind, kind) == "raw":
                self.dropped["raw block"] += 1
        self.subs[name] = text[:1000]
        self.subs.setdefault(" ".join(name.lower().split()), text[:1000])

    def directive(self, name: str, arg: str, rest: list[str], depth: int) -> None:
        domain, _, bare = name.rpartition(":")
        kind = _LOCALISED.get(name, bare if domain in ("py", "c", "cpp", "js", "std") else name)
        items, counted = len(self.items), sum(self.dropped.values())
        self._directive(kind, arg, rest, depth)
        if len(self.items) == items and sum(self.dropped.values()) == counted and not shows_nothing(kind):
            self.dropped[SHOWING_DIRECTIVES] += 1

    def _directive(self, kind: str, arg: str, rest: list[str], depth: int) -> None:
        header, options, body = _parts(rest)
        if kind in ("role", "default-role"):  # (read before the page: :meth:`define_roles`)
            self.kind = "invisible"
            return
        marks = kind in ("container", "rst-class", "cssclass", "class")  # (their arguments are classes)
        classes = " ".join([options.get("class", ""), options.get("figclass", ""), *([arg, *header] if marks else [])])
        if kind in ("rst-class", "cssclass", "class") and not body:
            # (it marks the element after it: one it hides is not read either)
            self.hide_next = hidden_by(classes)
            self.kind = "invisible"
            return
        if hidden_by(classes):
            self.dropped["hidden"] += 1
            return
        if kind in DROPPED_DIRECTIVES:
            if kind in COUNTED_DIRECTIVES:
                self.dropped[kind] += 1
            elif kind == "toctree":
                self.dropped[TABLE_OF_CONTENTS] += 1
            if kind == "meta" and not self.moved_to:  # (":http-equiv=refresh: 3; url=../x/": a page that moved)
                # (its fields, right under it or after a blank line)
                refresh = next((m.group(1) for x in rest if (m := _REFRESH_FIELD.match(x))), "")
                self.moved_to = refresh_target(refresh)
            if kind in _INVISIBLE:  # (a class before it marks the element after it)
                self.kind = "invisible"
            return
        if kind in ("container", "rst-class", "cssclass"):
            self.nested(body, depth)
            return
        args = [a for a in [arg, *header] if a.strip()]
        if kind in CODE_DIRECTIVES:
            if options.get("caption"):
                self.items.append(("t", options["caption"]))
            elif kind == "code-tab" and len(label := arg.split(None, 1)) == 2:  # ("code-tab:: py Python 3": its tab's label)
                self.items.append(("t", label[1]))
            # (without a blank line the code follows the language on the directive's own line)
            code = body or (header if kind in ("code", "code-block", "sourcecode", "highlight-block") else args)
            if any(x.strip() for x in code):
                self.items.append(("c", "\n".join(_dedent(code))))
            return
        if kind == "parsed-literal":  # (code whose inline markup is read: a raw role in it is no text either)
            if any(x.strip() for x in body or args):
                self.items.append(("p", "\n".join(_dedent(body or args))))
            return
        if kind == "math":
            self.items.append(("c", "\n".join(_dedent(body or args))))
            return
        if kind in ("image", "figure"):
            alt = options.get("alt", "")
            if alt:  # (an address broken over lines is joined, as docutils joins it)
                self.items.append(("i", f"{alt.replace(chr(0), ' ')}\x00{''.join(x.strip() for x in args)}"))
            if kind == "figure":
                self.nested(body, depth)
            return
        if kind in VERSION_DIRECTIVES:
            version, _, said = arg.partition(" ")
            words = " ".join(x for x in [said, *header] if x.strip())
            lead = f"{VERSION_DIRECTIVES[kind]} {version}".strip()
            self.nested([f"{lead}: {words}" if words else f"{lead}{':' if body else '.'}", *(["", *body] if body else [])],
                        depth)
            return
        if kind == "list-table":
            if arg:
                self.items.append(("t", arg))
            heads = options.get("header-rows", "0")
            self.list_table(body, int(heads) if re.fullmatch(r"[0-9]{1,4}", heads) else 0, depth)
            return
        if kind == "csv-table":
            if arg:
                self.items.append(("t", arg))
            self.csv_table(options, body, depth)
            return
        if (_DESCRIPTION.match(kind) or _DESCRIPTION.match(kind.rpartition("-")[2])) and args:
            # (an extension's object type named for its kind, "django-admin-option", is one too)
            for signature in args:
                self.items.append(("c", signature.strip()))
            self.nested(body, depth)
            self.signed = -1 if any(x.strip() for x in body) else depth  # (this directive's depth: not one it holds)
            return
        if kind not in PROSE_DIRECTIVES:
            # (an extension's directive builds what it shows from its arguments and options when
            # Sphinx builds the page: its content is read, its arguments where they read as words,
            # and the note counts what it builds)
            self.dropped["extension directives"] += 1
            if not _WORDS_ARGUMENT.fullmatch(" ".join(x.strip() for x in args)):
                args = []
        elif kind in LAYOUT_DIRECTIVES:
            args = []
        # an admonition ("note", "warning" ...) or a titled block ("topic"): its title and text are
        # read; a layout's: its text
        if kind in LABEL_DIRECTIVES and args:
            mark = len(self.items)
            self.nested(args, depth)
            shown = len(self.items)
            self.nested(body, depth)
            if not any(x[1] for x in self.items[shown:]):
                del self.items[mark:]  # (a label over nothing read labels nothing)
            return
        self.nested([*args, *(["", *body] if body else [])], depth)

    def define_roles(self, lines: list[str]) -> None:
        """Every ``.. role::`` and ``.. default-role::`` of the page, wherever it sits (inside a
        block not read, such as ``only``, one still defines a role docutils would apply), read
        before anything else: a role used before its definition is known too, and a role defined
        twice hides what any of its definitions hides."""
        for k, line in enumerate(lines):
            for m in _ROLE_DEFINITION.finditer(line) if ".." in line else ():
                kind = _LOCALISED.get(m.group(1).lower(), m.group(1).lower())
                if kind in ("role", "default-role"):
                    self.define_role(kind, line[m.end() : m.end() + 500].strip(), lines[k + 1 : k + 12])

    def define_role(self, kind: str, arg: str, after: list[str]) -> None:
        """One role definition (``after``: the lines after it, where its options are)."""
        if kind == "default-role":
            token = re.match(r"[\w.+:-]{1,200}", arg)
            self.default_roles.append(token.group(0).lower() if token else "title-reference")
            return
        block = []
        for follow in after:  # (its options, wherever they sit: in a cell too; more hides more)
            option = follow.strip(" |+")
            if option and not _OPTION.match(option):
                break
            block.append(option)
        options = {o.group(1).lower(): o.group(2) or "" for o in map(_OPTION.match, block) if o}
        named = re.match(r"([\w.+:-]{1,200})\s*(?:\(\s*([\w.+:-]{1,200}))?", arg[:500])
        if not named:
            return
        name, base = named.group(1).lower(), (named.group(2) or "").lower()
        if len(name) > 60:  # (longer than a use is read as: its text would read as the default role's)
            self.long_role = True
        hides = hidden_by(options.get("class", "")) or "format" in options
        self.roles.setdefault(name, []).append((base or ("raw" if "format" in options else ""), hides))

    def resolve(self, name: str) -> tuple[str, bool]:
        """The built-in role a role name comes to through this page's definitions (the last of
        each), and whether any definition on any way there hides it or derives it from ``raw``."""
        key = name.lower()
        if key in self.resolved:
            return self.resolved[key]
        if len(self.roles) > MAX_ROLES and key in self.roles:  # (no page needs so many: each is read as hidden)
            return key, True
        hidden, seen, todo = False, set(), [key]
        while todo:
            k = todo.pop()
            if k in seen:
                continue
            seen.add(k)
            hidden = hidden or raw_role(k)
            for base, hides in self.roles.get(k, ()):
                hidden = hidden or hides
                if base:
                    todo.append(base)
        kind, followed = key, set()
        while kind in self.roles and kind not in followed and self.roles[kind][-1][0]:
            followed.add(kind)
            kind = self.roles[kind][-1][0]
        self.resolved[key] = (kind.rsplit(":", 1)[-1], hidden)
        return self.resolved[key]

    def default(self) -> tuple[str, bool]:
        """What default-role text reads as: hidden if any of the page's default roles is."""
        if self.default_role is None:
            found = [self.resolve(r) for r in self.default_roles] or [("title-reference", False)]
            self.default_role = (found[-1][0], self.long_role or any(h for _, h in found))
        return self.default_role

    # -- tables --------------------------------------------------------------------------------

    def row(self, cells: list[str], header: bool = False) -> None:
        """A table's row as the HTML loader writes one ("| Growth | $29 |"), a header row marked;
        ``cells`` are as :meth:`cell` read them."""
        cells = [" ".join(c.replace("\x1e", " ").replace("\x1f", " ").split()) for c in cells]
        while cells and not cells[-1]:
            cells.pop()
        if cells:  # (each cell's inline markup is read with the page's, substitutions known)
            self.items.append(("r", "\x1f".join(cells) + ("\x1e" if header else "")))

    def too_wide(self, columns: int) -> bool:
        if columns > MAX_COLUMNS:
            self.dropped["table too wide"] += 1
            return True
        return False

    def spanned(self) -> None:
        # A cell spanning rows or columns is not read: found by its borders alone, what it holds
        # (a comment, a raw block) would be cut into text of its own. Counted, named in the note.
        self.dropped["table with spanning cells"] += 1

    def grid(self, lines: list[str], depth: int) -> None:
        borders = [x.rstrip() for x in lines if x.startswith("+")]
        cuts = sorted({k for b in borders for k, ch in enumerate(b) if ch == "+"})
        if self.too_wide(len(cuts) - 1):
            return
        if not (all(b.count("+") == len(cuts) and all(b[c] == "+" for c in cuts) and not b.strip("+-=") for b in borders)
                and all(all(x[c : c + 1] == "|" for c in cuts) for x in lines if not x.startswith("+"))):
            self.spanned()
            return
        rows: list[str] = []
        for line in [*lines[1:], "+"]:
            if not line.startswith("+"):
                rows.append(line)
                continue
            if rows:  # (a row's end; "+===+" ends the header)
                self.row([self.cell([x[a + 1 : b].rstrip() for x in rows], depth) for a, b in itertools.pairwise(cuts)],
                         header="=" in line)
            rows = []

    def simple(self, lines: list[str], i: int, depth: int) -> int:
        """A simple table from its top border at ``i``; returns where it ends, or ``i`` when no
        closing border follows (then the lines read as text)."""
        spans = [m.start() for m in re.finditer(r"=+", lines[i])]
        j, heads, spanning = i + 1, 0, False
        rows: list[list[list[str]]] = []
        while j < len(lines):
            line = lines[j]
            if _SIMPLE.match(line) or re.fullmatch(r"[-=]+(?: +[-=]+)*[ \t]*", line):
                if _SIMPLE.match(line) and (j + 1 >= len(lines) or not lines[j + 1].strip()):
                    if spanning:
                        self.spanned()
                    elif not self.too_wide(len(spans)):
                        for k, cells in enumerate(rows):
                            self.row([self.cell(c, depth) for c in cells], header=k + 1 == heads)
                    return j + 1
                if line.lstrip().startswith("-"):  # (a row's column-span underline)
                    spanning = True
                elif not heads:
                    heads = len(rows)
                j += 1
                continue
            if not line.strip():
                j += 1
                continue
            if len(spans) <= MAX_COLUMNS and not spanning:
                if any(0 < a < len(line) and line[a - 1] != " " for a in spans):
                    spanning = True  # (text crosses a column)
                ends = [*spans[1:], len(line)]
                parts = [line[a:b] for a, b in zip(spans, ends, strict=True) if a < len(line)]
                if rows and not parts[0].strip():  # (a blank first column continues the row above)
                    for cell, part in zip(rows[-1], parts, strict=False):
                        cell.append(part)
                else:
                    rows.append([[p] for p in parts] + [[] for _ in spans[len(parts):]])
            j += 1
        return i

    def list_table(self, body: list[str], heads: int, depth: int) -> None:
        """A list table: a bullet list of rows ("* - a"), each a bullet list of cells ("  - b")."""
        rows: list[list[list[str]]] = []
        for line in body:
            if line.startswith(("* ", "- ")) or line.rstrip() in ("*", "-"):  # a row ("* - a": its first cell)
                rows.append([])
                line = "  " + line[2:]
            if not rows:
                continue
            inner = line[2:] if line.startswith("  ") else line.lstrip()
            if inner.startswith(("- ", "* ")) or inner.rstrip() in ("-", "*"):
                rows[-1].append([inner[2:]])
            elif rows[-1]:
                rows[-1][-1].append(inner[2:] if inner.startswith("  ") else inner)
        if rows and self.too_wide(max(len(r) for r in rows)):
            return
        for k, cells in enumerate(rows):
            self.row([self.cell(c, depth) for c in cells], header=k + 1 == heads)

    def csv_table(self, options: dict[str, str], body: list[str], depth: int) -> None:
        delim = options.get("delim", ",")
        delim = {"tab": "\t", "space": " ", "": ","}.get(delim, delim)[:1]
        for source, header in ((options.get("header", ""), True), ("\n".join(body), False)):
            if not source.strip():
                continue
            try:
                rows = list(csv.reader(io.StringIO(source), delimiter=delim, skipinitialspace=True))
            except csv.Error:
                self.dropped["broken CSV table"] += 1
                continue
            if rows and self.too_wide(max(len(r) for r in rows)):
                return
            for cells in rows:
                self.row([self.cell(c.split("\n"), depth) for c in cells], header=header)

    # -- inline markup -------------------------------------------------------------------------

    def inline(self, text: str) -> str:
        return Inline(text, self).read()


def _parts(rest: list[str]) -> tuple[list[str], dict[str, str], list[str]]:
    """A directive's block as (argument lines, options, body): the lines before the first blank
    one are its arguments and then its options; the body follows the blank line."""
    blank = next((k for k, x in enumerate(rest) if not x.strip()), len(rest))
    if blank == 0:  # (with nothing on the lines after it, options may follow a blank line, as docutils reads them)
        first = next((k for k, x in enumerate(rest) if x.strip()), len(rest))
        if first < len(rest) and _OPTION.match(rest[first].strip()):
            rest = rest[first:]
            blank = next((k for k, x in enumerate(rest) if not x.strip()), len(rest))
    header, body = rest[:blank], _dedent(rest[blank + 1 :]) if blank < len(rest) else []
    options: dict[str, list[str]] = {}
    args: list[str] = []
    for line in header:
        m = _OPTION.match(line.strip())
        if m:
            options[m.group(1).lower()] = [(m.group(2) or "").strip()]
        elif options:  # an option's value continued
            options[next(reversed(options))].append(line.strip())
        else:
            args.append(line.strip())
    return args, {k: " ".join(v).strip() for k, v in options.items()}, body


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


# What only reStructuredText writes: a directive, a target, a footnote, a substitution's
# definition, or an interpreted text role (an inline literal's double backticks are TeX's and
# AsciiDoc's quotes too, and open a Markdown fence).
_RST_MARK = re.compile(r"^\.\. (?:[\w][\w:+.-]{0,60} ?::|_[^:\n]{1,200}:|\[[^\]\n]{1,100}\]|\|[^|\n]{1,120}\|)"
                       r"|(?:^|(?<=[\s(\['\"])):[^\W\d_][\w+.-]{0,40}(?::[^\W\d_][\w+.-]{0,40})?:`[^`\n]", re.MULTILINE)
_LEAD_SCAN = 200  # lines read for what a page opens with before its title (labels, comments, fields)
MARKED, TITLED = "marked", "titled"


def rst_evidence(text: str) -> str:
    """How surely a plain-text file is a reStructuredText page: Sphinx projects may name their
    sources ``.txt`` (Django's 605 pages, docutils' own), and read as text they showed
    ``:setting:`ALLOWED_HOSTS``` and a title of the file's name. It may be one only when it
    opens (after blank lines, explicit markup such as a ``.. _label:`` target, and
    ``:orphan:``-like fields) with a section title, the adornment at least as long as the title:

    - :data:`MARKED` where it also writes what only reStructuredText writes (:data:`_RST_MARK`):
      it is one, and reads as one;
    - :data:`TITLED` where it writes nothing of the kind but its title is over- and underlined:
      it may be one (Django's release notes) or a plain text with a banner (Debian's TODO
      files, whose dashed rules a reStructuredText reader takes for titles): the caller reads it
      so only where that loses no word;
    - "" otherwise (a title underlined alone, as plain-text and Markdown files write one).

    >>> rst_evidence("Guide\\n=====\\n\\nSee :ref:`x`."), rst_evidence(".. _guide:\\n\\nGuide\\n-----\\n\\n.. note:: Read.")
    ('marked', 'marked')
    >>> rst_evidence("=====\\nGuide\\n=====\\n\\nInstall it with pip.")  # (overlined: perhaps)
    'titled'
    >>> rst_evidence("Guide\\n=====\\n\\nInstall ``it``."), rst_evidence("Notes\\n\\nSee :ref:`y`.")
    ('', '')
    """
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n", _LEAD_SCAN)[:_LEAD_SCAN]
    i, n = 0, len(lines)
    while i < n:
        line = lines[i].rstrip()
        if not line:
            i += 1
        elif line.startswith(".. ") or line == "..":  # (a label, a comment, and what they indent)
            i += 1
            while i < n and (not lines[i].strip() or _indent(lines[i].expandtabs(8))):
                i += 1
        elif _FIELD.match(line) and not _adornment(line):
            i += 1
        else:
            break
    title, overlined = _title_at(lines, i)
    if not title:
        return ""
    # (a Markdown fence may quote reStructuredText's marks: what it holds marks nothing)
    every = text.split("\n")
    unfenced = "\n".join(line for line, code in zip(every, code_lines(every, indented=False), strict=True) if not code)
    return MARKED if _RST_MARK.search(unfenced) is not None else TITLED if overlined else ""


def read_rst(text: str, image: Callable[[str, str], str] = lambda alt, src: f"![{alt}]({src})") -> Read:
    """A reStructuredText page's title and lines (see the module's docstring).

    >>> page = read_rst("Refunds\\n=======\\n\\nAsk **within** 30 days.\\n\\n"
    ...                 "Fees\\n----\\n\\n.. note:: See :ref:`the terms <terms>`.\\n.. raw:: html\\n\\n   <b>x</b>\\n")
    >>> page.title, page.lines, dict(page.dropped)
    ('Refunds', ['Ask within 30 days.', '', (2, 'Fees'), 'See the terms.'], {'raw': 1})
    """
    lines: list[str] = []
    for raw in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        line = raw.expandtabs(8).rstrip()
        if line or (lines and lines[-1]):  # (blank lines in a row mean no more than one)
            lines.append(line)
    reader = _Reader(len(text))
    reader.define_roles(lines)
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
            out.append((level + 1, unescaped(text_).rstrip(":").strip()))
        elif kind == "t":  # (prose that would read as a fence is escaped: code is fenced only by the reader)
            out.extend("\\" + x if x.lstrip().startswith(("```", "~~~")) else x for x in reader.inline(text_).split("\n"))
        elif kind in ("c", "p"):
            code = (reader.inline(text_) if kind == "p" else text_).split("\n")
            fence = "`" * max(3, 1 + max((len(x.strip()) - len(x.strip().lstrip("`")) for x in code), default=0))
            out.extend([fence, *code, fence])
        elif kind == "r":
            cells = [reader.inline(c).replace("|", "\\|") for c in text_.rstrip("\x1e").split("\x1f")]
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
    return Read(title, out, reader.dropped, reader.moved_to)

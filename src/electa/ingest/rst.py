"""reStructuredText pages (``.rst``): what Sphinx and most Python projects write their docs in.

The page is parsed by docutils, the reference implementation, into its document tree, and the
tree is written out as the Markdown-shaped text the rest of ingest reads: each section's title
its heading trail, paragraphs as paragraphs, list items as ``- item``, literal blocks fenced,
inline literals as `code`, tables as rows under their header, admonitions as "Note: …", a
reference or a role as its text (Sphinx's ``:ref:`Refunds <refunds>``` reads "Refunds").

A page is untrusted input, and docutils is a publisher that can reach outside it. So: no file
or URL is ever read (``include``, ``literalinclude``, ``csv-table :file:/:url:``,
``raw :file:``: ``file_insertion_enabled`` off), no raw HTML passes (``raw_enabled`` off), no
configuration file is read from the working directory or the environment
(``_disable_config``), and no message is printed or raised (``report_level`` and
``halt_level`` 5): markup docutils cannot read is left out, never quoted. Comments (``..``)
are left out, as Markdown's and HTML's are: a visitor never sees one, and planted instructions
hide there. Sphinx's roles and a few of its text directives are known by name so that their
text reads as written; its other directives (``toctree``, ``automodule``) hold no prose.
"""

from __future__ import annotations

import io
import re
import threading
from typing import Any

from electa.errors import IngestError

# Sphinx roles whose text is what a reader sees: ``:ref:`Title <target>``` reads "Title",
# ``:func:`json.dumps``` reads "json.dumps" (as code: it names code).
_CODE_ROLES = ("func", "meth", "class", "attr", "mod", "data", "const", "exc", "obj", "envvar", "option",
               "program", "command", "file", "samp", "kbd", "py:func", "py:meth", "py:class", "py:attr",
               "py:mod", "py:data", "py:const", "py:exc", "py:obj", "c:func", "c:type", "c:macro", "js:func",
               "js:class", "makevar", "regexp", "mimetype", "newsgroup", "keyword", "token")
_TEXT_ROLES = ("ref", "doc", "term", "abbr", "guilabel", "menuselection", "download", "numref", "dfn",
               "pep", "rfc", "any", "manpage", "code")
# Sphinx directives whose content is prose a reader sees.
_PROSE_DIRECTIVES = ("seealso", "versionadded", "versionchanged", "deprecated", "glossary", "only", "hlist",
                     "centered", "rubric", "tab", "tabs", "card", "dropdown")
# What Sphinx writes before a version directive's text.
_VERSIONS = {"versionadded": "New in version", "versionchanged": "Changed in version",
             "deprecated": "Deprecated since version"}
# What a role's text shows: "Title <target>" shows the title; "~a.b.c" shows "c" (Sphinx).
_TARGETED = re.compile(r"^(.*?)\s*<[^<>]*>$", re.S)
_UNKNOWN_ROLE = re.compile(r"^:[\w:+.-]+:`(.*)`$", re.S)

_setup = threading.Lock()
_ready = False


def _register() -> None:
    """Teach docutils Sphinx's roles and prose directives, once per process (its registries are
    global)."""
    global _ready
    with _setup:
        if _ready:
            return
        from docutils import nodes
        from docutils.parsers.rst import Directive, directives, roles

        def role(code: bool) -> Any:
            def read(name: str, rawtext: str, text: str, lineno: int, inliner: Any,
                     options: Any = None, content: Any = None) -> tuple[list[Any], list[Any]]:
                shown = _TARGETED.sub(r"\1", text) or text
                shown = shown.lstrip("!")
                if shown.startswith("~"):
                    shown = shown[1:].rsplit(".", 1)[-1]
                return [nodes.literal(rawtext, shown) if code else nodes.Text(shown)], []
            return read

        class AnyOption(dict[str, Any]):
            """Every option a directive is given is accepted, and its value ignored."""

            def __missing__(self, key: str) -> Any:
                return directives.unchanged

        class Prose(Directive):
            """Its content, read as the page's own, after its argument (a title) or what Sphinx
            writes for it ("New in version 2.1: …", "See also: …")."""

            optional_arguments = 1
            final_argument_whitespace = True
            has_content = True
            option_spec = AnyOption(name=directives.unchanged)

            def run(self) -> list[Any]:
                argument = " ".join(self.arguments[0].split()) if self.arguments else ""
                if self.name in _VERSIONS:  # "2.1 Partial refunds." (the explanation may follow)
                    version, _, argument = argument.partition(" ")
                    argument = f"{_VERSIONS[self.name]} {version}: {argument}".strip()
                elif self.name == "seealso" and argument:
                    argument = f"See also: {argument}"
                box = nodes.container()
                if argument:
                    inline, _messages = self.state.inline_text(argument, self.lineno)
                    box += nodes.paragraph(argument, "", *inline)
                self.state.nested_parse(self.content, self.content_offset, box)
                return [box]

        for name in _CODE_ROLES:
            roles.register_local_role(name, role(code=True))
        for name in _TEXT_ROLES:
            roles.register_local_role(name, role(code=False))
        for name in _PROSE_DIRECTIVES:
            directives.register_directive(name, Prose)
        _ready = True


def _settings() -> dict[str, Any]:
    return {
        "file_insertion_enabled": False, "raw_enabled": False, "_disable_config": True,
        # (``traceback`` on: an error is raised to the caller; off, docutils prints it and exits
        # the process, a server's worker included)
        "report_level": 5, "halt_level": 5, "warning_stream": io.StringIO(), "traceback": True,
        "input_encoding": "unicode", "syntax_highlight": "none", "smart_quotes": False,
        "doctitle_xform": True, "sectsubtitle_xform": False, "line_length_limit": 10_000,
    }


# The longest run of non-blank lines (a paragraph, a table, a list item's text) read as
# reStructuredText. docutils reads inline markup in time quadratic in a block's length when its
# start-strings find no end ("*a " 100,000 times over 1,000 lines took 34 s, twice that 130 s;
# "`a ", "|a ", ":r:`a " alike): a page holding a longer block is read as plain text instead
# (a megabyte of such 8,000-character blocks took 64 s to read: less than embedding a megabyte
# of text takes, about two minutes for Node.js's 0.84 MB of Markdown on 2 cores).
MAX_BLOCK = 8_000
_BLANK_LINE = re.compile(r"\n[ \t]*\n")


def longest_block(text: str) -> int:
    """The length of ``text``'s longest run of non-blank lines."""
    return max((len(block) for block in _BLANK_LINE.split(text)), default=0)


def rst_items(name: str, text: str) -> tuple[str, list[tuple[int, str] | str]]:
    """The page's title ('' when it has none of its own) and its headings and lines, as
    :func:`electa.ingest.loaders._sections_from_lines` groups them."""
    _register()
    from docutils.core import publish_doctree
    from docutils.utils import SystemMessage

    try:
        tree = publish_doctree(text, source_path=name, settings_overrides=_settings())
        items: list[tuple[int, str] | str] = []
        _blocks(tree, 1, items)
    # (a parser's own failure on hostile input, nesting past Python's recursion limit included:
    # the file is refused by name, the ingest goes on)
    except (SystemMessage, Exception) as exc:
        raise IngestError(name, f"not readable as reStructuredText ({type(exc).__name__}: {str(exc)[:200]})") from exc
    return str(tree.get("title", "")), items


def _blocks(node: Any, level: int, items: list[tuple[int, str] | str], indent: str = "") -> None:
    from docutils import nodes

    for child in node.children:
        if isinstance(child, (nodes.title, nodes.subtitle, nodes.comment, nodes.system_message, nodes.target,
                              nodes.substitution_definition, nodes.raw, nodes.pending, nodes.image, nodes.transition,
                              nodes.footnote, nodes.citation, nodes.problematic, nodes.decoration, nodes.docinfo)):
            continue
        if isinstance(child, nodes.section):
            heading = child.next_node(nodes.title)
            items.append((level + 1, _inline(heading) if heading is not None else ""))
            _blocks(child, level + 1, items)
        elif isinstance(child, (nodes.paragraph, nodes.rubric, nodes.attribution, nodes.caption, nodes.line)):
            _line(items, indent + _inline(child))
        elif isinstance(child, (nodes.literal_block, nodes.doctest_block)):
            items.extend([indent + "```", *(indent + line for line in child.astext().split("\n")), indent + "```", ""])
        elif isinstance(child, (nodes.bullet_list, nodes.enumerated_list)):
            for n, item in enumerate(child.children, 1):
                mark = f"{n}. " if isinstance(child, nodes.enumerated_list) else "- "
                _item(item, mark, level, items, indent)
            items.append("")
        elif isinstance(child, (nodes.definition_list, nodes.field_list, nodes.option_list)):
            for entry in child.children:
                term, *rest = entry.children
                _item(nodes.Element("", *rest), f"- {_inline(term)}: ", level, items, indent)
            items.append("")
        elif isinstance(child, nodes.table):
            _table(child, items, indent)
        elif isinstance(child, nodes.Admonition):
            label = child.tagname.capitalize() if child.tagname != "admonition" else ""
            inner: list[tuple[int, str] | str] = []
            _blocks(child, level, inner)
            lines = [x for x in inner if isinstance(x, str)]
            first = next((i for i, x in enumerate(lines) if x.strip()), None)
            if label and first is not None:
                lines[first] = f"{label}: {lines[first]}"
            items.extend(indent + x for x in lines)
        elif isinstance(child, nodes.Text):
            _line(items, indent + child.astext())
        elif isinstance(child, nodes.Element):
            _blocks(child, level, items, indent)


def _item(item: Any, mark: str, level: int, items: list[tuple[int, str] | str], indent: str) -> None:
    """One list item: its first paragraph after the mark, the rest (nested lists) indented."""
    inner: list[tuple[int, str] | str] = []
    _blocks(item, level, inner, indent + "  ")
    lines = [x for x in inner if isinstance(x, str)]
    while lines and not lines[-1].strip():
        lines.pop()
    first = next((i for i, x in enumerate(lines) if x.strip()), None)
    if first is None:
        items.append(indent + mark.rstrip(": ").rstrip())
        return
    lines[first] = indent + mark + lines[first].strip()
    items.extend(x for x in lines[first:] if x.strip())


def _table(table: Any, items: list[tuple[int, str] | str], indent: str) -> None:
    from docutils import nodes

    rows: list[list[str]] = []
    header = 0
    for group in table.findall(lambda n: isinstance(n, (nodes.thead, nodes.tbody))):
        for row in group.findall(nodes.row):
            rows.append([_inline(entry).replace("|", "/").replace("\n", " ") for entry in row.children])
        if isinstance(group, nodes.thead):
            header = len(rows)
    if not rows:
        return
    for i, row in enumerate(rows):
        items.append(indent + "| " + " | ".join(row) + " |")
        if header and i == header - 1:
            items.append(indent + "|" + "---|" * len(row))
    items.append("")


def _line(items: list[tuple[int, str] | str], text: str) -> None:
    if text.strip():
        items.extend([text, ""])


def _inline(node: Any) -> str:
    """A paragraph's text as read: inline literals as `code`, references and roles as their
    text, footnote marks left out."""
    from docutils import nodes

    out: list[str] = []
    for child in node.children:
        if isinstance(child, nodes.Text):
            out.append(child.astext())
        elif isinstance(child, nodes.literal):
            code = child.astext().replace("`", "'")
            out.append(f"`{code}`" if code else "")
        elif isinstance(child, nodes.problematic):  # a role docutils does not know: its text
            role = _UNKNOWN_ROLE.match(child.astext())
            out.append(_TARGETED.sub(r"\1", role.group(1)) if role else "")
        elif isinstance(child, (nodes.footnote_reference, nodes.citation_reference, nodes.system_message,
                                nodes.target, nodes.image, nodes.raw)):
            continue
        elif isinstance(child, nodes.Element):
            out.append(_inline(child))
    return "".join(out)

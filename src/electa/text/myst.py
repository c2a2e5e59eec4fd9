"""MyST Markdown read as Sphinx shows it: the Markdown that myst-parser gives Sphinx (pip's
documentation, Jupyter Book, many Python projects' docs), which adds to CommonMark what
reStructuredText has. Read by :func:`read_myst` into plain Markdown, before the Markdown reader:

- **Roles**, ``{name}`text```, read as the reStructuredText reader reads ``:name:`text```
  (:func:`electa.text.rst_inline.role_shown`): ``{ref}`Requirements Files <requirements>``` is
  "Requirements Files", ``{file}`setup.cfg``` is the code `setup.cfg`, ``{pep}`517``` "PEP 517".
  Written as code (``{ref}`x``` inside a code span or block) a role is left as written.
- **Targets**, a line ``(name)=`` (an anchor for links), **comments**, lines opening with
  ``%``, and **block breaks** (``+++``) are nothing a visitor sees: dropped.
- **Directives**, a fence whose info string is ``{name} argument`` (of backticks or tildes, or
  of colons with MyST's ``colon_fence``), its options first (``:key: value`` lines, or a YAML
  block between ``---`` lines) and then its content, are read by name as the reStructuredText
  reader reads a directive of that name:

  - what only steers the build or lives in another file (``toctree``, ``include``, ``raw``,
    ``only``: :data:`~electa.text.rst.DROPPED_DIRECTIVES`) is not read;
  - code (``code-block``, ``code-cell``, ``math``) stays code, its language kept;
  - ``versionadded`` and its kin read "New in version 1.2: …";
  - an image reads as its alt text (made safe later, as every Markdown image is); a figure as
    that and its caption;
  - ``eval-rst`` holds reStructuredText: the reStructuredText reader reads it;
  - an admonition (``note``, ``warning`` …), a tab, a dropdown, a card, and whatever a colon
    fence holds: its argument (a title, a tab's label) and its content, read as Markdown;
  - any other name in a backtick or tilde fence (pip's ``{pip-cli}``, R Markdown's ``{r}``)
    stays code as written: what such a block shows is a command or a program.

A page is read so only when it holds a mark of MyST (a role, a target, or a fence of a directive
Sphinx knows), so a plain page's "% of seats" line stays. Nesting deeper than
:data:`MAX_DEPTH` is read as text; each line is read once a level, so the work is linear in the
page for a given depth.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from electa.text.markdown import ITEM_FENCE, blocks, closes_fence, code_lines, ends_item, outside_code, roles_read
from electa.text.rst import (
    CODE_DIRECTIVES,
    COUNTED_DIRECTIVES,
    DROPPED_DIRECTIVES,
    LABEL_DIRECTIVES,
    LAYOUT_DIRECTIVES,
    PROSE_DIRECTIVES,
    SHOWING_DIRECTIVES,
    TABLE_OF_CONTENTS,
    VERSION_DIRECTIVES,
    hidden_by,
    raw_role,
    read_rst,
    shows_nothing,
)
from electa.text.rst_inline import role_shown

Image = Callable[[str, str], str]

MAX_DEPTH = 16  # nested directives read by name; deeper ones are read as text

_FENCE = re.compile(r"( {0,3})(`{3,}|~{3,}|:{3,})(.*)$")
_NAMED = re.compile(r"\{([A-Za-z][\w:+.-]{0,60})\}(?:[ \t]+(.*?))?[ \t]*$")
_TARGET = re.compile(r" {0,3}\((?! )[^()\n]{1,200}\)=[ \t]*$")  # ("(vcs support)=": a label may hold blanks)
_COMMENT = re.compile(r" {0,3}%")
_BREAK = re.compile(r" {0,3}\+\+\+")
_OPTION = re.compile(r"[ \t]*:([\w][\w-]{0,60}):(?:[ \t]+(.*))?[ \t]*$")
_YAML_OPTION = re.compile(r"[ \t]*([\w][\w-]{0,60})[ \t]*:[ \t]*(.*)$")
_ROLE_MARK_TEXT = re.compile(r"\{[A-Za-z][\w:+.-]{0,60}\}`")  # (a role's look, in code or not)
_ROLE_MARK = re.compile(r"\{[A-Za-z][\w:+.-]{0,60}\}\0")  # (a role's name before a code span held aside)
# Sphinx's domains: "py:func" is read as "func", as the reStructuredText reader reads it.
_DOMAINS = frozenset("py c cpp js std rst".split())
_MORE_CODE = frozenset("code-cell math".split())
_KNOWN = DROPPED_DIRECTIVES | CODE_DIRECTIVES | VERSION_DIRECTIVES.keys() | PROSE_DIRECTIVES | _MORE_CODE | {
    "image", "figure", "eval-rst"}


def _kind(name: str) -> str:
    domain, _, bare = name.rpartition(":")
    return bare if domain in _DOMAINS else name


def _shown(name: str, text: str) -> str:
    return "" if raw_role(name) else role_shown(_kind(name), text)  # (a raw role shows markup, never text)


def is_myst(text: str) -> bool:
    """Whether a Markdown page holds a mark of MyST outside its code: a role, a target line, or
    the fence of a directive Sphinx knows (``{r}`` is R Markdown's code, no mark; a page showing
    MyST in a code block is no MyST page).

    >>> is_myst("See {ref}`setup`."), is_myst("(setup)=\\n# Setup"), is_myst("```{note}\\nHi\\n```")
    (True, True, True)
    >>> is_myst("```{r}\\nplot(x)\\n```\\n% of seats"), is_myst("Use `{x}` in Python.")
    (False, False)
    >>> is_myst("````md\\n```{note}\\nHi\\n```\\n(x)=\\n````\\n% of seats")
    False
    """
    lines = text.split("\n")
    i = 0
    while i < len(lines):  # (the page's own fences and lines, never what its code shows)
        fence = _FENCE.match(lines[i])
        if fence is not None and not (fence.group(2)[0] == "`" and "`" in fence.group(3)):
            named = _NAMED.match(fence.group(3).strip())
            if named is not None and _kind(named.group(1)) in _KNOWN:
                return True
            if named is not None or fence.group(2)[0] != ":":
                i = next((k for k in range(i + 1, len(lines)) if _closes(fence.group(2), lines[k])), len(lines)) + 1
                continue
        elif (item := ITEM_FENCE.match(lines[i])) is not None:
            i = _item_end(lines, i, item)
            continue
        elif _TARGET.match(lines[i]):
            return True
        i += 1
    if _ROLE_MARK_TEXT.search(text) is None:
        return False
    found: list[bool] = []  # (a role outside code: "`{x}`" is code that shows braces)

    def look(prose: str) -> str:
        found.append(bool(_ROLE_MARK.search(prose)))
        return prose

    outside_code(text, look)
    return any(found)


def _item_end(lines: list[str], i: int, item: re.Match[str]) -> int:
    """Where the code a list item's first line opens (``item``, :data:`ITEM_FENCE`) ends: after
    its closing fence, or at the first line indented less than the item's text."""
    within, end = item.start(1), i + 1
    while end < len(lines) and not ends_item(lines[end], within):
        end += 1
        if closes_fence(item.group(1), lines[end - 1][within:]):
            break
    return end


def read_myst(text: str, image: Image = lambda alt, src: f"![{alt}]({src})") -> tuple[str, Counter[str]]:
    """A MyST page as plain Markdown (see the module's docstring), and how many of each thing
    that lives in another file or is hidden it did not read; a page without MyST's marks is
    returned as it is. ``image(alt, address)`` writes an image's line (the Markdown reader passes
    :func:`electa.ingest.figures.image_line`, which escapes what an address or alt text holds).

    >>> page = ("(install)=\\n# Install\\n\\nSee {ref}`the FAQ <faq>` and {file}`pip.conf`.\\n% a comment\\n"
    ...         "```{note}\\n:class: tip\\nIt needs {pep}`517`.\\n```\\n```{toctree}\\nfaq\\n```\\n"
    ...         "```{pip-cli}\\n$ pip install x\\n```")
    >>> print(read_myst(page)[0])
    # Install
    <BLANKLINE>
    See the FAQ and `pip.conf`.
    <BLANKLINE>
    It needs PEP 517.
    <BLANKLINE>
    ```{pip-cli}
    $ pip install x
    ```
    """
    if not is_myst(text):
        return text, Counter()
    reader = _Reader(image)
    return "\n".join(reader.read(text.split("\n"), 0)), reader.dropped


def _closes(run: str, line: str) -> bool:
    m = _FENCE.match(line)
    return m is not None and m.group(2)[0] == run[0] and len(m.group(2)) >= len(run) and not m.group(3).strip()


def _options(body: list[str]) -> tuple[dict[str, str], list[str]]:
    """A directive's options (``:key: value`` lines first, or a YAML block between ``---``
    lines) and the content after them."""
    options: dict[str, str] = {}
    if body and body[0].strip() == "---":
        end = next((k for k in range(1, len(body)) if body[k].strip() == "---"), None)
        if end is not None:
            for line in body[1:end]:
                if m := _YAML_OPTION.match(line):
                    options[m.group(1)] = m.group(2).strip().strip("\"'")
            return options, body[end + 1 :]
    i = 0
    while i < len(body) and (m := _OPTION.match(body[i])):
        options[m.group(1)] = (m.group(2) or "").strip()
        i += 1
    return options, body[i:]


def _fenced(code: list[str], language: str = "") -> list[str]:
    fence = "`" * max(3, 1 + max((len(x.strip()) - len(x.strip().lstrip("`")) for x in code), default=0))
    return [fence + language, *code, fence]


class _Reader:
    def __init__(self, image: Image) -> None:
        self.dropped: Counter[str] = Counter()
        self.image = image

    def read(self, lines: list[str], depth: int) -> list[str]:
        out: list[str] = []
        prose: list[str] = []
        i = 0
        while i < len(lines):
            m = _FENCE.match(lines[i])
            if m is None and (item := ITEM_FENCE.match(lines[i])) and "`" not in lines[i][item.end():]:
                out.extend(self.prose(prose))  # (code opening a list item: as written, to where it closes or the item ends)
                prose, end = [], _item_end(lines, i, item)
                out.extend(lines[i:end])
                i = end
                continue
            if m is None or (m.group(2)[0] == "`" and "`" in m.group(3)):  # (```x``` on one line is inline code)
                prose.append(lines[i])
                i += 1
                continue
            run = m.group(2)
            named = _NAMED.match(m.group(3).strip()) if depth < MAX_DEPTH else None
            if run[0] == ":" and named is None:
                prose.append(lines[i])  # (three colons fence nothing in CommonMark)
                i += 1
                continue
            end = next((k for k in range(i + 1, len(lines)) if _closes(run, lines[k])), len(lines))
            out.extend(self.prose(prose))
            prose = []
            said = None if named is None else self.directive(named.group(1), named.group(2) or "",
                                                              lines[i + 1 : end], run, depth)
            out.extend(lines[i : end + 1] if said is None else said)
            if said is None and end >= len(lines):
                out.append(m.group(1) + run)  # (code a directive's content leaves open closes with it, as in Sphinx)
            i = end + 1
        out.extend(self.prose(prose))
        return out

    def prose(self, lines: list[str]) -> list[str]:
        """Lines outside every fence: targets, comments and breaks dropped, roles read (not in code)."""
        kept: list[str] = []
        flags: list[bool] = []
        for line, code in zip(lines, code_lines(lines), strict=True):
            if code or not (_TARGET.match(line) or _COMMENT.match(line) or _BREAK.match(line)):
                kept.append(line)
                flags.append(code)
        return [x for code, block in blocks(kept, flags) for x in (block if code else roles_read(block, _shown)).split("\n")]

    def directive(self, name: str, arg: str, body: list[str], run: str, depth: int) -> list[str] | None:
        """What a directive shows, as Markdown lines; None for code kept as written. One that
        shows a visitor something, read as nothing with no other count saying why (an autodoc
        class), is counted (:data:`~electa.text.rst.SHOWING_DIRECTIVES`)."""
        kind, counted = _kind(name), sum(self.dropped.values())
        shown = self._directive(kind, arg, body, run, depth)
        if (shown is not None and not any(x.strip() for x in shown) and sum(self.dropped.values()) == counted
                and not shows_nothing(kind)):
            self.dropped[SHOWING_DIRECTIVES] += 1
        return shown

    def _directive(self, kind: str, arg: str, body: list[str], run: str, depth: int) -> list[str] | None:
        options, content = _options(body)
        marks = [arg] if kind in ("container", "div") else []  # (their argument is classes)
        if hidden_by(" ".join([options.get("class", ""), options.get("figclass", ""), *marks])):
            self.dropped["hidden"] += 1  # (":class: hidden", "sr-only" …: as the reStructuredText reader reads it)
            return []
        if kind in DROPPED_DIRECTIVES:
            if kind in COUNTED_DIRECTIVES:
                self.dropped[kind] += 1
            elif kind == "toctree":
                self.dropped[TABLE_OF_CONTENTS] += 1
            return []
        if kind in CODE_DIRECTIVES or kind in _MORE_CODE:
            caption = options.get("caption", "")
            language = "" if kind == "math" else arg.split(" ", 1)[0]
            return ["", *([caption, ""] if caption else []), *_fenced(content, language), ""]
        if kind == "eval-rst":
            page = read_rst("\n".join(content), self.image)
            self.dropped.update({k: n for k, n in page.dropped.items() if k not in ("comment", "hyperlink target")})
            read = [("#" * min(6, x[0]) + " " + x[1]) if isinstance(x, tuple) else x for x in page.lines]
            return ["", *([page.title, ""] if page.title else []), *read, ""]
        if kind in ("image", "figure"):
            alt = options.get("alt", "")
            image = [self.image(alt, arg), ""] if alt else []
            return ["", *image, *(self.read(content, depth + 1) if kind == "figure" else []), ""]
        if kind in VERSION_DIRECTIVES:
            version, _, words = arg.partition(" ")
            lead = f"{VERSION_DIRECTIVES[kind]} {version}".strip()
            first = f"{lead}: {words}" if words else f"{lead}{':' if any(x.strip() for x in content) else '.'}"
            return ["", first, "", *self.read(content, depth + 1), ""]
        if run[0] == ":" or kind in PROSE_DIRECTIVES:  # (a layout's argument is column counts or classes)
            title = arg if arg and kind not in LAYOUT_DIRECTIVES else ""
            shown = self.read(content, depth + 1)
            if kind in LABEL_DIRECTIVES and not any(x.strip() for x in shown):
                return []  # (a label over nothing read labels nothing)
            return ["", *([title, ""] if title else []), *shown, ""]
        return None

"""What a loader returns (:class:`Loaded`), and the reading every page format shares (SPEC A1):
a page's lines grouped into sections under their heading trail, and the headings a
``<details>``'s ``<summary>`` makes, which the Markdown and HTML readers both read."""

from __future__ import annotations

from collections.abc import Callable, Set
from dataclasses import dataclass, field
from pathlib import PurePath

from electa.errors import IngestError
from electa.text.markdown import navigation_heading
from electa.types import CuratedAnswer, Document, QAPair, Section


@dataclass
class Loaded:
    documents: list[Document] = field(default_factory=list)
    qa_pairs: list[QAPair] = field(default_factory=list)
    note: str = ""
    curated: list[CuratedAnswer] = field(default_factory=list)
    # The page asks not to be indexed (<meta name="robots" content="noindex">): a folder's
    # ingest does not store it unless told to read such pages (:func:`asks_not_indexed`).
    noindex: bool = False
    # The page only sends its visitor to this address (a meta refresh: electa.text.refresh): a
    # folder's ingest does not store it, as a search engine indexes where it leads.
    moved_to: str = ""


Loader = Callable[[str, bytes], Loaded]


def stem_title(name: str) -> str:
    return PurePath(name).stem.replace("-", " ").replace("_", " ").strip().capitalize()


def sections_from_lines(lines: list[tuple[int, str] | str], navigation: Set[int] = frozenset()) -> list[Section]:
    """Group text under a heading trail. Items are ``(level, heading)`` or a text line; a heading
    of no words closes the sections down to its level (the end of a <details> whose <summary>
    headed it: :func:`read_html`).

    >>> [s.path for s in sections_from_lines([(2, "Billing"), (3, "Refunds?"), "30 days.", (3, ""), "Card only."])]
    [('Billing', 'Refunds?'), ('Billing',)]

    A section whose heading names a list of links to elsewhere ("See also", "Related articles",
    "Table of contents": :func:`electa.text.markdown.navigation_heading`) and whose lines are all
    ``navigation`` (the indexes of lines that are each one link to another page, two or more
    of them) says nothing of its own page, and its title trail with its short text made it the
    passage that stood for the page (npm's docs: "How do I see outdated packages?" was answered
    from npm-diff, because npm-outdated's "See Also" list stood for npm-outdated). It is left
    out, unless the page holds nothing else. A list of links under another heading
    ("Prerequisites", "Supported integrations") is that heading's content, and stays.

    >>> lines = [(2, "Refunds"), "We refund in 30 days.", (2, "See also"), "- [Billing](/billing)", "", "- [Plans](/plans)"]
    >>> [s.path for s in sections_from_lines(lines, {3, 5})]
    [('Refunds',)]
    >>> [s.path for s in sections_from_lines([*lines[:2], (2, "Integrations"), *lines[3:]], {3, 5})]
    [('Refunds',), ('Integrations',)]
    >>> [s.path for s in sections_from_lines(lines[2:], {1, 3})]
    [('See also',)]
    """
    sections: list[tuple[Section, bool]] = []
    trail: list[tuple[int, str]] = []
    buf: list[str] = []
    links = others = 0

    def flush() -> None:
        text = "\n".join(buf).strip()
        if text:
            listed = links >= 2 and not others and bool(trail) and navigation_heading(trail[-1][1])
            sections.append((Section(tuple(h for _, h in trail), text), listed))
        buf.clear()

    for i, item in enumerate(lines):
        if isinstance(item, tuple):
            flush()
            links = others = 0
            level, heading = item
            while trail and trail[-1][0] >= level:
                trail.pop()
            if heading:  # (a heading of no words closes the sections down to its level: read_html's <details>)
                trail.append((level, heading))
        else:
            buf.append(item)
            if i in navigation:
                links += 1
            elif item.strip():
                others += 1
    flush()
    if all(listed for _, listed in sections):
        return [section for section, _ in sections]
    return [section for section, listed in sections if not listed]


def page_document(ext_id: str, title: str, url: str, sections: list[Section], name: str) -> Document:
    text = "\n\n".join(s.text for s in sections).strip()
    if not text:
        raise IngestError(name, "no text could be extracted")
    return Document(ext_id=ext_id, title=title, text=text, url=url, sections=tuple(sections))


class Disclosures:
    """The ``<details>`` a reader is inside, and the level of the last heading it read. A
    ``<details>``'s ``<summary>`` is the heading of what it discloses (an FAQ's question: "Do you
    offer discounts for non-profits?" over its answer; Node.js's "History" over its tables of
    changes), one level below the heading before it, until the ``<details>`` ends, where a heading
    of no words closes its section (:func:`sections_from_lines`) and the level goes back. Only a
    ``<details>``'s first summary heads, and none below a sixth-level heading. A summary that
    holds a heading (rustdoc's method headings) is that heading, at its own level
    (:meth:`wrapping`), and closes with its ``<details>`` alike where it lies below the level
    before it; the words it holds before that heading end the ``<details>`` (:meth:`hold`).

    >>> d = Disclosures()
    >>> d.level = 2
    >>> d.open(); d.summary("Refunds?"), d.summary("Again?"), d.level, d.close(), d.level
    ((3, 'Refunds?'), None, 3, (3, ''), 2)
    >>> d.open(); d.close() is None, d.close() is None  # (no summary, then none open: nothing to close)
    (True, True)
    >>> d.open(); d.wrapping(); d.hold("1.0 · Source"); d.heading(4); d.summary("Again?"), d.level
    (None, 4)
    >>> d.held(), d.held(), d.close(), d.level
    ('1.0 · Source', '', (4, ''), 2)
    """

    def __init__(self) -> None:
        self.level = 0
        self._open: list[_Open] = []  # (each open <details>, innermost last)

    def wrapping(self) -> None:
        """The innermost open ``<details>``'s summary holds a heading: the next heading read
        (:meth:`heading`) while it is the innermost is that summary, at its own level, if below
        the level before the ``<details>`` (one at or above it lasts past the ``<details>``, as
        any heading would)."""
        if self._open and not self._open[-1].summary:
            self._open[-1].awaiting = True

    @property
    def awaiting(self) -> bool:
        """Whether the next heading read is a summary's (:meth:`wrapping`)."""
        return bool(self._open) and self._open[-1].awaiting

    def unwrap(self) -> None:
        """A ``<summary>`` ended: a heading read after it is none of its (a summary's heading
        inside a block read whole was never read as a heading)."""
        if self._open:
            self._open[-1].awaiting = False

    def heading(self, level: int, heads: bool = True) -> None:
        """A heading of ``level`` was read; ``heads``: it began a section (not the page's title
        nor a heading of no words, which a summary's heading then is not: its ``<details>``
        would close a section it never opened)."""
        if self.awaiting:
            inner = self._open[-1]
            inner.summary, inner.awaiting = (level if heads and level > inner.back else 0), False
        self.level = level

    def open(self) -> None:
        self._open.append(_Open(back=self.level))

    def hold(self, words: str) -> None:
        """``words`` a summary holds before its heading (rustdoc's "1.70.0 · Source": the version
        a method is stable since and a link to its code) are the innermost ``<details>``' last
        paragraph (:meth:`held`), not its section's first: ahead of what the item does, they made
        that section longer than its "Examples" for full text, which then stood for the item more
        often (``bench/rustdoc_probe.py``), and behind the heading before, they were no one's."""
        if self._open:
            self._open[-1].held = f"{self._open[-1].held} {words}".strip()

    def held(self) -> str:
        """What :meth:`hold` kept for the innermost ``<details>``, read once as it ends."""
        if not self._open:
            return ""
        found, self._open[-1].held = self._open[-1].held, ""
        return found

    def summary(self, words: str) -> tuple[int, str] | None:
        """The heading ``words`` make as the innermost open ``<details>``'s summary, or None."""
        if not words or not self._open or self._open[-1].summary or self.level >= 6:
            return None
        inner = self._open[-1]
        inner.summary, inner.back, inner.awaiting = self.level + 1, self.level, False
        self.level += 1
        return self.level, words

    def close(self) -> tuple[int, str] | None:
        """The innermost ``<details>`` ends: the item that closes its summary's section, or None
        where it had no summary (nor any open)."""
        inner = self._open.pop() if self._open else _Open(back=self.level)
        if not inner.summary:
            return None
        self.level = inner.back
        return inner.summary, ""


@dataclass
class _Open:
    """An open ``<details>`` (:class:`Disclosures`): its summary's level (0 while it has none),
    the level before it, whether its summary holds a heading not yet read, and the words that
    summary held before its heading."""

    back: int
    summary: int = 0
    awaiting: bool = False
    held: str = ""

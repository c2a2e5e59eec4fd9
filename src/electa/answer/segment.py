"""Reading a passage the way its author wrote it: blocks first, then sentences (issue 9, item 2).

A help-center page is Markdown (or HTML flattened to one block per line) and is usually
hard-wrapped, so a line break is not a sentence end. :func:`segment` first cuts the text into
structural **blocks** — paragraphs (hard-wrapped lines joined), list items (with their wrapped
continuation lines), table rows (shown with their header: "Plan: Growth; Price: $29/mo"),
headings, fenced code — and only then splits paragraphs and list items into sentences with
pySBD (Sadvilkar & Neumann 2020, "PySBD: Pragmatic Sentence Boundary Disambiguation", the
Golden Rules set: abbreviations, decimals, initials, ellipses). URLs, e-mail addresses,
inline code spans and version strings are masked before pySBD sees them, because its rules
break "https://x.example/a?b=1" at the "?". ``bench/segmentation.py`` measures this against the
line-and-punctuation regex it replaced and against pySBD alone, on hand-labelled passages.

:func:`needs_previous` says when a sentence cannot stand alone ("After 14 days, …",
"This limit…", "Otherwise …"): the extractive answerer then brings the sentence before it.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from electa.text.markdown import atx_heading, ends_item

# A fence at any indentation (a step list's code is indented as its item's text is), or opening a
# list item ("- ```"); it closes with a run of its character at least as long and nothing after
# it (CommonMark): "  ```" under "- ```" closes that item's code, and opens none.
_FENCE = re.compile(r"^\s*(?:(?:[-*+]|\d{1,9}[.)])\s+)?(`{3,}|~{3,})")
_CLOSING = re.compile(r"^\s*(`{3,}|~{3,})\s*$")
_ITEM = re.compile(r"^(\s*)(?:[-*+•]|\d{1,3}[.)])\s+")
_ROW = re.compile(r"^\s*\|.*\|\s*$")
_RULE_ROW = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_SETEXT = re.compile(r"^\s{0,3}(=+|-+)\s*$")
# Spans pySBD must not cut inside. Their punctuation is masked with "_" (same length) so the
# character offsets pySBD returns still index the original text.
_PROTECT = re.compile(
    r"(?:https?://|www\.)[^\s<>\"'`]+[^\s<>\"'`.,;:!?)\]]"  # URLs (trailing punctuation stays outside)
    r"|[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){1,8}"      # e-mail addresses (bounded: no quadratic scan)
    r"|`[^`\n]+`"                                            # inline code
    r"|<!--|-->"                                             # comment edges (pySBD splits "<!" from "--")
    r"|\bv?\d+(?:\.\d+){2,}\b"                               # versions: 2.3.1, v10.0.4
    r"|\b(?:[A-Za-z]\.){2,}"                                 # i.e. e.g. U.S. a.m. — pySBD knows most; belt and braces
    r"|(?<![^\s(\[\"'])\.[^\W_]\w*"                          # a name led by a dot (.NET, .gitignore, .csv), where
)                                                            # pySBD ended a sentence: "… to support ." (CMake's help)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
# Function words that tell pySBD which abbreviation list to use ("Mio." and "IV." in German,
# "EE. UU." in Spanish). A guess per paragraph; English when nothing else wins.
_FUNCTION_WORDS = {
    "en": frozenset("the and of to is are was were with that for this from".split()),
    "de": frozenset("der die das und ist nicht mit den dem des ein eine zu von wurde sich".split()),
    "es": frozenset("el la los las y de que en es por con una para del se".split()),
    "fr": frozenset("le la les et est des une pour dans que qui du sur pas avec".split()),
    "it": frozenset("il lo gli le e di che una per con del della sono non".split()),
    "nl": frozenset("de het een en van is dat niet met voor zijn op te".split()),
}

# Openers that point back at what came before (demonstratives, connectives, relative times).
_DEPENDENT = re.compile(
    r"^(?:this|that|these|those|such|it|its|they|them|their|both|either|neither|"
    r"however|otherwise|instead|then|also|additionally|furthermore|moreover|besides|still|"
    r"therefore|thus|hence|so|but|and|or|nor|yet|except|unless|only|if not|if so|in that case|"
    r"in this case|in either case|in both cases|in addition|as a result|for (?:this|that) reason|"
    r"after (?:that|this|the|\d)|before (?:that|this|the|\d)|beyond (?:that|this|the|\d)|"
    r"past (?:that|this|the|\d)|after|afterwards|until then|from then on|at that point|"
    r"the same|the above|the following|here|there)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Sentence:
    """One sentence (or table row, heading, list item) of a passage.

    ``text`` is what an answer may quote: hard wraps joined, runs of spaces collapsed, a table
    row spelled with its header. ``start``/``end`` are offsets into the segmented text (for
    matching spans such as injection findings); ``block`` numbers the structural block, and
    ``kind`` is ``paragraph``, ``item``, ``row``, ``heading`` or ``code``.
    """

    text: str
    start: int
    end: int
    block: int
    kind: str
    ends_with_colon: bool = False


@dataclass
class _Block:
    kind: str
    pieces: list[tuple[int, str]]  # (offset of the line's text in the original, line text)
    opens_table: bool = False      # a row after a blank line or other text starts a new table


def _blocks(text: str) -> list[_Block]:
    blocks: list[_Block] = []
    current: _Block | None = None
    fence = ""  # the open code's run of backticks or tildes, or ""
    within = 0  # where the text of the list item whose first line opened it starts (0: none)
    offset = 0
    for raw in text.splitlines(keepends=True):
        line = raw.rstrip("\r\n")
        start = offset
        offset += len(raw)
        if fence and ends_item(line, within):
            fence, current = "", None  # (as the page's reader reads it)
        if fence:
            m = _CLOSING.match(line)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence, current = "", None
                continue
        elif (m := _FENCE.match(line)) and not (m.group(1)[0] == "`" and "`" in line[m.end():]):
            fence, current = m.group(1), _Block("code", [])
            within = m.start(1) if line[: m.start(1)].strip() else 0
            blocks.append(current)
            continue
        if fence:
            assert current is not None
            current.pieces.append((start, line))
            continue
        stripped = line.strip()
        if not stripped:
            current = None
            continue
        lead = len(line) - len(line.lstrip())
        heading = atx_heading(line)
        if heading is not None:
            blocks.append(_Block("heading", [(start + heading[1], heading[2])]))
            current = None
        elif _SETEXT.match(line) and current is not None and current.kind == "paragraph" and len(current.pieces) == 1:
            current.kind, current = "heading", None
        elif _ROW.match(line) or (current is not None and current.kind in ("row", "header") and "|" in stripped):
            if not _RULE_ROW.match(line):
                opens = current is None or current.kind not in ("row", "header")
                blocks.append(_Block("row", [(start + lead, stripped)], opens))
            elif blocks and blocks[-1].kind == "row" and blocks[-1].opens_table and current is blocks[-1]:
                blocks[-1].kind = "header"  # only a table's first row, right over a |---| line, is a header
            current = blocks[-1] if blocks and blocks[-1].kind in ("row", "header") else None
        elif _ITEM.match(line):
            m = _ITEM.match(line)
            assert m is not None
            current = _Block("item", [(start + m.end(), line[m.end():].rstrip())])
            blocks.append(current)
        elif current is not None and current.kind in ("paragraph", "item"):
            current.pieces.append((start + lead, stripped))  # a hard-wrapped continuation line
        else:
            current = _Block("paragraph", [(start + lead, stripped)])
            blocks.append(current)
    return blocks


def _joined(pieces: list[tuple[int, str]]) -> tuple[str, list[int]]:
    """The block's lines joined by single spaces, and for each character its original offset."""
    out: list[str] = []
    where: list[int] = []
    for i, (start, line) in enumerate(pieces):
        if i:
            out.append(" ")
            where.append(start - 1)
        out.append(line)
        where.extend(range(start, start + len(line)))
    return "".join(out), where


_LOCAL = threading.local()


def _segmenter(language: str) -> Any:
    """One pySBD segmenter per thread and language: ``Segmenter.segment`` keeps the text it is
    working on in an attribute, so two threads sharing one would read each other's text."""
    import pysbd

    made = _LOCAL.__dict__.setdefault("segmenters", {})
    if language not in made:
        made[language] = pysbd.Segmenter(language=language, clean=False, char_span=True)
    return made[language]


def _mask(text: str) -> str:
    return _PROTECT.sub(lambda m: re.sub(r"[.!?;:]", "_", m.group(0)), text)


def _language(text: str) -> str:
    if _CJK.search(text):
        return "zh"
    words = re.findall(r"[^\W\d_]+", text.lower())
    counts = {lang: sum(w in vocab for w in words) for lang, vocab in _FUNCTION_WORDS.items()}
    best = max(counts, key=lambda lang: counts[lang])
    return best if counts[best] > counts["en"] else "en"


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans ``(start, end)`` of one paragraph (no line structure), stripped of spaces.

    >>> t = "See https://x.example/a?b=1 for v2.3.1. Dr. Lee pays $12.50/mo, e.g. today. OK!"
    >>> [t[a:b] for a, b in split_sentences(t)]
    ['See https://x.example/a?b=1 for v2.3.1.', 'Dr. Lee pays $12.50/mo, e.g. today.', 'OK!']
    """
    if not text.strip():
        return []
    language = _language(text)
    spans = []
    for s in _segmenter(language).segment(_mask(text)):
        a, b = s.start, s.end
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if b > a:
            spans.append((a, b))
    return spans


def _row_text(cells: list[str], header: list[str] | None) -> str:
    if header and len(header) == len(cells) and header != cells:
        return "; ".join(f"{h}: {c}" if h else c for h, c in zip(header, cells, strict=True) if c)
    return "; ".join(c for c in cells if c)


@lru_cache(maxsize=1024)  # passages of a few KB each: bounded memory
def segment(text: str) -> tuple[Sentence, ...]:
    """The sentences of ``text`` in reading order.

    >>> [s.text for s in segment("Refunds are given in full\\nonly within 14 days. After\\n14 days, none.")]
    ['Refunds are given in full only within 14 days.', 'After 14 days, none.']
    >>> [s.text for s in segment("| Plan | Price |\\n|---|---|\\n| Growth | $29/mo |")]
    ['Plan; Price', 'Plan: Growth; Price: $29/mo']
    """
    out: list[Sentence] = []
    header: list[str] | None = None
    for b, block in enumerate(_blocks(text)):
        if block.kind not in ("row", "header") or block.opens_table:
            header = None
        if block.kind in ("heading", "code"):
            joined, where = _joined(block.pieces)
            if joined.strip():
                body = joined.strip() if block.kind == "heading" else "\n".join(p for _, p in block.pieces)
                out.append(Sentence(body, where[0], where[-1] + 1, b, block.kind))
            continue
        if block.kind in ("row", "header"):
            start, line = block.pieces[0]
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if block.kind == "header":
                header = cells
            out.append(Sentence(_row_text(cells, None if block.kind == "header" else header), start,
                                start + len(line), b, "row"))
            continue
        joined, where = _joined(block.pieces)
        for a, z in split_sentences(joined):
            sentence = re.sub(r"\s+", " ", joined[a:z])
            out.append(Sentence(sentence, where[a], where[z - 1] + 1, b, block.kind, sentence.endswith(":")))
    return tuple(out)


def needs_previous(sentence: Sentence, previous: Sentence | None) -> bool:
    """Whether ``sentence`` leans on the one before it: it opens with a pointer back ("This
    limit…", "After 14 days, …", "Otherwise…", "Only…") within the same block or right after
    it, or it is a list item introduced by a sentence ending in a colon.

    >>> a, b = segment("Annual plans are refunded within 30 days. After 30 days, we refund unused months.")
    >>> needs_previous(b, a), needs_previous(a, None)
    (True, False)
    """
    if previous is None or previous.kind in ("heading", "code"):
        return False
    if sentence.kind == "item" and previous.ends_with_colon:
        return True
    adjacent = previous.block == sentence.block or previous.block == sentence.block - 1
    return adjacent and sentence.kind != "row" and bool(_DEPENDENT.match(sentence.text))

"""Heading-aware parent/child chunking (SPEC A2).

- Each heading section becomes one or more **parent** chunks of at most ``parent_chars``, cut at
  paragraph, then sentence, then word boundaries, a fenced block of code being one paragraph;
  a parent's title is the document title followed by its heading path ("Billing > Refunds >
  Annual plans").
- A parent longer than ``child_chars`` is covered by **child** windows of ``child_chars`` with
  ``overlap`` characters shared between neighbours (for the dense leg: small texts embed
  sharply).
- A document with more than one parent also gets one **doc** unit: title plus the whole text,
  so a question about the document as a whole can match it.
- A titled document with text gets one **title** unit: the title alone, for the dense leg only,
  shown as the document's first parent. A short question ("Can I get my money back?") is close
  to a page's title ("Refund policy") but far from a vector that also carries 2,000 characters
  of body. Measured with ``electa eval``: StackFAQ dev dense leg 0.9635 -> 0.9797 nDCG@10;
  SciFact train (paper titles say less than abstracts) 0.6941 -> 0.6884.

``CHUNKER_VERSION`` is stamped on every chunk (SPEC A4); bump it when the output changes. (Kept
at hp-2 when fenced code was kept whole: text without fences is cut byte for byte as before, on
every eval corpus, so the tunes made on them stand; the README says what that leaves.)
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from electa.text.markdown import FENCE, closes_fence
from electa.types import Chunk, ChunkKind, Document, Section

CHUNKER_VERSION = "hp-2"

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _split(text: str, limit: int) -> list[str]:
    """Cut ``text`` into pieces of at most ``limit`` characters at the coarsest boundary; a
    fenced block of code is one paragraph (:func:`_parts`)."""
    if len(text) <= limit:
        return [text]
    lines = text.split("\n")
    if any(code for code, _ in _fenced(lines)):
        return _pack(_parts(lines, limit), limit)
    for pattern in (r"\n\s*\n", None, r"\s+"):
        parts = _SENTENCE_END.split(text) if pattern is None else re.split(pattern, text)
        if len(parts) > 1:
            break
    else:
        return [text[i : i + limit] for i in range(0, len(text), limit)]
    return _pack([p.strip() for p in parts], limit)


def _fenced(lines: list[str]) -> Iterator[tuple[bool, list[str]]]:
    """Runs of prose lines and fenced blocks of code, each block alone (two blocks written one
    after the other are two), a block never closed running to the end, as CommonMark reads it.
    (Fenced only: the chunker does not know a page's format, and an indented paragraph of a
    text file or a PDF is prose.)"""
    prose: list[str] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m is None or (m.group(1)[0] == "`" and "`" in lines[i][m.end():]):  # (```x``` is inline code)
            prose.append(lines[i])
            i += 1
            continue
        if prose:
            yield False, prose
            prose = []
        run, block = m.group(1), [lines[i]]
        i += 1
        while i < len(lines):
            block.append(lines[i])
            i += 1
            if closes_fence(run, block[-1]):
                break
        yield True, block
    if prose:
        yield False, prose


def _parts(lines: list[str], limit: int) -> list[str]:
    """The paragraphs of a text holding fenced code, each block of code whole (its blank lines
    are no paragraph breaks, its lines keep their indentation) or, when longer than ``limit``,
    cut at line breaks, each piece fenced as the block was. Cut at blank lines, a block of
    Rust's book began a passage with its second half: the answerer quoted a line of code as a
    sentence, and the block's closing fence opened one that made the prose after it code."""
    parts: list[str] = []
    for code, block in _fenced(lines):
        text = "\n".join(block)
        if not code:
            parts.extend(p.strip() for p in re.split(r"\n\s*\n", text))
        elif len(text.rstrip()) <= limit:
            parts.append(text.strip("\n").rstrip())
        else:
            parts.extend(_code_pieces(block, limit))
    return parts


def _code_pieces(block: list[str], limit: int) -> list[str]:
    """A fenced block longer than ``limit`` as pieces of whole lines, each opened and closed by
    a fence (a line longer than the room left is cut). The opening line's words (its language)
    are kept when short; a fence too long to repeat within half a passage (a page's run of a
    thousand backticks) is not repeated, and the pieces are plain lines: a passage of
    characters, never one per character."""
    m = FENCE.match(block[0])
    assert m is not None
    run = m.group(1)
    closed = len(block) > 1 and closes_fence(run, block[-1])
    lines = block[1:-1] if closed else block[1:]
    opener = block[0].strip() if len(block[0].strip()) <= 40 else run
    if len(opener) + len(run) + 2 > limit // 2:
        opener = run = ""
    room = limit - (len(opener) + len(run) + 2 if run else 0)
    pieces: list[list[str]] = [[]]
    size = 0
    for line in lines:
        for cut in [line[i:i + room] for i in range(0, len(line), room)] or [""]:
            if pieces[-1] and size + len(cut) + 1 > room:
                pieces.append([])
                size = 0
            pieces[-1].append(cut)
            size += len(cut) + 1
    return ["\n".join([opener, *p, run] if run else p) for p in pieces if any(x.strip() for x in p)]


def _pack(parts: list[str], limit: int) -> list[str]:
    """``parts`` joined by blank lines into pieces of at most ``limit`` (a longer part cut by
    :func:`_split`)."""
    pieces: list[str] = []
    current = ""
    for part in parts:
        if not part.strip():
            continue
        candidate = f"{current}\n\n{part}" if current else part
        if len(candidate) <= limit:
            current = candidate
            continue
        if current:
            pieces.append(current)
        if len(part) > limit:
            pieces.extend(_split(part, limit))
            current = ""
        else:
            current = part
    if current:
        pieces.append(current)
    return pieces


def _windows(text: str, size: int, overlap: int) -> list[str]:
    """Word-aligned windows of about ``size`` characters, neighbours sharing ``overlap``."""
    words = text.split()
    out: list[str] = []
    start = 0
    while start < len(words):
        length = 0
        end = start
        while end < len(words) and (length + len(words[end]) + 1 <= size or end == start):
            length += len(words[end]) + 1
            end += 1
        out.append(" ".join(words[start:end]))
        if end >= len(words):
            break
        back = 0
        step_back = end
        while step_back > start + 1 and back + len(words[step_back - 1]) + 1 <= overlap:
            step_back -= 1
            back += len(words[step_back]) + 1
        start = step_back
    return out


def chunk_document(
    doc: Document, parent_chars: int = 2000, child_chars: int = 500, overlap: int = 100
) -> list[Chunk]:
    """Parent, child and doc chunks of ``doc``, ordinals in reading order.

    >>> from electa.types import Section
    >>> d = Document("a", "Guide", "x", sections=(Section(("Setup",), "Install it."),))
    >>> [(c.kind.value, c.title) for c in chunk_document(d)]
    [('parent', 'Guide > Setup'), ('title', 'Guide')]
    """
    chunks: list[Chunk] = []
    sections = doc.sections or ()
    if not sections and doc.text.strip():
        sections = (Section((), doc.text),)
    for section in sections:
        title = " > ".join((doc.title, *section.path)) if doc.title else " > ".join(section.path)
        for piece in _split(section.text.strip(), parent_chars):
            parent_ordinal = len(chunks)
            chunks.append(Chunk(ChunkKind.PARENT, parent_ordinal, title, piece))
            if len(piece) > child_chars:
                for window in _windows(piece, child_chars, overlap):
                    chunks.append(Chunk(ChunkKind.CHILD, len(chunks), title, window, parent_ordinal))
    parents = [c for c in chunks if c.kind is ChunkKind.PARENT]
    if not parents and doc.title.strip():
        chunks.append(Chunk(ChunkKind.PARENT, 0, doc.title, ""))
    elif len(parents) > 1:
        chunks.append(Chunk(ChunkKind.DOC, len(chunks), doc.title, _with_headings(sections)))
    shown = title_unit_parent(doc.title, parents)
    if shown is not None:
        chunks.append(Chunk(ChunkKind.TITLE, len(chunks), doc.title, "", shown))
    return chunks


def _with_headings(sections: tuple[Section, ...] | list[Section]) -> str:
    """The whole text with each section's heading as a Markdown heading line. Without them a
    plans page reads "$12/mo … $29/mo …" with no plan names, and neither a reader nor a model
    can tell which price is whose. (Documents without headings, such as BEIR records, come out
    as before, so ``CHUNKER_VERSION`` and the settings tuned on it stand.)"""
    parts = []
    for section in sections:
        head = f"{'#' * min(6, len(section.path) + 1)} {section.path[-1]}\n" if section.path else ""
        parts.append(head + section.text.strip())
    return "\n\n".join(p for p in parts if p.strip())


def title_unit_parent(title: str, parents: list[Chunk]) -> int | None:
    """The parent a title unit is shown as: the first with text, when there is a title.

    None when no title unit is worth a vector (no title, or no text for it to stand for: a
    title-only document's one parent already embeds just the title). The store's upgrade of
    older indexes (``IndexStore.documents_missing_title_units``) applies the same rule."""
    if not title.strip():
        return None
    return next((p.ordinal for p in parents if p.text.strip()), None)


def embed_text(chunk: Chunk) -> str:
    """What the dense model reads for a chunk: its title trail, then its text."""
    return f"{chunk.title}\n{chunk.text}".strip()

"""Where in a long passage the question's words are (SPEC C7: a passage cut to fit the prompt).

A hit's passage is its unit's text cut to ``passage_chars`` (1,000 by default), and a unit can be
longer: a parent section up to the chunker's 2,000 characters, or a whole document when its
whole-document vector is what the dense leg found. Cut at the head, the part that holds the
question's words can fall outside: asked "What is ENOENT?", Node.js's "Common system errors"
section (1,887 characters, one list item per error code) was read up to ECONNRESET, and the
answer quoted that. :func:`focus_start` says where to start reading instead: at the start of the
line or sentence whose window holds the most of the question's terms, the head when no window
holds more than it does, so a passage whose head holds them all is read as before.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Set

from electa.text.analysis import index_terms
from electa.text.markdown import code_lines

# Only so far into a unit is looked at (a whole document can run to hundreds of kilobytes).
FOCUS_SCAN = 60_000
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")
_BLOCK_START = re.compile(r"\s*(?:[*+-]\s|\d{1,3}[.)]\s|#|\|)")


def pieces(text: str, longest: int) -> list[tuple[int, str]]:
    r"""``text`` as (offset, piece): its blocks (a block starts after a blank line, and at a list
    item, heading or table row), a block longer than ``longest`` split at its sentence ends, and
    a sentence longer than ``longest`` at its last space or line break within it (else
    anywhere). The places a passage may start reading: a hard-wrapped line's continuation ("a
    peer.") only inside such an over-long sentence. A fenced code block is one piece, from its
    opening fence, however long: read from within, its lines would be taken for prose and the
    prose after its closing fence for code (Node.js's ``process.env`` was read from
    "env.foo = 'bar';", and the answer quoted code).

    >>> pieces("One. Two\nwrapped.\n* Three.", 12)
    [(0, 'One.'), (5, 'Two\nwrapped.'), (18, '* Three.')]
    >>> pieces("Set it:\n```js\n# not a heading\n\nenv.foo = 'bar';\n```\nDone.", 8)
    [(0, 'Set it:'), (8, "```js\n# not a heading\n\nenv.foo = 'bar';\n```"), (52, 'Done.')]
    """
    out: list[tuple[int, str]] = []
    at, block_start = 0, 0
    block: list[str] = []
    in_code = False  # the block in progress is a fenced code block
    lines = text.split("\n")
    flags = code_lines(lines, indented=False)
    for n, line in enumerate([*lines, ""]):
        code = n < len(lines) and flags[n]
        if code and in_code:
            # (inside a fence its blank, "#" and "-" lines are code; two blocks that touch are one)
            block.append(line)
        elif code or in_code or not line.strip() or _BLOCK_START.match(line):
            if block:
                out.extend([(block_start, "\n".join(block))] if in_code
                           else _sentences(block_start, "\n".join(block), longest))
            block_start, block, in_code = at, ([line] if line.strip() or code else []), code
            if not line.strip() and not code:
                block_start = at + len(line) + 1
        else:
            if not block:
                block_start = at
            block.append(line)
        at += len(line) + 1
    return out


def _sentences(at: int, block: str, longest: int) -> list[tuple[int, str]]:
    """A block's sentences, each longer than ``longest`` cut at spaces (a run-on sentence or a
    code block is read in parts, so no piece runs past a cut)."""
    if len(block) <= longest:
        return [(at, block)]
    out, start = [], 0
    for end in [*(m.start() for m in _SENTENCE_END.finditer(block)), len(block)]:
        while end - start > longest:
            space = max(block.rfind(" ", start + 1, start + longest), block.rfind("\n", start + 1, start + longest))
            cut = space if space > start else start + max(1, longest)
            out.append((at + start, block[start:cut]))
            start = cut
        if end > start:
            out.append((at + start, block[start:end]))
        m = _SENTENCE_END.match(block, end)
        start = m.end() if m and m.end() > end else end
    return out


def focus_start(text: str, asked: Set[str], lang: str, limit: int) -> int:
    """The offset in ``text`` to read ``limit`` characters from: the line or sentence start whose
    window holds the most of ``asked`` (terms as :func:`electa.text.analysis.index_terms` makes
    them in ``lang``) outside fenced code, the earliest of equals, so 0 unless a later window
    holds more.

    >>> text = "Errors.\\n" + "EACCES: permission denied.\\n" * 6 + "ENOENT: no such file."
    >>> start = focus_start(text, {"en·enoent"}, "en", 60)
    >>> start > 0 and "ENOENT" in text[start:start + 60]
    True
    >>> focus_start(text, {"en·error"}, "en", 60), focus_start("Short.", {"en·enoent"}, "en", 60)
    (0, 0)
    >>> run_on = "Head line. " * 27 + "and so on " * 150 + "until ENOENT"  # (one 1,500-character sentence)
    >>> start = focus_start(run_on, {"en·enoent"}, "en", 1000)
    >>> "ENOENT" in run_on[start:start + 1000]
    True
    >>> code = "Borrowed twice.\\n" + "Some text here.\\n" * 6 + "```\\n// error: cannot borrow twice\\n```"
    >>> focus_start(code, {"en·cannot", "en·borrow"}, "en", 60)
    0
    >>> pieces("日本語の文です。次の文です。", 5)
    [(0, '日本語の文'), (5, 'です。'), (8, '次の文です'), (13, '。')]
    """
    if len(text) <= limit or not asked or limit < 4:
        return 0
    # (words in a fenced code block count for nothing: an answer quotes prose, and read from the
    # code that holds them, Rust's E0499 lost the sentence saying what the error is, "A variable
    # was borrowed as mutable more than once.", to "// error: cannot borrow `i` as mutable …")
    found = [(offset, offset + len(piece),
              frozenset() if piece.lstrip().startswith(("```", "~~~")) else frozenset(index_terms(piece, lang)) & asked)
             for offset, piece in pieces(text[:FOCUS_SCAN], limit // 2)]
    # A window from each piece's start over the pieces that end within the cut, slid in one pass:
    # each term counted by how many pieces in the window hold it.
    best_start, best = 0, -1
    held: Counter[str] = Counter()
    last = 0  # the window is found[i:last]
    for i, (start, _, _) in enumerate(found):
        # (cut() keeps limit - 1 characters and an ellipsis: a piece must end before that)
        while last < len(found) and (last == i or found[last][1] <= start + limit - 2):
            held.update(found[last][2])
            last += 1
        if len(held) > best:
            best_start, best = start, len(held)
            if best == len(asked):
                break
        held.subtract(found[i][2])
        held += Counter()  # (drops the terms no piece in the window holds any more)
    return best_start

"""The injection scan's character-at-a-time view as it stood before issue 12 item 7 (commit
aeddaf2), kept verbatim as the baseline of bench/ingest_speed.py. Not part of the product."""
# ruff: noqa
from __future__ import annotations

import unicodedata

from electa.ingest.injection import _BIDI, _EMPHASIS, _HOMOGLYPHS, _TAGS, _ZERO_WIDTH, _hidden, _is_variation_selector


def _invisible_findings(text: str) -> list[tuple[str, int, int]]:
    out: list[tuple[str, int, int]] = []
    i, n = 0, len(text)
    while i < n:
        if not _hidden(text[i]):
            i += 1
            continue
        j = i
        while j < n and _hidden(text[j]):
            j += 1
        cps = [ord(c) for c in text[i:j]]
        before = text[i - 1] if i else ""
        after = text[j] if j < n else ""
        latin_inside = before.isascii() and before.isalnum() and after.isascii() and after.isalnum()
        selectors = sum(_is_variation_selector(cp) for cp in cps)
        if (any(cp in _TAGS or cp in _BIDI for cp in cps)
                or (latin_inside and any(cp in _ZERO_WIDTH for cp in cps))
                or sum(cp in _ZERO_WIDTH for cp in cps) >= 4
                or selectors >= 2):
            out.append(("invisible_unicode", i, j))
        i = j
    return out


def _view(text: str) -> tuple[str, list[int]]:
    """The normalised text and, for each of its characters, the offset it came from."""
    out: list[str] = []
    where: list[int] = []
    for i, ch in enumerate(text):
        if ch in _EMPHASIS or _hidden(ch):
            continue
        norm = ch.lower() if ch.isascii() else unicodedata.normalize("NFKC", ch).casefold()
        for c in norm:
            if c in _EMPHASIS or _hidden(c):
                continue
            out.append(_HOMOGLYPHS.get(c, c))
            where.append(i)
    return "".join(out), where

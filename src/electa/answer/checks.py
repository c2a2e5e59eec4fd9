"""Checking an answer against its sources (SPEC G4): citations, links, prices, plan names."""

from __future__ import annotations

import re
from collections.abc import Sequence

from electa.types import Passage

_CITATION = re.compile(r"\[(\d{1,2})\]")
_LINK = re.compile(r"https?://[^\s<>\"')\]]+")
_PRICE = re.compile(
    r"(?:[$€£]\s?\d[\d,]*(?:\.\d+)?(?:\s?/\s?(?:mo|month|yr|year|seat))?)"
    r"|(?:\d[\d,]*(?:\.\d+)?\s?(?:USD|EUR|GBP|dollars|euros))"
)
_PLAN = re.compile(r"\b([A-Z][A-Za-z0-9]+) plan\b")


def citations(text: str, n_sources: int) -> list[int]:
    """Source ids cited as ``[n]`` that exist, in first-cited order.

    >>> citations("Yes [2]. See [1], [2] and [9].", 3)
    [2, 1]
    """
    out: list[int] = []
    for m in _CITATION.finditer(text):
        i = int(m.group(1))
        if 1 <= i <= n_sources and i not in out:
            out.append(i)
    return out


def _corpus(sources: Sequence[Passage]) -> str:
    return "\n".join(f"{p.hit.url} {' '.join(p.hit.also_urls)} {p.hit.title} {p.text}" for p in sources)


def _norm_price(price: str) -> str:
    return re.sub(r"\s+", "", price.lower()).rstrip(".,")


def unsupported(text: str, sources: Sequence[Passage]) -> dict[str, list[str]]:
    """Links, prices and plan names in ``text`` that no source contains.

    >>> from electa.types import Hit, ChunkKind
    >>> hit = Hit(1, 1, 1, ChunkKind.PARENT, "Plans", "", "https://x/plans", "p", 0.0, 0.9, True, ())
    >>> unsupported("Growth plan is $29/mo, see https://x/plans or https://evil.example", [Passage(hit, "Growth: $29/mo")])
    {'links': ['https://evil.example'], 'prices': [], 'plans': []}
    """
    corpus = _corpus(sources)
    lowered = corpus.lower()
    prices = {_norm_price(p) for p in _PRICE.findall(corpus)}
    links = [u.rstrip(".,;") for u in _LINK.findall(text)]
    return {
        "links": [u for u in dict.fromkeys(links) if u not in corpus],
        "prices": [p for p in dict.fromkeys(_PRICE.findall(text)) if _norm_price(p) not in prices],
        "plans": [n for n in dict.fromkeys(_PLAN.findall(text)) if n.lower() not in lowered],
    }

"""The personalisation judge (SPEC D3): a person's own feedback nudges the order they see.

Affinities come from the person's votes and clicks (``person_signals``: each URL's net signal,
+1 or -1), at three levels, because a person who liked one billing page likely wants the
billing section and the site it lives on more than another:

- the document: the URL's own net signal;
- the section: the mean signal over the person's URLs in the same site and first path segment
  (``https://help.acme.com/billing/...``);
- the site: the mean over the person's URLs on the same host.

A hit's affinity is ``0.6·document + 0.25·section + 0.15·site``, in [-1, 1] (our weights: the
nearer the evidence, the more it counts). It is blended with the order the hit came in at a
fixed share (the reference's 15%, three-lane-company-search.txt: "blends in per-user
affinities ... at a fixed 15 percent, and respects an opt-out"):

    key = (1 - blend) · (1 - position / n) + blend · (affinity + 1) / 2

so a hit the person has no opinion on keeps its place relative to others alike, one they liked
moves up by at most ``blend / (1 - blend) · n / 2`` places (about 4 of the top 50 at 15%), and a
disliked one down as far. A person with no history, or one who opted out, is not judged: the
order is exactly the one without personalisation.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from urllib.parse import urlsplit

from electa.judges.protocol import Progress, order_by_score
from electa.types import Caller, Hit

BLEND = 0.15
LEVELS = (0.6, 0.25, 0.15)  # document, section, site


def _section(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    first = parts.path.strip("/").split("/", 1)[0]
    return parts.netloc.lower(), first.lower()


def affinities(signals: Sequence[tuple[str, int]]) -> tuple[dict[str, float], dict[tuple[str, str], float],
                                                           dict[str, float]]:
    """Document, section and site affinities from ``(url, net signal)``.

    >>> docs, sections, sites = affinities([("https://h/billing/a", 1), ("https://h/billing/b", -1), ("https://h/x", 1)])
    >>> docs["https://h/billing/a"], sections[("h", "billing")], sites["h"]
    (1.0, 0.0, 0.3333333333333333)
    """
    docs: dict[str, float] = {}
    by_section: dict[tuple[str, str], list[int]] = defaultdict(list)
    by_site: dict[str, list[int]] = defaultdict(list)
    for url, signal in signals:
        value = max(-1, min(1, int(signal)))
        docs[url] = float(value)
        section = _section(url)
        by_section[section].append(value)
        by_site[section[0]].append(value)
    return (docs, {k: sum(v) / len(v) for k, v in by_section.items()},
            {k: sum(v) / len(v) for k, v in by_site.items()})


def affinity(url: str, docs: Mapping[str, float], sections: Mapping[tuple[str, str], float],
             sites: Mapping[str, float]) -> float:
    section = _section(url)
    return LEVELS[0] * docs.get(url, 0.0) + LEVELS[1] * sections.get(section, 0.0) + LEVELS[2] * sites.get(section[0], 0.0)


def personal_keys(urls: Sequence[str], signals: Sequence[tuple[str, int]], blend: float = BLEND) -> list[float]:
    """The blended key of each hit (see the module), by its URL, in the order given.

    >>> [round(k, 3) for k in personal_keys(["https://h/a", "https://h/b", "https://h/c"], [("https://h/c", 1)])]
    [0.936, 0.653, 0.433]
    """
    docs, sections, sites = affinities(signals)
    n = len(urls)
    return [(1.0 - blend) * (1.0 - i / n) + blend * (affinity(u, docs, sections, sites) + 1.0) / 2.0
            for i, u in enumerate(urls)]


class PersonaliseJudge:
    """``PersonaliseJudge(signals, depth=50)``: one person's judge, made for their search from
    their signals (None: they opted out; empty: no history)."""

    name = "personalise"

    def __init__(self, signals: Sequence[tuple[str, int]] | None, depth: int = 50, blend: float = BLEND,
                 why: str = "") -> None:
        self.signals, self.depth, self.blend = signals, depth, blend
        self._why = why or ("the person opted out of personalisation" if signals is None
                            else "" if signals else "no history for this person yet")

    def available(self, caller: Caller) -> bool:
        return bool(self.signals)

    @property
    def why(self) -> str:
        return self._why

    def score(self, query: str, caller: Caller, hits: Sequence[Hit], progress: Progress, deadline: float) -> None:
        progress.add(personal_keys([h.url for h in hits[: self.depth]], self.signals or (), self.blend))

    def order(self, hits: Sequence[Hit], scores: Sequence[float]) -> list[int]:
        return order_by_score(scores)


def anonymous(why: str = "personalisation needs a person: a visitor token's subject, or `user` from the"
                         " organisation's backend (`--user` on the command line)") -> PersonaliseJudge:
    """The judge of a search that names no person: never available."""
    return PersonaliseJudge((), why=why)

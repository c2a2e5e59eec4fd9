"""The title rescue (SPEC B6; chat-widget reference, card #741): of the candidates the floor
rejected, at most two whose title names a distinctive word of the question pass all the same."""

from __future__ import annotations

import re
from collections.abc import Sequence, Set
from functools import lru_cache

from electa.stores.protocol import Store
from electa.text import content_tokens, fold
from electa.types import Caller

# Common question, shop and setting words that never rescue a page by title (SPEC B6).
RESCUE_STOP = frozenset("""price prices pricing cost costs much many room rooms setup settings setting help
    need want like know tell about please buy sell shop store order orders page pages info information
    work works does what which where when have your with from this that there they them""".split())


class TitleRescue:
    """Rescues candidates by their titles (:meth:`rescued`) over ``store``'s titles, keeping how
    many titles each caller can see name each word per store generation."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._title_counts: dict[tuple[int, str, str], int] = {}  # (generation, caller, word): _titles_naming

    def rescued(self, text: str, failing: Sequence[tuple[int, str]], caller: Caller,
                shown: Set[int] | None = None) -> dict[int, str]:
        """SPEC B6 (chat-widget reference, card #741): of the candidates the floor rejected
        (``(unit id, title)``, best first), keep at most two whose title names a distinctive
        word of the question: four letters or more, not a common question, shop or setting
        word, a whole title word (singular or plural, never a prefix), and in at most two of the
        titles this caller can see. Rarest word first; only candidates the search found.
        Returns ``{unit id: the word}``. With ``shown`` (the ids the caller will see), nothing is
        looked up when no word names a shown candidate's title: the rescue could then change
        nothing shown (the answer is the same, without a store lookup per word)."""
        if not failing:
            return {}
        # Folded like the question's words ("Rückerstattung" is named by "rückerstattung").
        heads = [(uid, fold(title.split(" > ")[0])) for uid, title in failing]
        patterns = []
        for word in dict.fromkeys(content_tokens(text)):
            if len(word) >= 4 and word.isalpha() and word not in RESCUE_STOP:
                patterns.append((word, title_word_pattern(word)))
        if shown is not None and not any(p.search(head) for _, p in patterns for uid, head in heads if uid in shown):
            return {}
        counted = []
        generation = self.store.generation  # read once: a round trip on PostgreSQL
        for word, pattern in patterns:
            if not any(pattern.search(head) for _, head in heads):
                continue  # it could rescue none of these candidates: spare the title lookup
            docs = self._titles_naming(word, pattern, caller, generation)
            if 0 < docs <= 2:
                counted.append((docs, word, pattern))
        rescued: dict[int, str] = {}
        for _, word, pattern in sorted(counted):
            for uid, head in heads:
                if len(rescued) < 2 and uid not in rescued and pattern.search(head):
                    rescued[uid] = word
        return rescued

    def _titles_naming(self, word: str, pattern: re.Pattern[str], caller: Caller, generation: int) -> int:
        """How many documents the caller can see have a title naming ``word`` (at most 50
        looked at), kept per store ``generation`` (read before the lookup): questions share
        their words."""
        key = (generation, caller.cache_key(), word)
        count = self._title_counts.get(key)
        if count is None:
            titles = self.store.title_matches(word, caller, 50)
            count = len({u.document_id for u in self.store.units(titles).values() if pattern.search(fold(u.title))})
            if len(self._title_counts) > 20_000:
                self._title_counts.clear()
            self._title_counts[key] = count
        return count


@lru_cache(maxsize=8192)
def title_word_pattern(word: str) -> re.Pattern[str]:
    """A whole title word, singular or plural (SPEC B6); compiled once per word (``re``'s own
    cache holds 512 patterns, fewer than a day's question words: compiling was a third of the
    fusion stage on SciFact)."""
    base = word[:-1] if len(word) > 4 and word.endswith("s") and not word.endswith("ss") else word
    return re.compile(rf"\b{re.escape(base)}(?:s|es)?\b", re.IGNORECASE)

"""What kind of thing a question asks for, where the passage that answers depends on it.

:func:`asks_what_it_is`: a question that asks what something is, means or is for ("What is
package-lock.json for?", "What does E0382 mean?", "Was ist ein Lebenszyklus?") is answered by
the opening of the page about it, where a page says what it is about; one that asks how to do
something or whether something holds is answered by the section that says so. The patterns are
the common openings of such a question in the languages Electa analyses most (English, German,
French, Spanish, Portuguese, Italian, Dutch, Chinese, Japanese); a question in another wording
is read as any other (the engine's RANK_RULES 8 then leaves the legs' section standing).
"""

from __future__ import annotations

import re

_WHAT_IT_IS = re.compile(
    r"^\W*(?:what\s+(?:is|are|was|were)\b|what'?s\b|what\s+does\b.{0,200}\b(?:mean|do|stand\s+for)\b"
    r"|what\s+do\b.{0,200}\b(?:mean|do|stand\s+for)\b|define\b|definition\s+of\b|meaning\s+of\b|explain\b"
    r"|was\s+(?:ist|sind|bedeutet|bedeuten|macht)\b|qu['’]est[- ]ce\s+qu|que\s+(?:signifie|veut\s+dire)\b"
    r"|qu[ée]\s+(?:es|son|significa|quiere\s+decir)\b|o\s+que\s+(?:é|são|significa)\b|che\s+cos['’ ]|cosa\s+(?:è|significa)\b"
    r"|wat\s+(?:is|zijn|betekent)\b)"
    r"|什么是|是什么|什麼是|是什麼|とは|って何|とは何",
    re.IGNORECASE | re.DOTALL)


def asks_what_it_is(question: str) -> bool:
    """Whether ``question`` asks what something is, means or is for.

    >>> [asks_what_it_is(q) for q in ("What is package-lock.json for?", "what does E0382 mean", "Was ist npm?",
    ...                               "¿Qué es un crate?", "package-lock.json是什么")]
    [True, True, True, True, True]
    >>> [asks_what_it_is(q) for q in ("How do I cancel my subscription?", "Can I bill hours?", "Where is the cache?")]
    [False, False, False]
    """
    return _WHAT_IT_IS.search(question[:1000]) is not None

"""Text analysis shared by the full-text legs and the absolute score.

One tokenizer for every place that compares words, so that "the question's stemmed words" in
the absolute score (reference/support-bot-retrieval.txt) mean the same words the FTS5 leg
matched. FTS5's ``porter`` tokenizer implements Martin Porter's 1980 algorithm; PyStemmer's
``porter`` stemmer is the same algorithm, so query-side stems equal index-side stems.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import Stemmer

# Words kept as tokens: letters/digits and inner joiners, so "E1042", "v2.3" and "o'brien" stay
# whole while punctuation splits. FTS5's unicode61 splits on '.' and "'" too; we split the same
# way for matching and keep the whole token only for display.
_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)

# A compact English stop list (the Snowball/Lucene core set plus question words). Dropped from
# queries only: the index keeps every word so phrases and codes are never lost.
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    s t don can't cannot i'm i've let's""".split()
)

_stemmer = Stemmer.Stemmer("porter")


def fold(text: str) -> str:
    """Lowercase and strip diacritics (FTS5 ``remove_diacritics 2`` does the same)."""
    # Only the non-ASCII runs are decomposed: a per-character pass over every passage was most of
    # a cold worker's scoring. The same result as decomposing the whole text, since NFKD maps each
    # character on its own and reorders only runs of combining marks, which ASCII never joins.
    lowered = text.lower()
    return lowered if lowered.isascii() else _NON_ASCII.sub(_fold_run, lowered)


_NON_ASCII = re.compile(r"[^\x00-\x7f]+")


def _fold_run(match: re.Match[str]) -> str:
    run = match.group()
    # Short runs repeat (a Greek letter, "±", "é"); a long one (a CJK passage, a hostile query)
    # is folded but not kept, so the cache's size is bounded by entries and by their length.
    return _fold_chars(run) if len(run) <= 32 else _fold_chars.__wrapped__(run)


@lru_cache(maxsize=65_536)
def _fold_chars(run: str) -> str:
    decomposed = unicodedata.normalize("NFKD", run)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def tokens(text: str) -> list[str]:
    """Folded word tokens, in order, stop words included."""
    return _TOKEN.findall(fold(text))


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    return str(_stemmer.stemWord(word))


def content_stems(text: str) -> list[str]:
    """Distinct stems of the non-stop words of ``text``, in first-seen order.

    >>> content_stems("Refunds for the refunded plans?")
    ['refund', 'plan']
    """
    seen: dict[str, None] = {}
    for tok in tokens(text):
        if tok in STOPWORDS:
            continue
        seen.setdefault(stem(tok), None)
    return list(seen)


def stem_set(text: str) -> set[str]:
    """Every stem of ``text`` (stop words included): the passage side of a coverage test."""
    return {stem(tok) for tok in set(tokens(text))}

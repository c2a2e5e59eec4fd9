"""Text analysis shared by the full-text legs and the absolute score.

One tokenizer for every place that compares words, so that "the question's stemmed words" in
the absolute score (reference/support-bot-retrieval.txt) mean the same words the full-text legs
matched. Words are runs of letters, digits and the marks written inside them (a Devanagari
vowel sign, a Thai vowel); scripts written without spaces between words (Chinese, Japanese,
Thai, Lao, Khmer, Myanmar) become their characters and character bigrams, as Lucene's
CJKAnalyzer does, since no word boundary is written (measured against jieba on XQuAD-R zh:
``bench/cjk_terms.py``). :mod:`electa.text.analysis` stems per language for the index;
:func:`stem` here is English Porter (Martin Porter's 1980 algorithm, as FTS5's ``porter``),
used where both sides of a comparison are stemmed alike at query time.
"""

from __future__ import annotations

import itertools
import re
import threading
import unicodedata
from functools import lru_cache

import regex
import Stemmer

# Words kept as tokens: letters and digits, so "E1042" stays whole while punctuation splits
# ("v2.3" is "v2", "3"; "o'brien" is "o", "brien", as FTS5's unicode61 split them). ASCII text
# (most of it) takes the stdlib pattern; other text the one that keeps marks inside words.
_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
_WORD = regex.compile(r"[\p{L}\p{N}\p{M}]+")

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
# (The entries with an apostrophe are for readers that keep it inside words: the graph leg's
# names, entity recognition, the negation check. :func:`tokens` parts words at it, so a
# question's contractions are read there by :func:`without_clitics`.)

# PyStemmer's stemmers "must not be called concurrently" (its docstring): one per thread.
_local = threading.local()


def fold(text: str) -> str:
    """Lowercase, compatibility forms to their plain letters (full-width Ａ, ligature ﬁ), and no
    diacritics: those of Latin, Greek and Cyrillic letters (FTS5's ``remove_diacritics 2`` did
    the Latin ones), Arabic vowel signs and Hebrew points. Symbols (™, ©, ①…) part words, as
    FTS5's unicode61 did; the marks that spell a word in Indic and East Asian scripts stay.

    >>> fold("Café Ελλάδα"), fold("हिन्दी"), fold("Acme™ ＰＲＯ"), fold("ガス")
    ('cafe ελλαδα', 'हिन्दी', 'acme  pro', 'ガス')
    """
    # Only the non-ASCII runs are decomposed: a per-character pass over every passage was most of
    # a cold worker's scoring. The same result as decomposing the whole text, since NFKD maps each
    # character on its own and reorders only runs of combining marks, which ASCII never joins.
    lowered = text.lower()
    return lowered if lowered.isascii() else _NON_ASCII.sub(_fold_run, lowered)


def lower(text: str) -> str:
    """Lowercase with diacritics kept (composed, NFC) and symbols parting words: what a
    stemmer reads (Snowball's rules are written for the accented letters)."""
    lowered = text.lower()
    return lowered if lowered.isascii() else unicodedata.normalize("NFC", _SYMBOL.sub(" ", lowered))


_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
_SYMBOL = regex.compile(r"\p{S}")


def _fold_run(match: re.Match[str]) -> str:
    run = match.group()
    # Short runs repeat (a Greek letter, "±", "é"); a long one (a CJK passage, a hostile query)
    # is folded but not kept, so the cache's size is bounded by entries and by their length.
    return _fold_chars(run) if len(run) <= 32 else _fold_chars.__wrapped__(run)


@lru_cache(maxsize=65_536)
def _fold_chars(run: str) -> str:
    decomposed = unicodedata.normalize("NFKD", _SYMBOL.sub(" ", run))
    kept = "".join(ch for ch in decomposed if not _STRIPPED.match(ch))
    # Lowercased again (NFKD makes "TM" of ™ and "Ａ" of Ａ) and composed again (a kana keeps
    # its voicing mark, a Hangul syllable its jamo).
    return unicodedata.normalize("NFC", kept.lower())


# Combining diacritical marks (and their extensions and supplement), Arabic harakat, Hebrew
# points and cantillation (not its punctuation: maqaf joins words, sof pasuq ends them).
_STRIPPED = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
                       "\u064b-\u065f\u0670\u0591-\u05bd\u05bf\u05c1\u05c2\u05c4\u05c5\u05c7]")


def tokens(text: str, pairs: bool = True) -> list[str]:
    """Folded word tokens, in order, stop words included; a run of a script written without
    spaces becomes its characters, then (``pairs``) each pair of neighbouring characters; a
    language named by a letter and a symbol is one word (:func:`spell_symbols`).

    >>> tokens("Error E1042: 退款政策")
    ['error', 'e1042', '退', '款', '政', '策', '退款', '款政', '政策']
    >>> tokens("パスワード", pairs=False)
    ['パ', 'ス', 'ワ', 'ー', 'ド']
    >>> tokens("C# or C++20?")
    ['csharp', 'or', 'cplusplus', '20']
    """
    return split_words(fold(spell_symbols(text)), pairs)


def spell_symbols(text: str) -> str:
    """``text`` with each name written as one letter and ``++`` or ``#`` (C++, C#, F#, G++, Q#)
    spelled as one word: ``cplusplus``, ``csharp``. Words are letters and digits, so every such
    name would otherwise read as its bare letter: "How do I set the C++ standard?" found CMake's
    C_STANDARD page first, and "Can I build C# projects?" found none of its .NET pages (found
    on CMake's help). Search engines that index code read them so too (Elasticsearch's
    ``mapping`` character filter is the usual way; Google indexes "C++" and "C#" as written).
    The letter must stand alone, and no Latin letter may follow: "libc++" and "a#b" keep reading as
    before, while digits part from the name ("C++20" is "cplusplus" and "20", as "C++ 20" is).
    A space follows the spelled name, so it never joins what follows. Applied to raw text,
    before any lowercasing, which parts words at symbols in text that is not ASCII.

    >>> spell_symbols("C/C++ and g++, F# or Q#; libc++, x+y, #tag, a#b, i++")
    'C/Cplusplus  and gplusplus , Fsharp  or Qsharp ; libc++, x+y, #tag, a#b, iplusplus '
    """
    if not any(symbol in text for symbol in _SYMBOLS):  # (substring searches: this runs on every passage read)
        return text
    return _NAMED_BY_SYMBOL.sub(_spelled, text)


# A lone letter, then "++" or "#", then no letter nor another "+" or "#".
_SYMBOLS = "+#\uff0b\uff03\u266f"
# (full-width forms too, as Japanese text writes them, and the musical sharp: "Ｃ＃", "C♯")
# (only a Latin letter after it joins it: "C#define" is no name, while "Ｃ＃の", in Japanese,
# written without spaces, is)
_NAMED_BY_SYMBOL = re.compile(r"(?<!\w)([^\W\d_])(\+\+|\uff0b\uff0b|[#\uff03\u266f])"
                              r"(?![+#\uff0b\uff03\u266fA-Za-z\uff21-\uff3a\uff41-\uff5a])")


def _spelled(match: re.Match[str]) -> str:
    return match[1] + ("sharp " if len(match[2]) == 1 else "plusplus ")


def split_words(text: str, pairs: bool = True) -> list[str]:
    """The words of already lowercased ``text`` (see :func:`tokens`)."""
    # No marks and no unspaced script (most text, accented or not): the stdlib's faster pattern.
    # Only the non-ASCII runs are looked at (the regex module's classes are slow over long text).
    if text.isascii() or not any(_NEEDS_UNICODE.search(run) for run in _NON_ASCII.findall(text)):
        return _TOKEN.findall(text)
    out: list[str] = []
    for word in _WORD.findall(text):
        if not _UNSPACED.search(word):
            out.append(word)
            continue
        for piece in _UNSPACED_SPLIT.split(word):
            if not piece:
                continue
            if _UNSPACED.fullmatch(piece):
                # Characters as written (a Thai consonant with its vowel and tone marks is one).
                chars = _GRAPHEME.findall(piece)
                out.extend(chars)
                if pairs:
                    out.extend(a + b for a, b in itertools.pairwise(chars))
            else:
                out.append(piece)
    return out


_GRAPHEME = regex.compile(r"\X")
# A run of a script written without spaces, with the marks written on it (a kana's voicing mark)
# and the prolonged-sound and iteration marks that belong to no one script (ー 々 〆, half-width ｰ).
UNSPACED_CHARS = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}\u30fc\u3005\u3006\uff70"
_UNSPACED_RUN = rf"[{UNSPACED_CHARS}][{UNSPACED_CHARS}\p{{M}}]*"
_UNSPACED = regex.compile(_UNSPACED_RUN)
_NEEDS_UNICODE = regex.compile(rf"[{UNSPACED_CHARS}\p{{M}}]")
_UNSPACED_SPLIT = regex.compile(rf"({_UNSPACED_RUN})")


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    stemmer = getattr(_local, "porter", None)
    if stemmer is None:
        stemmer = _local.porter = Stemmer.Stemmer("porter", 0)  # 0: no cache of its own (ours is above)
    return str(stemmer.stemWord(word))


def without_clitics(text: str) -> str:
    """``text`` with the English contractions of function words read as the words they stand for,
    for a question's content words (and the passages compared with them word for word). An
    apostrophe parts words (:func:`tokens`), so "I'm sure" read as "i", "m", "sure" and "doesn't"
    as "doesn", "t": "m", "ve", "ll", "re", "d" and "doesn" were searched and scored as content
    words. Now a clitic ("'m", "'ve", "'ll", "'re", "'d", "'s") goes with its word where that word
    is a stop word ("I'm": "I", "you'll": "you", "what's": "what"), and "n't" after a verb of the
    stop list is "not" ("doesn't": "does not", "can't": "can not", "won't": "will not"). After any
    other word it is left as written, so a question and a page that write it alike still share
    it: "mustn't" still reads "mustn", "Sa'd" keeps its "d", code stays code (``r'd+'``), "Let's
    Encrypt" keeps its "let", and a typo is no verb ("I wan't to"). A lone letter is no stop
    word for their sake ("vitamin D", "G2/M"), as NLTK's English list makes "m", "d" and "won"
    (which would also drop "Who won?"). An apostrophe that starts a word is left alone (French
    "l'eau", "qu'il", Italian "dell'anno").

    >>> without_clitics("I'm sure I've paid; why doesn't it show? I can't, won't. Let's Encrypt")
    "I sure I paid; why does not it show? I can not, will not. Let's Encrypt"
    >>> without_clitics("Vitamin D, G2/M, l'eau, o'clock, we’re, I wan't, mustn't, Sa'd, r'd+', I'd've")
    "Vitamin D, G2/M, l'eau, o'clock, we, I wan't, mustn't, Sa'd, r'd+', I"
    """
    if "'" not in text and "\u2019" not in text:
        return text
    return _CLITIC.sub(_host, _NEGATION.sub(_not, text))


# A word and its clitic, ending the word; a verb and its "n't". Only the first letter's case is
# kept in what is spelled out ("Won't" is "Will not").
_CLITIC = re.compile(r"(?<![^\W_])([^\W\d_]+)(?:['\u2019](?:m|ve|ll|re|d|s))+(?![^\W_])", re.IGNORECASE)
_NEGATION = re.compile(r"(?<![^\W_])([^\W\d_]+?)n['\u2019]t(?![^\W_])", re.IGNORECASE)
_IRREGULAR = {"ca": "can", "wo": "will", "ai": "is"}  # (can't, won't, ain't)


def _host(match: re.Match[str]) -> str:
    return match[1] if fold(match[1]) in STOPWORDS else match[0]


def _not(match: re.Match[str]) -> str:
    verb = match[1]
    spelled = _IRREGULAR.get(verb.lower())
    if spelled is not None:
        return f"{spelled.capitalize() if verb[0].isupper() else spelled} not"
    return f"{verb} not" if fold(verb) in STOPWORDS else match[0]


def content_tokens(text: str) -> list[str]:
    """The words of ``text`` (:func:`tokens`) that are no stop word, in order, repeats kept, its
    contractions read as the words they stand for (:func:`without_clitics`): what every place
    that compares a question's meaningful words reads.

    >>> content_tokens("Why doesn't Stripe sync? I'm lost")
    ['stripe', 'sync', 'lost']
    """
    return [tok for tok in tokens(without_clitics(text)) if tok not in STOPWORDS]


def content_stems(text: str) -> list[str]:
    """Distinct stems of the non-stop words of ``text``, in first-seen order.

    >>> content_stems("Refunds for the refunded plans?")
    ['refund', 'plan']
    """
    return list(dict.fromkeys(stem(tok) for tok in content_tokens(text)))


def stem_set(text: str) -> set[str]:
    """Every stem of ``text`` (stop words included): the passage side of a coverage test."""
    return {stem(tok) for tok in set(tokens(text))}

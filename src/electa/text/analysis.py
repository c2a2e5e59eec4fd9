"""Full-text analysis per language (SPEC A2, B1; issue 14): the terms a unit is indexed under,
and the terms a question is searched and scored with.

A unit is analysed in its document's language (:mod:`electa.text.language`): its words
(:func:`electa.text.split_words`: characters and character pairs for scripts written without
spaces), each lowercased and stemmed by that language's Snowball stemmer where PyStemmer has one
(Snowball's rules are written for the accented letters, so the word is stemmed first and folded
after, Lucene's order), as it is otherwise. English keeps Porter's 1980 stemmer, the one FTS5's
``porter`` tokenizer applied before. As that tokenizer did, words under 3 or over 64 bytes are
left unstemmed in every language.

Every term carries its language (``de·ruckerstatt``), so a unit is only ever matched by the
question's terms in its own language: a question is analysed in every language the caller's
units are written in (``store.languages``), each unit meets the question's terms of its own,
and no stemmer's output for one language (Dutch "orders" -> "or") can match a word of another.
Names and codes match across languages all the same: "E1042" is ``en·e1042`` and ``de·e1042``,
and a question in either language carries both.

Stop words (:mod:`electa.text.stopwords`) are dropped from questions only, unless nothing else is
left: each language's terms lose that language's stop words and those of the question's own
language (:func:`question_language`); the index keeps every word, so phrases and codes
are never lost. A question is searched by at most :data:`MAX_QUERY_TERMS` terms, and at most
:data:`MAX_JOINED` pairs of its words written as one (:func:`joined_parts`), per language.

``ANALYSIS`` names this analysis; a store analysed otherwise is analysed again when it opens.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from types import MappingProxyType

import regex
import Stemmer

from electa.errors import StoreError
from electa.text import UNSPACED_CHARS, fold, lower, spell_symbols, split_words, without_clitics
from electa.text.language import detect_question, traditional_chinese
from electa.text.stopwords import stopwords

# a1: FTS5's ``porter unicode61 remove_diacritics 2`` (every store before issue 14; named by
# no meta). Every analysis this release knows, oldest first: a store analysed by one it does not
# know (a newer release's) is refused, never analysed back.
# a4: words inside camel-case identifiers are indexed beside the identifier
# (:func:`identifier_parts`).
# a5: a name written as one letter and "++" or "#" (C++, C#) is one word
# (:func:`electa.text.spell_symbols`), no longer its bare letter.
ANALYSES = ("a2", "a3", "a4", "a5")
ANALYSIS = ANALYSES[-1]
# The language a unit with none detected is analysed in (and an empty store's questions).
DEFAULT_LANGUAGE = "en"
MIN_STEMMED_BYTES, MAX_STEMMED_BYTES = 3, 64


def outdated(found: str | None) -> bool:
    """Whether a store whose ``meta`` names analysis ``found`` (None: before issue 14) must be
    analysed again; a store analysed by a newer release is refused, never analysed back."""
    if found is not None and found not in ANALYSES:
        raise StoreError(f"this store's units were analysed by a newer release (analysis {found}): upgrade Electa")
    return found != ANALYSIS


def same_analysis(found: Sequence[object] | None) -> None:
    """Refuse a write to a store whose ``meta`` row ``found`` names another analysis than this
    process's: another release analysed it again after this process opened it (a rolling
    upgrade), and units written now would hold terms its searches cannot all match, never to be
    analysed again (the check on open has passed)."""
    if found is not None and found[0] != ANALYSIS:
        raise StoreError(f"this store was analysed again by another release (analysis {found[0]}) after this process"
                         f" opened it with analysis {ANALYSIS}: nothing was written; restart it on that release")


# Between a term's language and its text: not ASCII, so FTS5's ``ascii`` tokenizer keeps it
# inside the token, and no letter or digit, so no word can hold it.
MARK = "\u00b7"
MAX_QUERY_TERMS = 512

# ISO 639-1 code -> PyStemmer's Snowball algorithm.
STEMMERS = {
    "ar": "arabic", "ca": "catalan", "cs": "czech", "da": "danish", "de": "german", "el": "greek",
    "en": "porter", "eo": "esperanto", "es": "spanish", "et": "estonian", "eu": "basque", "fa": "persian",
    "fi": "finnish", "fr": "french", "ga": "irish", "hi": "hindi", "hu": "hungarian", "hy": "armenian",
    "id": "indonesian", "it": "italian", "lt": "lithuanian", "ne": "nepali", "nl": "dutch", "no": "norwegian",
    "pl": "polish", "pt": "portuguese", "ro": "romanian", "ru": "russian", "sr": "serbian", "sv": "swedish",
    "ta": "tamil", "tr": "turkish",
}

# PyStemmer's stemmers "must not be called concurrently" (its docstring): one per thread.
_local = threading.local()


def _stem(word: str, lang: str) -> str:
    stemmers = getattr(_local, "stemmers", None)
    if stemmers is None:
        stemmers = _local.stemmers = {}
    stemmer = stemmers.get(lang)
    if stemmer is None:
        stemmer = stemmers[lang] = Stemmer.Stemmer(STEMMERS[lang], 0)  # 0: no cache of its own (term's is)
    return str(stemmer.stemWord(word))


def term(word: str, lang: str) -> str:
    """A lowercased word (:func:`electa.text.lower`) as the index holds it in ``lang``.

    >>> term("refunds", "en"), term("rückerstattungen", "de"), term("informações", "pt"), term("退款", "zh")
    ('en·refund', 'de·ruckerstatt', 'pt·inform', 'zh·退款')
    >>> term("⑴", "de")  # folded to "(1)": what is no letter, digit or mark is dropped
    'de·1'
    """
    # Long words (a pasted blob) are not kept in the cache: they would crowd out the words.
    return _term(word, lang) if len(word) <= MAX_STEMMED_BYTES else _term.__wrapped__(word, lang)


@lru_cache(maxsize=200_000)
def _term(word: str, lang: str) -> str:
    lang = lang or DEFAULT_LANGUAGE
    if lang in STEMMERS and MIN_STEMMED_BYTES <= len(word.encode()) <= MAX_STEMMED_BYTES:
        word = _stem(word, lang)
    folded = fold(word)
    # A few letters fold to punctuation or spaces (⑴ is "(1)", an Arabic ligature is a phrase):
    # a term must stay one token for FTS5's tokenizer and PostgreSQL alike.
    if not _WORD.fullmatch(folded):
        folded = _NOT_WORD.sub("", folded)
    return f"{lang}{MARK}{folded}"


_WORD = regex.compile(r"[\p{L}\p{N}\p{M}]+")
_NOT_WORD = regex.compile(r"[^\p{L}\p{N}\p{M}]+")


def words(text: str) -> list[str]:
    """The words of ``text`` as the analysis reads them: lowercased, diacritics kept."""
    return split_words(lower(spell_symbols(text)))


def index_terms(text: str, lang: str) -> list[str]:
    """Every term of ``text`` in order, stop words included, analysed in ``lang``, then the words
    inside its camel-case identifiers (:func:`identifier_parts`).

    >>> index_terms("Die Rückerstattungen", "de")
    ['de·die', 'de·ruckerstatt']
    >>> index_terms("Use fs.readFileSync()", "en")
    ['en·us', 'en·fs', 'en·readfilesync', 'en·read', 'en·file', 'en·sync']
    """
    return [term(w, lang) for w in words(text)] + [term(w, lang) for w in identifier_parts(text)]


def identifier_parts(text: str) -> list[str]:
    """The words written inside the camel-case identifiers of ``text``, lowercased, in order:
    what a unit is also indexed under, so that "read a file synchronously" finds
    ``fs.readFileSync`` by "read" and "file" (issue 10, found on Node.js's docs). The identifier
    itself stays a term, and a question is never split, so "readFileSync" still matches exactly
    what holds it. Snake case needs nothing: "_" already parts words. (Elasticsearch's
    ``word_delimiter`` with ``preserve_original`` does the like, but stacks the parts on the
    identifier's position, so they add nothing to the field's length; here they follow the text's
    terms and count in the unit's length, so a unit dense with identifiers reads as longer to
    BM25. The figures in the README were measured so.)

    Only what reads as words joined in code splits, lower camel case: the first part a lowercase
    word of three or more letters (``read``, ``folder``), each later one a capitalised word or
    capitals (``File``, ``Id``, ``URL``), digits after any. So terms of art written so split too
    (microRNA, lncRNA: "micro", "lnc" and "rna"; macOS: "mac", "os"), while names that mix cases
    otherwise stay whole: capitalised ones (YouTube, GitHub, PubMed), an all-capitals start
    (GTPase), a one- or two-letter start (iPhone, mRNA, siRNA), a lone capital (setX) or a plural
    acronym (miRNAs). A word is cut where :func:`electa.text.split_words` cuts it (an accented
    letter or a mark joins it, a Chinese character does not: "使用readFileSync函数" splits), and
    only ASCII identifiers of at most 64 characters split: a longer run is no identifier but a
    blob, whose parts would be no words.

    >>> identifier_parts("getElementById, folderURL, utf8Encode, microRNA; SpreadsheetApp")
    ['get', 'element', 'by', 'id', 'folder', 'url', 'utf8', 'encode', 'micro', 'rna']
    >>> identifier_parts("iPhone mRNA siRNA GTPase XMLHttpRequest miRNAs ErbB4 E1042 setX caféBar")
    []
    >>> identifier_parts("使用readFileSync函数"), identifier_parts("cafe\u0301readFile")
    (['read', 'file', 'sync'], [])
    """
    found: list[str] = []
    for match in _LOWER_CAMEL.finditer(text):
        start, end = match.span()
        if end - start > MAX_STEMMED_BYTES or _joined_before(text, start) or _joined_after(text, end):
            continue
        parts = _HUMP.split(match.group())
        if all(_LATER_PART.fullmatch(p) for p in parts[1:]):
            found.extend(p.lower() for p in parts)
    return found


def _joined_before(text: str, at: int) -> bool:
    """Whether what precedes ``text[at]`` belongs to the same word (a letter, digit or mark that
    no script written without spaces parts from it)."""
    before = at - 1
    while before >= 0 and _MARK_CHAR.match(text, before):
        before -= 1
    if before == at - 1:  # no mark: a letter or digit joins, unless its script has no spaces
        return at > 0 and bool(_WORD_CHAR.match(text, at - 1)) and not _UNSPACED_CHAR.match(text, at - 1)
    return before < 0 or not _UNSPACED_CHAR.match(text, before)  # marks join, unless on such a letter


def _joined_after(text: str, at: int) -> bool:
    return at < len(text) and bool(_WORD_CHAR.match(text, at)) and not _UNSPACED_CHAR.match(text, at)


# Three lowercase letters that start an ASCII run, then a capital after them: the identifiers
# that may split (the neighbours are read after, as :func:`electa.text.split_words` reads them:
# a pattern cannot say it in one pass without the slow classes of the ``regex`` module).
_LOWER_CAMEL = re.compile(r"(?<![A-Za-z0-9])[a-z]{3,}[0-9]*[A-Z][A-Za-z0-9]*(?![A-Za-z0-9])")
# Where camel case starts a word: before a capital that follows a lowercase letter or digit
# (read|File), and before the last capital of a run when a lowercase word follows (URL|Encoded;
# not RNA|s, whose "s" makes a plural, not a word).
_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z]{2})")
_LATER_PART = re.compile(r"(?:[A-Z][a-z]+|[A-Z]{2,})[0-9]*")
_WORD_CHAR = regex.compile(r"[\p{L}\p{N}\p{M}]")
_MARK_CHAR = regex.compile(r"\p{M}")
_UNSPACED_CHAR = regex.compile(rf"[{UNSPACED_CHARS}]")


def content_words(text: str, lang: str, or_all: bool = True) -> list[str]:
    """The question's words that are no stop word of ``lang`` nor of the question's own language
    (with ``or_all``, every word when nothing else is left), distinct, in first-seen order.

    Each language drops its own stop words and the question's: German "hat" stays an English
    word of an English question, while a Spanish question's "de", "la", "que" are no English
    words to match (a Spanish sentence read as English at ingest would otherwise be found by
    them). Both depend on the question alone, never on which other languages the caller's
    organisation writes in.

    A contraction is read as the words it stands for (:func:`electa.text.without_clitics`): "I'm"
    and "doesn't" add no "m" nor "doesn"; a question of nothing else is searched by its words as
    written ("Doesn't?": "doesn", "t", as a page writing it is indexed).

    >>> content_words("Was hat der Hund gemacht?", "en"), content_words("What hat?", "en")
    (['hund', 'gemacht'], ['hat'])
    >>> content_words("I'm sure it doesn't sync", "en"), content_words("Doesn't?", "en")
    (['sure', 'sync'], ['doesn', 't'])
    """
    stop = stopwords((lang, question_language(text)))
    content = [w for w in words(without_clitics(text)) if fold(w) not in stop]
    return list(dict.fromkeys(content or (words(text) if or_all else [])))


@lru_cache(maxsize=4096)
def question_language(text: str) -> str:
    """The language a question is written in, or '' when too short or unclear to read
    (:func:`electa.text.language.detect_question`); cached, since every leg and the score ask."""
    return detect_question(text)


def written_in(languages: Iterable[str]) -> set[str]:
    """The languages units are written in, a unit read as no language ('') counted as English
    (as it is analysed and embedded).

    >>> sorted(written_in(["", "de", "en"]))
    ['de', 'en']
    """
    return {lang or DEFAULT_LANGUAGE for lang in languages}


def asked_language(text: str, languages: Iterable[str] | None = None) -> str:
    """The language a question is taken to be asked in: as read (:func:`question_language`),
    else, when too short or unclear to read, the language its script names (Chinese, Japanese,
    Korean, Thai) where the units it is asked of (``languages``, when known; '' is English) are
    written in it, else their one language, else English.

    >>> asked_language("Passwort", ["de"]), asked_language("Passwort", ["de", "en"]), asked_language("退款")
    ('de', 'en', 'zh')
    >>> asked_language("Apple ID 密码", ["en", "zh"]), asked_language("E1042", ["zh"])
    ('zh', 'zh')
    >>> asked_language("Passwort 密码", ["de"]), asked_language("What does 退款 mean", ["en", "de"])
    ('de', 'en')
    """
    own = written_in(languages) if languages is not None else None
    read = question_language(text)
    if read:
        return read
    script = script_language(text)
    # (a script names the language only where the caller writes in it: "Passwort 密码" of a
    # German-only help center stays German, crossing nothing)
    if script and (own is None or script in own):
        return script
    return next(iter(own)) if own is not None and len(own) == 1 else DEFAULT_LANGUAGE


def map_language(text: str, languages: Iterable[str] | None = None) -> str:
    """The language whose own score map may read a question and the units written in it
    (:func:`electa.embedders.chain.language_correction`): :func:`asked_language`, but 'zh-Hant'
    for Traditional Chinese, which py3langid reads as 'zh' like Simplified while e5's scale in
    the two differs (``bench/e5_language_maps.py``: through the English map, Simplified's
    catalog pairs sit 0.29 above English's, Traditional's 0.12, like German's 0.08). No unit is
    stored as 'zh-Hant', so a Traditional question keeps the English map.

    >>> map_language("我忘记了密码怎么办？"), map_language("我忘記了密碼怎麼辦？"), map_language("Passwort", ["de"])
    ('zh', 'zh-Hant', 'de')
    """
    asked = asked_language(text, languages)
    return "zh-Hant" if asked == "zh" and traditional_chinese(text) else asked


# Scripts that name their language, in the order they are looked for (kana before Han: Japanese
# writes both; Chinese never kana): "Apple ID 密码" reads as no language at 0.5 confidence.
_SCRIPTS = ((regex.compile(r"[\p{Hiragana}\p{Katakana}]"), "ja"), (regex.compile(r"\p{Hangul}"), "ko"),
            (regex.compile(r"\p{Han}"), "zh"), (regex.compile(r"\p{Thai}"), "th"))


def script_language(text: str) -> str:
    """The language ``text``'s script names, or ''.

    >>> script_language("Apple ID 密码"), script_language("iPhone のパスワード"), script_language("refund")
    ('zh', 'ja', '')
    """
    return next((lang for pattern, lang in _SCRIPTS if pattern.search(text)), "")


def query_terms(text: str, languages: Iterable[str] = (DEFAULT_LANGUAGE,)) -> list[str]:
    """The question's content terms in each of ``languages`` (each unit was indexed in one of
    them), distinct, at most :data:`MAX_QUERY_TERMS` per language, then its joined pairs.

    >>> query_terms("What are the refunds?")
    ['en·refund']
    >>> query_terms("Wann kommen die Rückerstattungen?", ["en", "de"])
    ['de·komm', 'de·ruckerstatt', 'en·kommen', 'en·ruckerstattungen']
    >>> query_terms("How do I log in?")
    ['en·log', 'en·login']

    After the words, each pair of neighbours a page may write as one (:func:`joined_parts`).
    """
    langs = sorted(set(languages)) or [DEFAULT_LANGUAGE]
    return list(dict.fromkeys(t for lang in langs for t in (*question_terms(text, lang), *joined_terms(text, lang))))


# Two words a question writes apart that a page may write as one ("log in": login; "sign up",
# "set up", "e-mail", "data base"): letters (with their marks), apart by spaces or a hyphen.
# (An apostrophe binds a word too: "they're in" is no "rein".)
_APART = regex.compile(r"(?<![\p{L}\p{N}\p{M}'\u2019])(\p{L}[\p{L}\p{M}]*)(\s+|[-\u2010\u2011])(\p{L}[\p{L}\p{M}]+)"
                       r"(?![\p{L}\p{N}\p{M}'\u2019])")
# The stop words a pair may end with: the particles of phrasal verbs that pages write as one
# word ("log in", "sign up", "check out", "log on", "drop down"); any other ("set the", "kommt
# meine") joins into no word a page writes.
PARTICLES = frozenset({"in", "up", "out", "on", "off", "down", "over"})
MAX_JOINED = 32


@lru_cache(maxsize=4096)
def joined_parts(text: str, lang: str) -> Mapping[str, frozenset[str]]:
    """Each pair of the question's neighbouring words as the one word a page may write it as,
    in ``lang``, with the terms of its two words: a page that says "login" answers "How do I log
    in?", and full text finds it by the joined word while coverage credits it with "log"
    (:func:`credit`). The first word must be two letters or more (one where a hyphen joins it:
    "e-mail") and no stop word ("to do" is no "todo"); the second two letters or more, and a
    stop word only if one of :data:`PARTICLES`; the joined word must be no stop word. A word of
    a script written without spaces joins nothing (its characters are terms already). Only the
    question is joined, never the index: a page that writes "log in" where the question says
    "login" is dense's to find. (Elasticsearch's ``shingle`` filter with an empty separator, or a
    decompounder, does the like at both ends; here only questions are read differently, so no
    store is analysed again.) At most :data:`MAX_JOINED`, in the question's order; cached and
    read-only.

    >>> sorted((k, sorted(v)) for k, v in joined_parts("How do I log in? Set up e-mail, to do", "en").items())
    [('en·email', ['en·e', 'en·mail']), ('en·login', ['en·in', 'en·log']), ('en·setup', ['en·set', 'en·up'])]
    >>> list(joined_parts("How do I log in to 微信?", "en")), list(joined_parts("set the data  base", "en"))
    (['en·login'], ['en·databas'])
    """
    stop = stopwords((lang, question_language(text)))
    found: dict[str, frozenset[str]] = {}
    for match in _APART.finditer(lower(text), overlapped=True):
        first, gap, second = match.groups()
        if ((len(first) < 2 and gap.strip() == "") or fold(first) in stop
                or (fold(second) in stop and fold(second) not in PARTICLES) or fold(first + second) in stop
                or _UNSPACED_CHAR.search(first + second)):
            continue
        found.setdefault(term(first + second, lang), frozenset((term(first, lang), term(second, lang))))
        if len(found) >= MAX_JOINED:
            break
    return MappingProxyType(found)


def joined_terms(text: str, lang: str) -> list[str]:
    """The terms of :func:`joined_parts`, in the question's order.

    >>> joined_terms("How do I log in? Set up e-mail, to do", "en")
    ['en·login', 'en·setup', 'en·email']
    """
    return list(joined_parts(text, lang))


def credit(terms: frozenset[str], joins: Mapping[str, frozenset[str]]) -> frozenset[str]:
    """``terms`` (a passage's, a title's) with the two words of each of the question's pairs
    it writes as one (:func:`joined_parts`): "login" holds "log" and "in" for "log in".

    >>> sorted(credit(frozenset({"en·npm", "en·login"}), joined_parts("How do I log in?", "en")))
    ['en·in', 'en·log', 'en·login', 'en·npm']
    """
    extra = [part for joined, parts in joins.items() if joined in terms for part in parts]
    return terms.union(extra) if extra else terms


def question_terms(text: str, lang: str, or_all: bool = True) -> list[str]:
    """The question's content terms in ``lang``, distinct, in first-seen order, at most
    :data:`MAX_QUERY_TERMS`."""
    return list(dict.fromkeys(term(w, lang) for w in content_words(text, lang, or_all)))[:MAX_QUERY_TERMS]


def coverage_terms(text: str, languages: Iterable[str]) -> dict[str, frozenset[str]]:
    """For lexical coverage (SPEC C3): per language, the question's distinct content terms in it
    (none for a question of stop words alone). A passage is covered by the terms of its own
    language, so its score never depends on the languages of the other candidates.

    >>> coverage_terms("refunds for a refund?", ["en"])
    {'en': frozenset({'en·refund'})}
    """
    return {lang: frozenset(question_terms(text, lang, or_all=False)) for lang in set(languages)}


def fts_text(text: str, lang: str) -> str:
    """``text`` as the embedded store hands it to FTS5 (its ``ascii`` tokenizer splits on the
    spaces only: every term is letters, digits, marks and :data:`MARK`)."""
    return " ".join(index_terms(text, lang))

"""Checking an answer against its sources (SPEC G4): citations, links, prices, plan names."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache
from itertools import pairwise

from electa.text import STOPWORDS, content_stems, stem, stem_set
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


# Post-generation citations. An answer sentence with no [n] gets the id of the source whose
# text holds most of its content stems (stop words dropped, Porter stems: "refunded" meets
# "refund"), measured against each source sentence and each pair of adjacent source sentences
# so that a sentence merging two source sentences still matches. It is attributed only when that
# source holds at least ATTACH_MIN_SHARE of its content stems and at least ATTACH_MIN_SHARED of
# them: a paraphrase keeps most of its source's nouns, numbers and names, while a model's own
# framing ("Let me know if you need anything else", "Here is what I found") shares one word or
# none. Our choice, checked on the cases in tests/unit/test_answer_grounding.py and on the Qwen
# answers of bench/local_llm.py, not tuned on a labelled set.
#
# Sharing words is not saying the same thing: "Growth costs $9/mo per seat." shares five of six
# stems with "Growth costs $29/mo per seat." So the source text it matches best (the fewest
# sentences holding the most of its stems) must also hold its claims (:func:`holds_claims`:
# the same polarity, and its numbers, prices and plan names); when it does not, the sentence
# stays uncited, even if a weaker match elsewhere happens to hold them.
ATTACH_MIN_SHARE = 0.5
ATTACH_MIN_SHARED = 2

_SOURCE_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_CITE_WHOLE = re.compile(r"\[(\d{1,2})\]")
_CITE_PARTIAL = re.compile(r"\[\d{0,2}")
_WORDS = re.compile(r"[^\s\[]+")
# A sentence's last word: ".", "!" or "?", maybe inside a closing quote, bracket or Markdown emphasis.
_ENDS_SENTENCE = re.compile(r"[.!?][\"'”’)*_]*$")
_PERIODS = {"month": "mo", "year": "yr"}

_NEGATION = frozenset({"not", "no", "never", "none", "nothing", "nobody", "nor", "neither", "without", "cannot",
                       "can't", "don't", "doesn't", "didn't", "isn't", "aren't", "wasn't", "weren't", "won't",
                       "non", "unavailable", "unable"})
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*%?")

Claims = tuple[bool, frozenset[str], frozenset[tuple[str, str]], frozenset[str]]


def claim_parts(text: str) -> tuple[frozenset[str], frozenset[str], frozenset[str], frozenset[str]]:
    """The claims of ``text`` as written: its negation words, numbers, prices and plan names. The
    extractive answerer compares them when one sentence would stand in for another
    (``same_claims``); :func:`claims` normalises them for attribution."""
    words = re.findall(r"[a-z']+", text.lower())
    negations = frozenset(w for w in words if w in _NEGATION or w.endswith("n't"))
    numbers = frozenset(n.rstrip(".,") for n in _NUMBER.findall(text))
    prices = frozenset(re.sub(r"\s+", "", p.lower()) for p in _PRICE.findall(text))
    plans = frozenset(p.lower() for p in _PLAN.findall(text))
    return negations, numbers, prices, plans


# Words between a negation and what it denies: "not yet available", "no longer offered". (Not
# hedges: "not always instant" denies no "instant".)
ADVERBS = frozenset({"yet", "longer", "currently", "still", "anymore"})


@lru_cache(maxsize=8192)
def negated(text: str) -> frozenset[str]:
    """The stems of the words ``text``'s negations govern: the first content word after each
    negation ("is **not available**", "does **not match**"), and the word inside a negating
    prefix ("**unavailable**"). What a sentence denies, for telling a contradiction from two
    sentences that merely differ in polarity.

    >>> sorted(negated("The API is not available on Starter; the signature doesn't match."))
    ['avail', 'match']
    >>> sorted(negated("It is unavailable to you.")), sorted(negated("Refunds are given."))
    (['avail'], [])
    >>> sorted(negated("It is not yet available and no longer offered."))
    ['avail', 'offer']
    """
    words = re.findall(r"[a-z0-9']+", text.lower().replace("\u2019", "'"))
    out = set()
    for i, word in enumerate(words):
        if not (word in _NEGATION or word.endswith("n't")):
            continue
        if word.startswith("un") and word in _NEGATION:
            out.add(stem(word[2:]))
            continue
        governed = next((w for w in words[i + 1:i + 4] if w not in STOPWORDS and w not in _NEGATION
                         and w not in ADVERBS), None)
        if governed is not None:
            out.add(stem(governed))
    return frozenset(out)


@lru_cache(maxsize=8192)
def claims(text: str) -> Claims:
    """What ``text`` asserts that sharing words does not show: whether it is negated, its
    numbers, its prices as ``(amount, period)`` and the plans it names, read by the extractive
    answerer's :func:`claim_parts` (one reading of a claim for both). Negation is compared as polarity
    ("isn't", "not", "never" all negate), "$29/month" is "$29/mo", and a marker such as ``[2]``
    is no number.

    >>> claims("The Growth plan isn't $29/month.")
    (True, frozenset({'29'}), frozenset({('$29', 'mo')}), frozenset({'growth'}))
    """
    negations, numbers, prices, plans = claim_parts(_CITATION.sub(" ", text).replace("\u2019", "'"))
    priced = set()
    for price in prices:
        amount, _, period = price.rstrip(".,").partition("/")
        priced.add((amount, _PERIODS.get(period, period)))
    return bool(negations), numbers, frozenset(priced), plans


def holds_claims(sentence: str, text: str) -> bool:
    """Whether ``text`` states ``sentence``'s claims: both negated or neither, and every number,
    price and plan name of ``sentence`` in ``text``. A price matches on its amount, and on its
    period when both give one ("$29" is held by "$29/mo"); a plan name ("Every plan", "The plan")
    is held when ``text`` has that word anywhere, as :func:`unsupported` reads it.

    >>> holds_claims("Growth costs $29 per seat.", "Growth costs $29/mo per seat.")
    True
    >>> holds_claims("Growth costs $9/mo.", "Growth costs $29/mo per seat.")
    False
    >>> holds_claims("Refunds are not given.", "Refunds are given within 30 days.")
    False
    """
    negated, numbers, prices, plans = claims(sentence)
    t_negated, t_numbers, t_prices, _ = claims(text)
    words = set(re.findall(r"[a-z0-9]+", text.lower()))
    return (negated == t_negated and numbers <= t_numbers and plans <= words
            and all(any(a == b and (not p or not q or p == q) for b, q in t_prices) for a, p in prices))


class _Span:
    """A source sentence, a pair of adjacent ones, or a title: its text and its stems."""

    __slots__ = ("size", "stems", "text")

    def __init__(self, text: str, size: int) -> None:
        self.text, self.size, self.stems = text, size, stem_set(text)


def _spans(text: str, title: str = "") -> list[_Span]:
    sentences = [x for x in _SOURCE_SENTENCE.split(text) if x.strip()]
    spans = [_Span(s, 1) for s in sentences]
    spans += [_Span(f"{a} {b}", 2) for a, b in pairwise(sentences)]
    return [_Span(title, 1), *spans] if title.strip() else spans


def _best(words: set[str], spans: Sequence[_Span]) -> tuple[int, list[str]]:
    """How many of ``words`` the best spans hold, and those spans' texts: the fewest sentences
    holding the most (a pair only when no one sentence holds as many)."""
    if not spans:
        return 0, []
    scored = [(len(words & s.stems), s.size, s.text) for s in spans]
    best = max(n for n, _, _ in scored)
    size = min(k for n, k, _ in scored if n == best)
    return best, [t for n, k, t in scored if n == best and k == size]


def claims_held(sentence: str, text: str) -> bool:
    """Whether the sentences of ``text`` that best match ``sentence`` (the fewest holding the
    most of its content stems) hold its claims (:func:`holds_claims`). When no sentence shares
    a word with it (a script written without spaces), the whole of ``text`` is read.

    >>> claims_held("Monthly plans are refunded.", "Annual plans are refunded. Monthly plans are not refunded.")
    False
    """
    shared, texts = _best(set(content_stems(sentence)), _spans(text))
    return any(holds_claims(sentence, t) for t in (texts if shared else [text]))


class _Attributor:
    def __init__(self, sources: Sequence[Passage]) -> None:
        self.n = len(sources)
        self.spans = [_spans(p.text, p.hit.title) for p in sources]

    def source_for(self, sentence: str) -> int | None:
        words = set(content_stems(sentence))
        if len(words) < ATTACH_MIN_SHARED:
            return None
        matches = [_best(words, spans) for spans in self.spans]
        best = max((n for n, _ in matches), default=0)
        if best < ATTACH_MIN_SHARED or best < ATTACH_MIN_SHARE * len(words):
            return None
        for s_id, (shared, texts) in enumerate(matches, 1):  # ties go to the better-ranked source
            if shared == best and any(holds_claims(sentence, t) for t in texts):
                return s_id
        return None

    def cited(self, text: str) -> bool:
        return any(1 <= int(m.group(1)) <= self.n for m in _CITE_WHOLE.finditer(text))


def source_for(sentence: str, sources: Sequence[Passage]) -> int | None:
    """The id (1-based) of the source that holds most of ``sentence``'s content stems, or None
    when none holds enough of them (``ATTACH_MIN_SHARE``, ``ATTACH_MIN_SHARED``) or the best
    match does not hold its claims (:func:`holds_claims`)."""
    return _Attributor(sources).source_for(sentence)


def attach_citations(text: str, sources: Sequence[Passage]) -> str:
    """``text`` with ``[n]`` after each sentence that cites no source but matches one.

    Sentences end at ``.``, ``!`` or ``?`` followed by a space, or at a line break. A sentence
    already citing a valid source, text inside a fenced code block, and a sentence that matches
    no source are left as they are. Nothing else changes.

    >>> from electa.types import Hit, ChunkKind
    >>> hit = Hit(1, 1, 1, ChunkKind.PARENT, "Refunds", "", "https://x/r", "p", 0.0, 0.9, True, ())
    >>> attach_citations("Annual plans are refunded within 30 days. Anything else?",
    ...                  [Passage(hit, "We refund annual plans within 30 days of purchase.")])
    'Annual plans are refunded within 30 days. [1] Anything else?'
    """
    return "".join(cite_stream([text], sources))


def cite_stream(pieces: Iterable[str], sources: Sequence[Passage]) -> Iterator[str]:
    """:func:`attach_citations` for a stream: pieces pass through as they come, and a citation
    is inserted once a sentence is known to be over (the next one begins, or the stream ends).

    Only the whitespace after a sentence and a ``[n]`` still being written are held back, so
    a reader sees every word as soon as the model writes it. ``"".join(cite_stream(p, s))`` is
    ``attach_citations("".join(p), s)`` however the text is cut into pieces.
    """
    if not sources:
        yield from pieces
        return
    state = _CiteState(_Attributor(sources))
    for piece in pieces:
        out = state.feed(piece, final=False)
        if out:
            yield out
    out = state.feed("", final=True)
    if out:
        yield out


class _CiteState:
    """One answer's sentence tracker: ``body`` is the current sentence as written so far
    (already passed on), ``tail`` the whitespace and citations after it (held back)."""

    def __init__(self, attributor: _Attributor) -> None:
        self.attributor = attributor
        self.body, self.tail, self.buf = "", "", ""
        self.in_fence = False

    def feed(self, piece: str, final: bool) -> str:
        self.buf += piece
        out: list[str] = []
        while self.buf:
            buf = self.buf
            if buf[0].isspace():
                ws = buf[: len(buf) - len(buf.lstrip())]
                self.tail += ws
                self.buf = buf[len(ws):]
                continue
            if buf[0] == "[":
                whole = _CITE_WHOLE.match(buf)
                if whole:
                    self.tail += whole.group(0)
                    self.buf = buf[whole.end():]
                    continue
                partial = _CITE_PARTIAL.fullmatch(buf)
                if partial and not final:
                    break  # "[" or "[1": wait for the rest
            run = _WORDS.match(buf)
            word = run.group(0) if run else buf[0]
            out.append(self._close(boundary=False))
            self.body += word
            out.append(word)
            self.buf = buf[len(word):]
        if final:
            out.append(self._close(boundary=True))
        return "".join(out)

    def _close(self, boundary: bool) -> str:
        """Settle the held tail as a word begins (or the stream ends): after a finished
        sentence it is the sentence's ending, maybe with a citation before it; else mid-sentence."""
        tail = self.tail
        if not tail and not boundary:
            return ""
        self.tail = ""
        ended = boundary or "\n" in tail or _ENDS_SENTENCE.search(self.body) is not None
        if not ended:
            self.body += tail
            return tail
        sentence, self.body = self.body, ""
        fence = sentence.lstrip().startswith(("```", "~~~"))
        if fence:
            self.in_fence = not self.in_fence
        if fence or self.in_fence or self.attributor.cited(sentence + tail):
            return tail
        s_id = self.attributor.source_for(sentence)
        return tail if s_id is None else f" [{s_id}]{tail}"

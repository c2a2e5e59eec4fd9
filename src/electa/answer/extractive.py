"""The extractive answerer: no LLM, the source sentences that answer the question, each cited
(SPEC G2; issue 9, items 2–4).

How an answer is made, in order:

1. **A curated pair that answers is the answer.** When the best passing source is a curated
   Q&A pair whose question says what the visitor asked (cosine ≥ :data:`PAIR_COSINE` with an
   embedder; without one, each side holds :data:`PAIR_COVERAGE` of the other's content stems),
   its answer is given whole, as the support-bot reference does with curated answers.
2. **Sentences, read properly.** Each source is cut into sentences by
   :func:`electa.answer.segment.segment` (hard wraps joined, lists, table rows, abbreviations,
   URLs kept whole). Sentences in a span that :func:`electa.ingest.injection.scan` flags as
   text addressed to the assistant are never candidates, nor are headings, code, the fragment
   a passage cut ends with, a parameter's signature in an API reference ("`buffer`
   {Buffer|TypedArray}", "Returns: {string}": :func:`_signature`), or a setting's type or
   default ("Default: false", "Type: Boolean") for a question that does not ask for it
   (:func:`_setting_spec`).
3. **Scored for the question:** cosine to the question (meaning) + 0.3 × the share of the
   question's content stems it holds (exact tokens) + a
   position prior (0.02 / source rank, 0.01 for a sentence in the first three of its source).
   Without an embedder, 0.1 × the share of its source's title stems it holds stands in for
   meaning (the page matched the question through its title: "Can I get my money back?"
   reached "Refund policy", and its sentences about refunds, not its opening pleasantry, are
   the answer); with MiniLM the same term changed nothing on the support set and cost 0.9
   points of exact on XQuAD-R en (86.2% → 85.3%, 400 questions, ``bench/extractive_sweep.py``),
   so it is off.
   A sentence that names a code ("E2001", "EISDIR") answers no question about another code
   ("E1042", "ENOENT"), nor does a sentence of a page whose title names one ("E0383" for a
   question about E0382: Rust's error index, where each code's page explains it without
   naming it again) unless it names the question's, and then only where nothing else clears
   the bar,
   and a curated pair's sentences are read only when its question is near the visitor's
   (cosine ≥ :data:`PAIR_CONTEXT`): "Yes, every 15 minutes." means nothing without it.
4. **Chosen:** the best :attr:`ExtractiveAnswerer.sentences` that clear the bar
   (:data:`MIN_SIMILARITY` cosine, or any exact token without an embedder), skipping
   near-repeats of one already chosen. A chosen sentence that leans on the one before it
   ("After 14 days, …", "This limit …", a list item after "To fix it:") brings it along, and
   a sentence that introduces a list ("To fix it:") brings the list (up to six items).
   (A near-repeat that states other numbers, prices or plans is a different claim and stays;
   one that says the opposite is a contradiction, and the better-scored one stands alone. Two
   sentences of different pages that answer the question oppositely, a retired page's "the
   API is available on Starter" beside the current "not available on Starter", are one too,
   and the sentence of the page retrieval ranked higher stands: :func:`_contradicts`.)
   When nothing clears the bar, the best-scoring sentences of the top source stand in (beside
   a best one that holds the question's words, only those that hold some too).
5. **A fuller wording** of a chosen point may take its place only if it cleared the bar
   itself, repeats the point (70% of the shorter one's content stems, stop words not counted,
   and at least :data:`FULLER_SHARED` of them when it is another page's), keeps every word of
   the question the chosen one held, and changes no claim: the same negations, and every
   number, price and plan name of the chosen sentence still in it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from electa.answer.checks import ADVERBS, claim_parts, negated
from electa.answer.prompt import Prompt
from electa.answer.segment import Sentence, needs_previous, segment
from electa.embedders.chain import LanguageRouted, embed_routed, similarities
from electa.embedders.protocol import Embedder
from electa.ingest.injection import scan
from electa.text import content_stems, content_tokens, stem, tokens
from electa.text.analysis import map_language
from electa.text.markdown import LINKS, code_span, link_target, page_target
from electa.types import ChunkKind, Passage

STRICT_REPLY = ("I'm sorry, I don't have information about that in our knowledge base. "
                "Would you like me to connect you with someone from our team?")

MIN_SIMILARITY = 0.4
PAIR_COSINE = 0.8
PAIR_COVERAGE = 0.8
PAIR_CONTEXT = 0.5
# Off, as measured by bench/extractive_sweep.py (support set / XQuAD-R en, 400 questions): a
# relative cut at 0.8 × the best sentence cost 5.0 points of fact recall and 1.7 of exact;
# abstaining when no sentence clears the bar caught 15 / 33 more points of unanswerable
# questions for 3.3 points of fact recall / 0.6 of exact. Retrieval's floor decides abstention.
RELATIVE = 0.0
ABSTAIN_BELOW_BAR = False
LIST_ITEMS = 6
# Of the shorter sentence's content stems, the share two opposite sentences must hold in common
# to contradict (:func:`_contradicts`); a near-repeat holds 0.7.
CONTRADICTION_SHARE = 0.5
EXACT_WEIGHT, LEXICAL_TITLE_WEIGHT, RANK_PRIOR, EARLY_PRIOR = 0.3, 0.1, 0.02, 0.01

_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
# Openers of a sentence that limits the one before it; such a sentence is brought along.
_CONDITION = re.compile(
    r"^(?:unless|only|except|however|but|otherwise|provided|as long as|if not|until|not for|this (?:applies|only|does not|is not|"
    r"excludes|requires)|these (?:apply|only)|that (?:applies|only)|(?:after|beyond|past|outside) (?:that|this|the|\d))\b",
    re.IGNORECASE)
# A claim held only under a condition is not denied by its opposite (:func:`_contradicts`).
_CONDITIONAL = re.compile(r"\b(?:if|unless|except|until|only|when|whenever|once|while|after|before|within|provided)\b",
                          re.IGNORECASE)
_ADVERB_STEMS = frozenset(stem(w) for w in ADVERBS)
_WORD = re.compile(r"[^\W\d_][\w'-]*")
# Tokens like e1042, v2, ipv6: letters, then digits, exact tokens that matter most. (The
# pattern before, "[a-z]+\d|\d+[a-z]", matched whole only a letter and a digit, "v2": never
# "e1042".) A number first is a quantity or an ordinal ("10gb", "1st"), which other figures
# answer: not a code.
_CODE = re.compile(r"[a-z]+\d[a-z\d]*")  # (not "\d+[a-z\d]*": quadratic backtracking on "a111…1ж")
_CODE_SHAPE = re.compile(r"([a-z]+)(\d+)")  # (its letters and first digits: e1042 -> ("e", 4))
# An identifier written in capitals (ENOENT, EADDRINUSE): five or more, so that acronyms a
# sentence uses in passing (API, CSV, GDPR) stay words, and never a part of "LDG-ANNUAL-15".
_SHOUTED = re.compile(r"(?<![\w-])[A-Z]{5,}(?![\w-])")
# The same written as code ("`EISDIR`"): only such a one names another code against ENOENT (a
# "WARNING:" label, "HIPAA" or "HTTPS" in prose names none).
_SHOUTED_CODE = re.compile(r"`([A-Z]{5,})`")
# A type written in braces, as JSDoc and Node.js's API docs write a parameter's ("{string|null}",
# "{Object}", "{Buffer[]}"), and an inline code span: what a signature is made of.
_TYPE = re.compile(r"\{[\w.|<>\[\], *]+\}")
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_LABEL = re.compile(r"\b[A-Za-z]+:")
FULLER_SHARED = 4  # content stems another page's fuller wording must share with the chosen sentence (_choose)
LABEL_WORDS = 4  # at most, in a line ending with ":" above code, for it to be a label (candidates)
# The code a sentence ending with a colon introduces ("Upgrade pip by running:") is shown with it
# when it is this short: its commands (the lines after a "$ " prompt, where it has them: the
# rest is their output) at most CODE_LINES lines and CODE_CHARS characters; longer code is
# left to the page the answer cites. Up to CODE_BLOCKS blocks, each after the first named by a
# label ("Unix/macOS", "Windows": a page's tabs).
CODE_LINES, CODE_CHARS, CODE_BLOCKS = 3, 240, 3


@dataclass(frozen=True)
class _Candidate:
    source: int      # 1-based position in the prompt's sources
    index: int       # position among its source's sentences
    sentence: Sentence
    stems: frozenset[str]       # content stems (no stop words)
    score: float = 0.0
    clears: bool = False
    heading: str = ""           # the heading it sits under, read with it when scoring

    @property
    def read_as(self) -> str:
        return f"{self.heading}: {self.sentence.text}" if self.heading else self.sentence.text


def same_claims(chosen: str, fuller: str) -> bool:
    """Whether ``fuller`` may stand in for ``chosen``: same negations, and every number, price
    and plan name of ``chosen`` still in it.

    >>> same_claims("We do not offer refunds.", "We do offer refunds to everyone who asks.")
    False
    >>> same_claims("After 30 days we refund unused months.", "Within 30 days in full; after 30 days unused months.")
    True
    >>> same_claims("Growth costs $29/mo.", "Growth costs $19/mo for every seat.")
    False
    """
    n1, d1, p1, l1 = claim_parts(chosen)
    n2, d2, p2, l2 = claim_parts(fuller)
    return n1 == n2 and d1 <= d2 and p1 <= p2 and l1 <= l2


def _near_repeat(a: frozenset[str], b: frozenset[str]) -> bool:
    """Two sentences making the same point: 70% of the shorter one's content stems are in the other."""
    return len(a & b) >= 0.7 * max(1, min(len(a), len(b)))


@lru_cache(maxsize=1024)
def _headings(text: str, title: str) -> tuple[str, ...]:
    """For each sentence of ``segment(text)``, the heading it sits under: the passage's own
    heading line above it, else the last step of the unit's heading path ("Plans and pricing >
    Starter"); "" under a heading addressed to the assistant."""
    path = title.rsplit(" > ", 1)[1] if " > " in title else ""
    heading = "" if _injected(path) else path
    out = []
    for s in segment(text):
        if s.kind == "heading":
            heading = "" if _injected(s.text) else s.text
        out.append(heading)
    return tuple(out)


def _labelled(passage: Passage, first: int, group: list[Sentence]) -> str:
    """A run that opens with a bare figure ("$12/mo per seat …") is named by the heading it
    sits under ("Starter: $12/mo per seat …"); ``first`` is its first sentence's index."""
    text = _run(group)
    label = _headings(passage.text, passage.hit.title)[first]
    return f"{label}: {text}" if label and re.match(r"[\d$€£¥]", text) else text


def _run(group: list[Sentence]) -> str:
    """Sentences of one source in a row; a table row or list item without an end mark gets one
    before the next, so that "Users: 10" and "Plan: Fleet" do not run together (code shown
    after the sentence introducing it gets none: "`pip install x`." reads as a command with a dot)."""
    texts = [s.text.rstrip() for s in group]
    return " ".join(t if i == len(texts) - 1 or t[-1:] in ".!?:;。！？；：" or group[i].kind == "code" else t + "."
                    for i, t in enumerate(texts))


def _code_label(sentences: Sequence[Sentence], i: int) -> bool:
    """Whether sentence ``i`` only names the code right after it: a paragraph of a few words
    with no end mark ("Unix/macOS", "Windows": a page's tabs; "is the same as")."""
    s = sentences[i]
    return (s.kind == "paragraph" and i + 1 < len(sentences) and sentences[i + 1].kind == "code"
            and s.text[-1:] not in ".!?:;。！？；：" and len(tokens(s.text, pairs=False)) <= LABEL_WORDS)


def _commands(code: str) -> list[str]:
    """A code block's lines an answer shows: those after a "$ " prompt where it has any (the
    rest is their output), else every line that is not blank."""
    lines = [x.strip() for x in code.split("\n") if x.strip()]
    prompted = [x[1:].strip() for x in lines if x.startswith("$ ")]
    return prompted or lines


def _shown_code(code: str) -> str:
    r"""A code block as an answer shows it: its commands (:func:`_commands`), each as inline code.

    >>> _shown_code("$ pip install -r requirements.txt\n[...]\nSuccessfully installed x")
    '`pip install -r requirements.txt`'
    """
    return " ".join(code_span(x) for x in _commands(code))


def _brought_code(sentences: Sequence[Sentence], last: int, safe: Callable[[Sentence], bool]) -> int:
    """The last sentence of what ``sentences[last]`` (ending with a colon) brings along: the
    short code right after it, and after that code each further one a label names (a page's
    tabs), up to :data:`CODE_BLOCKS`; ``last`` when none is short enough to show."""
    at, shown = last + 1, 0
    while at < len(sentences) and shown < CODE_BLOCKS:
        code = at + 1 if _code_label(sentences, at) else at
        if (code == at and shown) or code >= len(sentences) or sentences[code].kind != "code":
            break
        commands = _commands(sentences[code].text)
        if (not commands or len(commands) > CODE_LINES or sum(map(len, commands)) > CODE_CHARS
                or not all(safe(sentences[k]) for k in range(at, code + 1))):
            break
        last, at, shown = code, code + 1, shown + 1
    return last


def _same_point(a: _Candidate, b: _Candidate, asked: frozenset[str]) -> bool:
    """A near-repeat is shown once, unless it states other figures: a table's rows, or a stale
    page's "$15/mo" beside the current "$18/mo", are different claims and both are shown, each
    cited. One that says the opposite (other negations) is a contradiction: the better one
    stands, unless the two hold two scopes ("paid by card online" and "cannot be paid by card
    offline": :func:`_qualified`), and both stand."""
    if not _near_repeat(a.stems, b.stems):
        return False
    ta, tb = a.sentence.text, b.sentence.text
    if claim_parts(ta)[0] != claim_parts(tb)[0]:
        return not _two_scopes(a, b, asked)
    return same_claims(ta, tb) or same_claims(tb, ta)


def _contradicts(a: _Candidate, b: _Candidate, asked: frozenset[str]) -> bool:
    """Two sentences of different pages that answer the question oppositely: one negated, the
    other not, holding two or more of the question's content stems (``asked``) and half the
    shorter one's stems in common, and the other sentence affirms a word the negated one denies
    (:func:`electa.answer.checks.negated`: "not **available**"). The packaged support set's
    retired API page said "The API is available on Starter, Growth and Enterprise." beside the
    current "The API is not available on the Free and Starter plans." (three stems in common of
    five: no near-repeat), and the answer quoted both. What is denied must be what the other
    affirms: "the signature header does not match the payload" and "E3107: Webhook signature
    invalid" share the question's words and differ in polarity, and say the same. Sentences
    of one page are not compared (the caller's rule): a page's "refunded within 30 days" and
    "not refunded after the billing date" are two rules, not a contradiction. Nor is a claim
    under a condition (:data:`_CONDITIONAL`): "Nothing is deleted unless you delete the
    workspace." does not deny "Deleting a workspace removes its invoices after 14 days." Nor
    are two sentences that each hold a common word the other and the question lack
    (:func:`_qualified`): "paid by card in the web portal" and "cannot be paid by card in the
    mobile app" are two scopes.

    >>> c = lambda text: _Candidate(1, 0, Sentence(text, 0, len(text), 0, "paragraph"), _content(text))
    >>> asked = _content("Can I use the API on the Starter plan?")
    >>> _contradicts(c("The API is not available on Starter."), c("The API is available on Starter and Growth."), asked)
    True
    >>> _contradicts(c("The API is not available on Starter."), c("The API is fast on Starter and Growth."), asked)
    False
    """
    if _CONDITIONAL.search(a.sentence.text) or _CONDITIONAL.search(b.sentence.text):
        return False
    denied_a, denied_b = negated(a.sentence.text), negated(b.sentence.text)
    if bool(denied_a) == bool(denied_b):
        return False
    denied, other = (denied_a, b) if denied_a else (denied_b, a)
    shared = a.stems & b.stems
    if _two_scopes(a, b, asked):
        return False  # "in the web portal" against "in the mobile app": two scopes, not one claim
    return (len(shared & asked) >= 2 and bool(denied & other.stems)
            and len(shared) >= CONTRADICTION_SHARE * min(len(a.stems), len(b.stems)))


def _qualified(a: _Candidate, b: _Candidate, asked: frozenset[str]) -> bool:
    """Whether ``a`` holds a content word that neither ``b`` nor the question holds, other than
    a capitalised name (plans such as "Growth" and "Enterprise" are what such sentences differ
    in) or an adverb between a negation and what it denies ("no longer"). Read on ``a.stems``,
    as the rest of the rule is. Conservative: any such word on both sides leaves both sentences
    standing, the stale one too ("…anymore" against "…via tokens")."""
    names = {stem(w.lower()) for w in _WORD.findall(a.sentence.text) if w[0].isupper()}
    return bool(a.stems - b.stems - asked - names - _ADVERB_STEMS)


def _two_scopes(a: _Candidate, b: _Candidate, asked: frozenset[str]) -> bool:
    """Each sentence holds a word of its own (:func:`_qualified`): two scopes, not one claim."""
    return _qualified(a, b, asked) and _qualified(b, a, asked)


def _opposed(a: _Candidate, b: _Candidate, asked: frozenset[str]) -> bool:
    """Sentences of two pages that say opposite things: a contradiction (:func:`_contradicts`),
    or a near-repeat with the other polarity ("The API is available on the Starter plan." beside
    "The API is not available on the Starter plan."), which :func:`_same_point` would show once
    as the better-scored, whatever its page's rank."""
    if _near_repeat(a.stems, b.stems):
        return (bool(claim_parts(a.sentence.text)[0]) != bool(claim_parts(b.sentence.text)[0])
                and not _two_scopes(a, b, asked))
    return _contradicts(a, b, asked)


def _shouts(text: str) -> bool:
    """Whether most of a text's words (three or more) are in capitals: its capitals name nothing."""
    words = _WORD.findall(text)
    return len(words) >= 3 and 2 * sum(w.isupper() for w in words) > len(words)


def _codes(text: str, stems: Iterable[str]) -> frozenset[str]:
    """The exact tokens of a text, as stems: letters then digits ("E1042", "v2") and
    identifiers of five or more capitals ("ENOENT"), unless the text shouts.

    >>> sorted(_codes("ENOENT (No such file) is not E1042 nor an API error.", ["enoent", "e1042", "api"]))
    ['e1042', 'enoent']
    >>> sorted(_codes("HOW DO I RESET MY PASSWORD", ["reset", "password"]))
    []
    >>> sorted(_codes("What is ENOENT?", ["enoent"]))
    ['enoent']
    """
    found = {s for s in stems if _CODE.fullmatch(s)}
    shouted = _SHOUTED.findall(text)
    if shouted and not _shouts(text):
        found.update(content_stems(" ".join(shouted)))
    return frozenset(found)


def _names_another_code(codes: frozenset[str], text: str, stems: Iterable[str]) -> bool:
    """Whether a sentence names a code of the kind the question's ``codes`` are and none of them:
    "E2001 means …" for a question about E1042 (the same letters, as many digits), "`EISDIR`" (a
    capitals identifier written as code) for one about ENOENT. Another kind of token ("v2",
    "SOC2", a "WARNING:" label) is no rival: the sentence may still answer.

    >>> _names_another_code(frozenset({"e1042"}), "E2001 means the sync failed.", ["e2001", "sync", "fail"])
    True
    >>> _names_another_code(frozenset({"e1042"}), "WARNING: install v2 first.", ["warn", "instal", "v2"])
    False
    >>> _names_another_code(frozenset({"enoent"}), "`EISDIR` (Is a directory)", ["eisdir", "directori"])
    True
    >>> _names_another_code(frozenset({"hipaa"}), "Tallyo is SOC2 and HITRUST certified.", ["soc2", "hitrust"])
    False
    """
    held = _codes(text, stems)
    if codes & held:
        return False
    shapes = {_shape(c) for c in codes} - {None}
    if shapes and any(_shape(c) in shapes for c in held):
        return True
    return any(_shape(c) is None for c in codes) and bool(_SHOUTED_CODE.search(text)) and not _shouts(text)


def _shape(code: str) -> tuple[str, int] | None:
    """A letters-then-digits code's letters and how many digits follow ("e1042" -> ("e", 4));
    None for an identifier in capitals."""
    m = _CODE_SHAPE.match(code)
    return (m.group(1), len(m.group(2))) if m else None


def _signature(text: str) -> bool:
    """Whether a list item's ``text`` is a parameter's or a return value's signature, no sentence
    to quote: it holds a type in braces, and fewer than two words stand outside its code, types
    and labels ("Returns:", "**Default:**"). (Items only: a paragraph's "Press {Enter}." is prose.)

    >>> _signature("`buffer` {Buffer|TypedArray|DataView}"), _signature("Returns: {EventTarget} this")
    (True, True)
    >>> _signature("`encoding` {string|null} **Default:** `null`")
    True
    >>> _signature("`path` {string|URL} filename or file descriptor"), _signature("Run `npm install`.")
    (False, False)
    >>> _signature("`path` {string|URL} 文件名")
    False
    """
    if not _TYPE.search(text):
        return False
    # (a Chinese description is words too: each character counts, as the index reads it)
    return len(tokens(_LABEL.sub(" ", _INLINE_CODE.sub(" ", _TYPE.sub(" ", text))), pairs=False)) < 2


# Words a pointer says beside its links ("See [Billing](…)", "Read more in [Refunds](…)"): no claim.
_POINTER_WORDS = frozenset(stem(w) for w in "see also related read more learn next previous back details refer further".split())


# What a setting's type or default is written with in a configuration reference ("Type:
# Boolean", "Default: none", "Type: array of strings or tables"): literals and type names.
_LITERALS = frozenset(
    "true false yes no null none nil undefined unset empty boolean bool string strings number numbers integer"
    " integers int float double array arrays object objects table tables list lists map maps path paths url urls"
    " not supported of or and any".split())
# The labels a configuration reference gives a setting's type and default under (English: the
# references met, npm's and Cargo's, write them so). Any other label ("Backups: none",
# "Endpoint: `POST /v1/refunds`", "Environment: `CARGO_HOME`") may be what is asked.
_SPEC_LABELS = frozenset({"type", "types", "default", "defaults", "default value", "data type", "value type"})
_SPEC_ITEM = re.compile(r"^\W{0,3}(?P<label>[^\W\d_][\w -]{0,24}?)\W{0,3}:\W{0,3}\s+(?P<value>.+)$")
_QUOTED = re.compile(r"\"[^\"\n]*\"|'[^'\n]*'")


def _setting_spec(text: str, question: frozenset[str]) -> bool:
    """Whether a list item gives a setting's type or default and nothing else ("Default: false",
    "Type: Boolean"), and the question does not ask for it (its label's words are not the
    question's). Under a heading that names the setting, such an item is read as the heading:
    on npm's docs "What does --save-exact do?" was answered "Default: false. Type: Boolean", and
    the sentence that says what it does ("Dependencies saved to package.json will be configured
    with an exact version…") was never quoted. Only the labels of a type and a default count
    (:data:`_SPEC_LABELS`): a plan's "Backups: none" or an API's "Endpoint: `POST /v1/refunds`"
    may be the answer. A value that says more ("Default: 'public' for new packages") or names a
    count is no type or default either.

    >>> q = frozenset({"save", "exact"})
    >>> _setting_spec("Default: false", q), _setting_spec("Type: array of strings or tables", q)
    (True, True)
    >>> _setting_spec("**Default:** `null`", q), _setting_spec('Type: null, "restricted", or "public"', q)
    (True, True)
    >>> _setting_spec("Default: false", frozenset({"default", "save", "exact"}))
    False
    >>> _setting_spec("Backups: none", q), _setting_spec("Environment: `CARGO_HOME`", q)
    (False, False)
    >>> _setting_spec("Default: 100 GB", q), _setting_spec("Default: 'public' for new packages", q)
    (False, False)
    """
    m = _SPEC_ITEM.match(text.strip())
    if m is None or " ".join(m.group("label").lower().split()) not in _SPEC_LABELS:
        return False
    if {stem(t) for t in tokens(m.group("label"), pairs=False)} & question:
        return False
    rest = _QUOTED.sub(" ", _INLINE_CODE.sub(" ", m.group("value")))
    return set(tokens(rest, pairs=False)) <= _LITERALS


# A page's notes on an item's history and status ("Added in: v18.11.0", "Deprecated since:
# v6.0.0", "Stability: 1 - Experimental", "N-API version: 1"): Node.js writes one under every
# heading, and read as the heading they outscore what the item does.
_NOTE = re.compile(r"\b(?:added in|deprecated since|removed in|changed in|introduced in|available since|since"
                   r"|n-api version|stability|version)\s*:", re.IGNORECASE)
# (as tokens() reads a question: accents folded, so "cuando" for "cuándo")
_WHEN = frozenset({"when", "version", "versions", "since", "release", "released", "wann", "cuando", "quand",
                   "quando", "wanneer"})  # (Portuguese and Italian "quando", Dutch "wanneer")


def _history_note(text: str, question: frozenset[str], words: frozenset[str]) -> bool:
    """Whether ``text`` is only notes on an item's history or status (:data:`_NOTE`) and the
    question (its content ``question`` stems, its ``words`` as written) asks neither when nor
    of a word the notes say ("Is it stable?": "Stability: 2 - Stable" is the answer).

    >>> q, w = frozenset({"join", "two", "path"}), frozenset({"how", "do", "i", "join", "two", "paths"})
    >>> _history_note("Added in: v0.1.16", q, w), _history_note("Added in: v8.0.0 N-API version: 1", q, w)
    (True, True)
    >>> _history_note("Added in: v0.1.16", q, w | {"when"}), _history_note("Stability: 2 - Stable", q | {"stabl"}, w)
    (False, False)
    >>> _history_note("Added in: v0.1.16 to join paths", q, w), _history_note("Version 2 adds joins.", q, w)
    (False, False)
    """
    line = text.strip().rstrip(".")
    labels = list(_NOTE.finditer(line)) if len(line) <= 160 else []
    if not labels or labels[0].start() != 0:
        return False
    values = [line[a.end():b.start() if b else len(line)] for a, b in zip(labels, [*labels[1:], None], strict=True)]
    if any(":" in v or len(v) > 40 for v in values):
        return False
    said = {stem(t) for t in tokens(line, pairs=False) if not t[:1].isdigit() and not (t[:1] == "v" and t[1:2].isdigit())}
    return not (said & question) and not (words & _WHEN)


def _links_only(text: str) -> bool:
    """Whether a sentence only points elsewhere: links to pages, and beside them no word but a
    pointer's ("[npm install-ci-test](/commands/npm-install-ci-test)", "See
    [package-lock.json](/configuring-npm/package-lock-json) and [`npm shrinkwrap`](/commands/npm-shrinkwrap)."),
    which answers quoted as sentences on npm's docs. A link to a file or an address
    ("[Windows](setup.zip)", "Email [help@x.org](mailto:help@x.org).") is the answer to where,
    and a sentence that says something of its link ("[Two-factor authentication](/2fa) is
    required.") says it.

    >>> _links_only("* [npm install-ci-test](/commands/npm-install-ci-test)"), _links_only("See [a](/a) and <https://b.org>.")
    (True, True)
    >>> _links_only("Run [`npm ci`](/commands/npm-ci) in automated builds."), _links_only("[2FA](/2fa) is required.")
    (False, False)
    >>> _links_only("Email [help@x.org](mailto:help@x.org)."), _links_only("* [Windows](npm.zip)")
    (False, False)
    """
    found = list(LINKS.finditer(text))
    if not found or not all(page_target(link_target(m)) for m in found):
        return False
    return _content(LINKS.sub(" ", text)) <= _POINTER_WORDS


def _code_only(text: str) -> bool:
    """Whether a list item is inline code and nothing else: a name ("`package-lock.json`", an
    item of a list of files) that echoes a question naming it and says nothing of it (on npm's
    docs it was quoted first for "What is package-lock.json for?", and the page's opening, which
    holds the same words, was dropped as a near-repeat of it). (Items only: a paragraph of code
    alone, "`pip install electa`" after "To install it, run:", is what its label introduces.)

    >>> _code_only("`package-lock.json`"), _code_only("`yarn.lock`, `npm-shrinkwrap.json`")
    (True, True)
    >>> _code_only("`npm ci` removes `node_modules`."), _code_only("Refunds take 5 days.")
    (False, False)
    """
    rest, spans = _INLINE_CODE.subn(" ", text)
    return spans > 0 and not tokens(rest, pairs=False)


def _content(text: str) -> frozenset[str]:
    return frozenset(stem(t) for t in content_tokens(text))


# A reply that answers only with the sentence beside it: "Yes.", "No.", "Sure!", "Ja.", "Sí."
# (tokens() folds "Sí" to "si")
_BARE = frozenset(stem(w) for w in "yes no yep nope sure absolutely definitely correct indeed ja nein doch si oui non".split())


def _bare(text: str) -> bool:
    """Whether ``text`` is a bare yes or no, every word of it one (from the review: a sentence of
    stop words alone, "It is.", "Why?", was read as one).

    >>> _bare("Yes."), _bare("No!"), _bare("Yes, every 15 minutes."), _bare("Sí."), _bare("It is."), _bare("Why?")
    (True, True, False, True, False, False)
    """
    words = tokens(text, pairs=False)
    return bool(words) and all(stem(w) in _BARE for w in words)


def _asked(question: str, prompt: Prompt) -> str:
    """The language whose map reads the question and its sources in it: as retrieval decided
    it (``prompt.asked``), else from the question and the sources' languages
    (:func:`electa.text.analysis.map_language`)."""
    return prompt.asked or map_language(question, [p.hit.lang for p in prompt.sources])


@lru_cache(maxsize=1024)
def _injected(text: str) -> tuple[tuple[int, int], ...]:
    """Spans of ``text`` addressed to the assistant (read once per passage text, not per step)."""
    return tuple((f.start, f.end) for f in scan(text))


def candidates(passage: Passage, source: int) -> list[_Candidate]:
    """The sentences of one source an answer may quote, in reading order."""
    text = passage.text
    flagged = _injected(text)
    comments = [m.span() for m in _COMMENT.finditer(text)]
    out = []
    headings = _headings(text, passage.hit.title)
    sentences = segment(text)
    for i, s in enumerate(sentences):
        if s.kind in ("heading", "code") or len(s.text) < 3 or s.text.endswith("…"):
            continue
        if s.kind == "item" and _signature(s.text):
            continue
        if _links_only(s.text) or (s.kind == "item" and _code_only(s.text)):
            continue
        if _code_label(sentences, i):
            continue  # ("Unix/macOS" over its tab's code, "is the same as" between two: no claim)
        if s.text.endswith(":") and (len(words := tokens(s.text, pairs=False)) < 2 or (
                len(words) <= LABEL_WORDS and i + 1 < len(sentences) and sentences[i + 1].kind == "code")):
            # A label before what it names ("Output:"), or a few words naming the code after them
            # ("Erroneous code example:", "For example:"), say nothing without it, and an answer
            # quotes no code; a sentence that says what the code does ("The following command
            # copies a file to a bucket that expires:") still tells.
            continue
        if any(a < s.end and s.start < b for a, b in flagged):
            continue
        if s.kind == "row" and "|" in s.text:
            continue
        if "<!--" in s.text or "-->" in s.text or any(a < s.end and s.start < b for a, b in comments):
            continue  # a comment was never meant for a visitor, whatever it says
        out.append(_Candidate(source, i, s, _content(s.text), heading=headings[i]))
    return out


class ExtractiveAnswerer:
    """``ExtractiveAnswerer(embedder).compose(prompt, question)``: see the module docstring.

    >>> list(ExtractiveAnswerer().stream(Prompt(()), "anything"))[0]
    "I'm "
    """

    name = "extractive"

    def __init__(self, embedder: Embedder | None = None, sentences: int = 3, *, min_similarity: float = MIN_SIMILARITY,
                 relative: float = RELATIVE, abstain_below_bar: bool = ABSTAIN_BELOW_BAR,
                 pair_context: float = PAIR_CONTEXT, title_weight: float | None = None) -> None:
        self.embedder = embedder
        self.sentences = sentences
        self.min_similarity, self.relative = min_similarity, relative
        self.abstain_below_bar, self.pair_context = abstain_below_bar, pair_context
        self.title_weight = title_weight if title_weight is not None else (0.0 if embedder else LEXICAL_TITLE_WEIGHT)

    # An embedder chain reads each source's sentences with the model that read the source (its
    # document's language), and the question only with the models those sources need: an
    # English help center's answer never loads the multilingual model.
    def _query(self, question: str, prompt: Prompt) -> np.ndarray:
        assert self.embedder is not None
        if isinstance(self.embedder, LanguageRouted):
            return self.embedder.embed_query_in(question, [p.hit.lang for p in prompt.sources])
        return self.embedder.embed_query(question)

    def _embed(self, texts: list[str], langs: list[str]) -> np.ndarray:
        assert self.embedder is not None
        return embed_routed(self.embedder, texts, langs)

    # -- 1. a curated pair -------------------------------------------------------------------
    def _pair_cosines(self, prompt: Prompt, question: str, qvec: np.ndarray | None) -> dict[int, float]:
        """Cosine of each curated pair's question (by source id) to the visitor's, in one batch."""
        pairs = {s_id: p.hit.title for s_id, p in enumerate(prompt.sources, 1)
                 if p.hit.kind is ChunkKind.QA and p.hit.title.strip()}
        if self.embedder is None or qvec is None or not pairs:
            return {}
        langs = [prompt.sources[i - 1].hit.lang for i in pairs]
        sims = similarities(self.embedder, self._embed(list(pairs.values()), langs), qvec, langs,
                            _asked(question, prompt))
        return {s_id: float(sim) for s_id, sim in zip(pairs, sims, strict=True)}

    def _pair_answers(self, passage: Passage, question: str, pair_cosines: dict[int, float]) -> bool:
        pair_q = passage.hit.title
        if passage.hit.kind is not ChunkKind.QA or not pair_q.strip() or not passage.text.strip():
            return False
        if self.embedder is not None:
            return pair_cosines.get(1, 0.0) >= PAIR_COSINE
        a, b = set(content_stems(question)), set(content_stems(pair_q))
        return bool(a and b) and len(a & b) >= PAIR_COVERAGE * len(a) and len(a & b) >= PAIR_COVERAGE * len(b)

    # -- 3. scoring ----------------------------------------------------------------------------
    def _scored(self, prompt: Prompt, question: str, qvec: np.ndarray | None,
                pair_cosines: dict[int, float]) -> list[_Candidate]:
        pool = [c for s_id, p in enumerate(prompt.sources, 1) for c in candidates(p, s_id)]
        if not pool:
            return []
        q = content_stems(question)
        codes = _codes(question, q)
        # (a code weighs as any word: counted double, the support set lost a fact, "Add a working
        # card …" for E4020, to "E4020 appears when …", and gained none; the pattern before never
        # matched "e1042", so the double weight this docstring once claimed never ran)
        sims = [0.0] * len(pool)
        if self.embedder is not None and qvec is not None:
            langs = [prompt.sources[c.source - 1].hit.lang for c in pool]
            sims = [float(x) for x in similarities(
                self.embedder, self._embed([c.read_as for c in pool], langs), qvec, langs, _asked(question, prompt))]
        titles = {s_id: _content(p.hit.title) for s_id, p in enumerate(prompt.sources, 1)}
        off_topic = self._off_topic_pairs(prompt, question, pair_cosines)
        # A page titled by another code is about it ("E0383" for a question about E0382): its
        # sentences say nothing of the question's code, and one that names it ("This error is
        # like E0382, but …") clears no bar: it stands in only where nothing else answers.
        about_another = {s_id for s_id, p in enumerate(prompt.sources, 1)
                         if codes and _names_another_code(codes, p.hit.title, titles[s_id])}
        out = []
        asked = frozenset(q)
        said = frozenset(tokens(question, pairs=False))  # (tokens() folds case and accents)
        for c, sim in zip(pool, sims, strict=True):
            if c.sentence.kind == "item" and _setting_spec(c.sentence.text, asked):
                continue  # read as its heading, the setting's name, it outscored what the setting does
            if _history_note(c.sentence.text, asked, said):
                continue  # (the same: "Added in: v0.1.16" answered "How do I join two paths?")
            names_asked = c.source in about_another and bool(codes & _codes(c.sentence.text, c.stems))
            if c.source in off_topic or (c.source in about_another and not names_asked):
                continue
            all_stems = {stem(t) for t in tokens(c.read_as)}
            if codes and _names_another_code(codes, c.sentence.text, c.stems):
                continue  # "E2001 means …" does not answer a question about E1042, nor EISDIR's about ENOENT
            share = sum(s in all_stems for s in q) / len(q) if q else 0.0
            title = titles[c.source]
            title_share = len(title & c.stems) / len(title) if title else 0.0
            score = (sim + EXACT_WEIGHT * share + self.title_weight * title_share + RANK_PRIOR / c.source
                     + (EARLY_PRIOR if c.index < 3 else 0.0))
            clears = (sim >= self.min_similarity if self.embedder is not None else share > 0) and not names_asked
            out.append(_Candidate(c.source, c.index, c.sentence, c.stems, score, clears, c.heading))
        return out

    def _off_topic_pairs(self, prompt: Prompt, question: str, pair_cosines: dict[int, float]) -> set[int]:
        """Curated pairs whose question is about something else: their answer sentences
        ("Yes, every 15 minutes.") mean nothing without it, so they are not quoted."""
        if self.embedder is not None:
            return {s_id for s_id, sim in pair_cosines.items() if sim < self.pair_context}
        pairs = {s_id: p.hit.title for s_id, p in enumerate(prompt.sources, 1)
                 if p.hit.kind is ChunkKind.QA and p.hit.title.strip()}
        q = set(content_stems(question))
        return {s_id for s_id, text in pairs.items() if len(q & set(content_stems(text))) < self.pair_context * len(q)}

    # -- 4/5. choice -----------------------------------------------------------------------
    def _choose(self, scored: list[_Candidate], question: str, pages: Sequence[int]) -> list[_Candidate]:
        """``pages``: each source's document id, so that sentences of one page never contradict."""
        q = frozenset(content_stems(question))
        passing = [c for c in scored if c.clears]
        if not passing:
            if self.abstain_below_bar and self.embedder is not None:
                return []
            # The sources passed retrieval: their best sentences, not their first ones.
            top = min(c.source for c in scored)
            ranked = sorted((c for c in scored if c.source == top), key=lambda c: -c.score)
            best = ranked[0]
            if best.stems & q:
                # Beside a best that holds the question's words, one holding none of them is
                # another item of the page ("EMFILE …" beside "ENOENT …"), not more of the answer,
                # unless it goes on from the best ("They usually arrive within 10 days.").
                ranked = [best, *(c for c in ranked[1:] if c.stems & q or (
                    c.index == best.index + 1 and needs_previous(c.sentence, best.sentence)))]
            passing = ranked[: max(1, self.sentences - 1)]
        best_score = max(c.score for c in passing)
        chosen: list[_Candidate] = []
        for c in sorted(passing, key=lambda c: -c.score):
            if chosen and c.score < self.relative * best_score:
                break
            rivals = [j for j, o in enumerate(chosen) if pages[o.source - 1] != pages[c.source - 1] and _opposed(c, o, q)]
            if rivals:
                # Retrieval ranked one page higher: its sentence stands, whichever scores more
                # (in the first rival's place; where a kept sentence makes its point, that one).
                if all(c.source < chosen[j].source for j in rivals):
                    kept = [o for j, o in enumerate(chosen) if j not in rivals]
                    if any(_same_point(c, o, q) for o in kept):
                        chosen = kept
                    else:
                        chosen = [c if j == rivals[0] else o for j, o in enumerate(chosen)
                                  if j == rivals[0] or j not in rivals]
            elif not any(_same_point(c, o, q) for o in chosen):
                chosen.append(c)
            if len(chosen) == self.sentences:
                break
        for i, c in enumerate(chosen):
            # (another page's must repeat FULLER_SHARED of its words at least: three shared words are
            # a coincidence, not a point, Rust's E0502 "A variable already borrowed with a certain
            # mutability … was borrowed again …" for E0499's "A variable was borrowed as mutable
            # more than once.", which describe two errors)
            fuller = [x for x in passing if len(x.stems) > len(c.stems) and _near_repeat(x.stems, c.stems)
                      and (c.stems & q) <= x.stems and same_claims(c.sentence.text, x.sentence.text)
                      and (pages[x.source - 1] == pages[c.source - 1] or len(c.stems & x.stems) >= FULLER_SHARED)]
            if fuller:
                best = max(fuller, key=lambda x: x.score)
                if not any(_near_repeat(best.stems, o.stems) for j, o in enumerate(chosen) if j != i):
                    chosen[i] = best
        return chosen

    def _with_context(self, chosen: list[_Candidate], prompt: Prompt) -> list[tuple[int, int, list[Sentence]]]:
        """Each chosen sentence with what it leans on: up to two sentences back (and a bare
        "Yes."/"No." before it), the list a colon introduces; groups of one source that touch
        or overlap become one, so a run of sentences is cited once."""
        groups: list[tuple[int, int, int]] = []  # (source, first index, last index)
        for c in chosen:
            sentences = segment(prompt.sources[c.source - 1].text)
            flagged = _injected(prompt.sources[c.source - 1].text)

            def safe(s: Sentence, flagged: tuple[tuple[int, int], ...] = flagged) -> bool:
                return not any(a < s.end and s.start < b for a, b in flagged)

            first = last = c.index
            for _ in range(2):
                prev = sentences[first - 1] if first > 0 else None
                bare = prev is not None and prev.block == sentences[first].block and not _content(prev.text)
                if prev is None or not (bare or needs_previous(sentences[first], prev)) or not safe(prev):
                    break
                first -= 1
            # A bare "Yes."/"No." chosen says nothing without the sentence after it ("Yes. Run the
            # Docker image…": a Markdown FAQ's answer to "Can I self-host?" was "Yes.").
            nxt = sentences[last + 1] if last + 1 < len(sentences) else None
            if (_bare(sentences[last].text) and nxt is not None and nxt.block == sentences[last].block
                    and nxt.kind == sentences[last].kind and safe(nxt)):
                last += 1
            # A condition right after it ("Unless…", "This applies only…") is part of the answer.
            for _ in range(2):
                nxt = sentences[last + 1] if last + 1 < len(sentences) else None
                if (nxt is None or not _CONDITION.match(nxt.text) or not safe(nxt) or nxt.kind != sentences[last].kind
                        or nxt.block - sentences[last].block > 1):
                    break
                last += 1
            # "To fix it:" is no answer without the list it introduces.
            while sentences[last].ends_with_colon or (sentences[last].kind == "item" and last > c.index):
                nxt = sentences[last + 1] if last + 1 < len(sentences) else None
                if nxt is None or nxt.kind != "item" or last - c.index >= LIST_ITEMS or not safe(nxt):
                    break
                last += 1
            # Nor is "Upgrade pip by running:" without the command.
            if sentences[last].ends_with_colon:
                last = _brought_code(sentences, last, safe)
            groups.append((c.source, first, last))
        merged: list[list[int]] = []
        for source, first, last in sorted(groups):
            if merged and merged[-1][0] == source and first <= merged[-1][2] + 1:
                merged[-1][2] = max(merged[-1][2], last)
            else:
                merged.append([source, first, last])
        out = []
        for source, first, last in merged:
            sentences = segment(prompt.sources[source - 1].text)
            # (code inside a group was brought by the sentence introducing it: shown as its commands)
            out.append((source, first, [
                replace(s, text=_shown_code(s.text)) if s.kind == "code" else
                replace(s, text=s.text + ":") if _code_label(sentences, i) else s
                for i, s in enumerate(sentences[first:last + 1], first) if s.kind != "heading"]))
        return out

    def compose(self, prompt: Prompt, question: str) -> str:
        if not prompt.sources:
            return STRICT_REPLY
        top = prompt.sources[0]
        qvec = self._query(question, prompt) if self.embedder is not None else None
        pair_cosines = self._pair_cosines(prompt, question, qvec)
        if not _injected(top.text) and self._pair_answers(top, question, pair_cosines):
            return f"{' '.join(top.text.split())} [1]"
        scored = self._scored(prompt, question, qvec, pair_cosines)
        if not scored:
            return STRICT_REPLY
        chosen = self._choose(scored, question, [p.hit.document_id for p in prompt.sources])
        if not chosen:
            return STRICT_REPLY
        groups = self._with_context(chosen, prompt)
        return " ".join(_labelled(prompt.sources[source - 1], first, group) + f" [{source}]"
                        for source, first, group in groups)

    def stream(self, prompt: Prompt, question: str) -> Iterator[str]:
        yield from re.findall(r"\S+\s*", self.compose(prompt, question))


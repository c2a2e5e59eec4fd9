"""Answer metrics as pure functions, and their confidence intervals (``electa eval --answers``).

Per answer:

- **exact**: the gold sentence, normalised (:func:`normalise`: NFKC, casefolded, citation
  markers dropped, whitespace collapsed, punctuation trimmed at its ends), is contained in the
  normalised answer.
- **token F1**: SQuAD v1.1's token F1 (Rajpurkar et al. 2016, the official ``evaluate-v1.1.py``:
  lowercase, punctuation removed, English articles removed, whitespace tokens, F1 of the token
  multisets) between the gold sentence and the answer's best-matching sentence. Scripts written
  without spaces between words (Chinese, Japanese, Thai, Lao, Khmer, Myanmar) count each
  character as a token, as MLQA's evaluation does for Chinese (Lewis et al. 2020, ``mlqa_evaluation_v1.py``
  "mixed segmentation").
- **facts stated**: a fact is a list of alternative strings; it is stated when any one appears
  in the casefolded answer (Markdown emphasis and citation markers removed).
- **cited claim supported**: for each ``[n]`` in the answer, the sentence it closes is the claim;
  it is supported when at least :data:`CLAIM_SUPPORT` of the claim's content tokens (English stop
  words dropped, Porter stems) stand in the cited passage (title and text), **and** the passage
  sentences that best match it hold its claims: the same polarity (negated or not), and every
  number, price and plan name it states (:func:`electa.answer.checks.claims_held`). Shared words
  alone pass "Growth costs $9/mo per seat." against "Growth costs $29/mo per seat.", and passed
  every citation the pipeline attaches after generation (it asks for the same share of stems).
  The attribution now applies the same claims test (:func:`electa.answer.checks.source_for`), so
  an attached citation still passes this one: for LLM rows, citation precision measures the
  model's own markers, and attached markers only add claims that passed both tests.
- **abstained**: the pipeline gave the strict reply (``done.strict``), or the text carries the
  strict reply or says plainly that it has no information (:data:`ABSTENTION`; English only).

Intervals (:class:`Estimate`):

- a share of items (exact, gold cited, forbidden-string rate…): the Wilson score interval at 95%
  (Wilson 1927; Brown, Cai & DasGupta 2001 recommend it over the normal interval for small n and
  shares near 0 or 1, which is where an injection-echo rate of 0 sits);
- a mean or a ratio of sums over items (token F1, fact recall, citation precision): the bootstrap
  percentile interval (Efron & Tibshirani 1993, ch. 13), items resampled with replacement
  :data:`RESAMPLES` times from a fixed seed, so a rerun gives the same interval. Resampling items,
  not facts or citations, keeps the facts of one answer together (a cluster bootstrap).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from electa.answer.checks import claims_held
from electa.text import STOPWORDS, stem

Z95 = 1.959963984540054  # the 0.975 quantile of the standard normal
RESAMPLES = 2000
SEED = 20240901
# Half of a claim's content words must stand in the passage it cites: a verbatim or lightly
# reworded sentence clears it; a claim about another page shares a few topic words at most.
CLAIM_SUPPORT = 0.5

_CITE = re.compile(r"\s*\[\d+\](?:\s*\[\d+\])*")
_MARKER = re.compile(r"\[(\d+)\]")
_EMPHASIS = re.compile(r"\*\*|__|`")
# Scripts without spaces between words: each character is a token.
_UNSPACED = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u0e00-\u0e7f\u0e80-\u0eff\u1780-\u17ff\u1000-\u109f"
_TOKEN = re.compile(rf"[{_UNSPACED}]|[^\W_{_UNSPACED}]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])\s*|(?<=[।؟])\s*|\n+")
_ARTICLES = {"en": frozenset({"a", "an", "the"})}
ABSTENTION = re.compile(
    r"\b(?:i|we) (?:do not|don't|don’t) have (?:any |enough )?(?:information|details|an answer)"
    r"|\b(?:is|are) not (?:covered |mentioned )?in (?:the|our) (?:sources|knowledge base)"
    r"|\bno (?:source|information) (?:in our knowledge base )?(?:matched|about|on)", re.IGNORECASE)


@dataclass(frozen=True)
class Estimate:
    """A measured value with its 95% interval; ``value`` is None when nothing was measured (n=0)."""

    value: float | None
    low: float | None
    high: float | None
    n: int
    method: str

    def to_dict(self) -> dict[str, object]:
        r = lambda x: None if x is None else round(x, 4)
        return {"value": r(self.value), "low": r(self.low), "high": r(self.high), "n": self.n, "method": self.method}

    def cell(self, percent: bool = True) -> str:
        """``81.2% [74.0, 87.1] n=120`` (a share) or ``0.734 [0.70, 0.77] n=120``."""
        if self.value is None or self.low is None or self.high is None:
            return f"– (n={self.n})"
        if percent:
            return f"{100 * self.value:.1f}% [{100 * self.low:.1f}, {100 * self.high:.1f}] n={self.n}"
        return f"{self.value:.3f} [{self.low:.3f}, {self.high:.3f}] n={self.n}"


def wilson(successes: int, n: int, z: float = Z95) -> Estimate:
    """The share ``successes / n`` with its Wilson score interval.

    >>> e = wilson(0, 40)
    >>> (e.value, e.low, round(e.high, 4))
    (0.0, 0.0, 0.0876)
    """
    if n <= 0:
        return Estimate(None, None, None, 0, "wilson")
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return Estimate(p, max(0.0, centre - half), min(1.0, centre + half), n, "wilson")


def bootstrap_ratio(numerators: Sequence[float], denominators: Sequence[float] | None = None,
                    resamples: int = RESAMPLES, seed: int = SEED) -> Estimate:
    """``sum(numerators) / sum(denominators)`` over items (a plain mean without denominators),
    with the bootstrap percentile interval: items drawn with replacement, 2.5th and 97.5th
    percentiles of the resampled ratios.

    >>> e = bootstrap_ratio([1.0, 1.0, 1.0])
    >>> (e.value, e.low, e.high)
    (1.0, 1.0, 1.0)
    """
    import numpy as np

    num = np.asarray(numerators, dtype=float)
    den = np.ones_like(num) if denominators is None else np.asarray(denominators, dtype=float)
    if len(num) == 0 or den.sum() <= 0:
        return Estimate(None, None, None, int(den.sum()) if len(num) else 0, "bootstrap")
    value = float(num.sum() / den.sum())
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(num), size=(resamples, len(num)))
    dens = den[idx].sum(axis=1)
    ratios = num[idx].sum(axis=1)[dens > 0] / dens[dens > 0]
    low, high = (float(x) for x in np.percentile(ratios, [2.5, 97.5]))
    return Estimate(value, low, high, int(den.sum()) if denominators is not None else len(num), "bootstrap")


def strip_citations(text: str) -> str:
    """The answer without its ``[n]`` markers.

    >>> strip_citations("Refunds take 5 days [1][2]. Ask us [3].")
    'Refunds take 5 days. Ask us.'
    """
    return _CITE.sub("", text)


def normalise(text: str) -> str:
    """NFKC, casefolded, citation markers and Markdown emphasis dropped, whitespace collapsed,
    punctuation trimmed at both ends.

    >>> normalise("  The **Free** plan\\n costs $0/mo. [1]")
    'the free plan costs $0/mo'
    """
    text = _EMPHASIS.sub("", strip_citations(unicodedata.normalize("NFKC", text))).casefold()
    return _trim_punctuation(" ".join(text.split()))


def _trim_punctuation(text: str) -> str:
    start, end = 0, len(text)
    while start < end and (unicodedata.category(text[start]).startswith("P") or text[start].isspace()):
        start += 1
    while end > start and (unicodedata.category(text[end - 1]).startswith("P") or text[end - 1].isspace()):
        end -= 1
    return text[start:end]


def exact(answer: str, gold: str) -> bool:
    """The normalised gold sentence stands in the normalised answer.

    >>> exact("Refunds: annual plans are refunded within 30 days. [1]", "Annual plans are refunded within 30 days.")
    True
    """
    gold_n = normalise(gold)
    return bool(gold_n) and gold_n in normalise(answer)


def answer_tokens(text: str, lang: str | None = None) -> list[str]:
    """SQuAD's normalisation into tokens: lowercase, punctuation dropped, articles dropped (English),
    one token per character in scripts written without spaces.

    >>> answer_tokens("The Panthers' defense!", "en")
    ['panthers', 'defense']
    >>> answer_tokens("黑豹队 308分")
    ['黑', '豹', '队', '308', '分']
    """
    articles = _ARTICLES.get(lang or "", frozenset())
    return [t for t in _TOKEN.findall(unicodedata.normalize("NFKC", text).lower()) if t not in articles]


def token_f1(prediction: str, gold: str, lang: str | None = None) -> float:
    """SQuAD token F1 between two texts.

    >>> round(token_f1("the cat sat on the mat", "a cat sat", "en"), 4)
    0.6667
    """
    pred, ref = answer_tokens(prediction, lang), answer_tokens(gold, lang)
    same = sum((Counter(pred) & Counter(ref)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


def sentences(text: str) -> list[str]:
    """The answer's sentences: split at sentence stops (Latin, CJK, Devanagari, Arabic), line
    breaks and citation markers (a cited sentence ends at its marker, which also splits answers
    in scripts that mark sentences by spacing alone, such as Thai); pieces without a word dropped.

    >>> sentences("One [1]. Two! 三。四")
    ['One', 'Two!', '三。', '四']
    """
    pieces = (s.strip() for part in _CITE.split(text) for s in _SENTENCE_END.split(part))
    return [s for s in pieces if _TOKEN.search(s)]


def best_sentence_f1(answer: str, gold: str, lang: str | None = None) -> float:
    """Token F1 of the answer's sentence closest to the gold sentence (0 for an empty answer)."""
    return max((token_f1(s, gold, lang) for s in sentences(answer)), default=0.0)


def _fold(text: str) -> str:
    return " ".join(_EMPHASIS.sub("", strip_citations(unicodedata.normalize("NFKC", text))).casefold().split())


def states(answer: str, alternatives: Sequence[str]) -> bool:
    """Any of ``alternatives`` appears in the answer (casefolded, whitespace collapsed).

    >>> states("Refunds within **30 days** [1].", ["thirty days", "30 days"])
    True
    """
    folded = _fold(answer)
    return any(_fold(alt) in folded for alt in alternatives if alt.strip())


def facts_stated(answer: str, facts: Sequence[Sequence[str]]) -> int:
    """How many of ``facts`` the answer states; a fact is a list of alternative wordings.

    >>> facts_stated("Growth is $29/mo per seat.", [["$29"], ["per seat", "per user"], ["$278"]])
    2
    """
    return sum(states(answer, alternatives) for alternatives in facts)


def claim_tokens(text: str) -> set[str]:
    """Content tokens of a claim or passage: stop words dropped, Porter stems (characters in
    scripts without spaces).

    >>> sorted(claim_tokens("Refunds are refunded within 30 days"))
    ['30', 'dai', 'refund', 'within']
    """
    return {stem(t) for t in answer_tokens(text) if t not in STOPWORDS}


def cited_claims(answer: str) -> list[tuple[str, int]]:
    """``(claim, n)`` for each citation marker: the claim is the text from the previous sentence
    end (or the previous marker) up to the marker.

    >>> cited_claims("Annual plans are refunded [1]. Monthly are not [2][3]. Ask us.")
    [('Annual plans are refunded', 1), ('Monthly are not', 2), ('Monthly are not', 3)]
    """
    out: list[tuple[str, int]] = []
    start, claim = 0, ""
    for m in _MARKER.finditer(answer):
        segment = answer[start:m.start()]
        if _TOKEN.search(segment):  # words since the last marker: a new claim (else [2][3] share one)
            claim = [p for p in _SENTENCE_END.split(segment.strip()) if _TOKEN.search(p)][-1].strip()
        out.append((claim, int(m.group(1))))
        start = m.end()
    return out


def claim_supported(claim: str, passage: str, threshold: float = CLAIM_SUPPORT) -> bool:
    """At least ``threshold`` of the claim's content tokens stand in the passage, and the
    passage sentences that best match the claim hold its negation, numbers, prices and plan
    names (:func:`electa.answer.checks.claims_held`).

    >>> claim_supported("Annual plans are refunded within 30 days", "Annual plans: refunded in full within 30 days.")
    True
    >>> claim_supported("Growth costs $29", "Annual plans are refunded within 30 days.")
    False
    >>> claim_supported("Growth costs $9/mo per seat", "Growth costs $29/mo per seat.")  # 5 of 6 stems, another price
    False
    """
    wanted = claim_tokens(claim)
    if not wanted:
        return True  # a marker with no words before it claims nothing
    return len(wanted & claim_tokens(passage)) >= threshold * len(wanted) and claims_held(claim, passage)


def citation_support(answer: str, passages: Sequence[str]) -> tuple[int, int]:
    """``(supported, cited)`` over the answer's citation markers; a marker past the last passage
    cites nothing and is unsupported.

    >>> citation_support("Refunds within 30 days [1]. Growth is $29 [1].", ["Refunds within 30 days."])
    (1, 2)
    """
    pairs = cited_claims(answer)
    ok = sum(1 <= n <= len(passages) and claim_supported(claim, passages[n - 1]) for claim, n in pairs)
    return ok, len(pairs)


def abstained(answer: str, done: Mapping[str, object], strict_reply: str) -> bool:
    """The pipeline abstained (``done.strict``: nothing passed the floor), or the answerer gave
    the strict reply or said it has no information on it (English phrasings only).

    >>> abstained("Sorry, we don't have information about that.", {}, "N/A")
    True
    """
    return bool(done.get("strict")) or strict_reply.casefold() in answer.casefold() or bool(ABSTENTION.search(answer))


def strict_precision_recall(abstains: Sequence[bool], unanswerable: Sequence[bool]) -> tuple[Estimate, Estimate]:
    """Strict reply as a classifier of unanswerable questions: precision (of the answers that
    abstained, the share that should have) and recall (of the unanswerable questions, the share
    abstained on).

    >>> p, r = strict_precision_recall([True, True, False, False], [True, False, True, False])
    >>> (p.value, r.value)
    (0.5, 0.5)
    """
    both = sum(a and u for a, u in zip(abstains, unanswerable, strict=True))
    return wilson(both, sum(abstains)), wilson(both, sum(unanswerable))


def paired_difference(a: Sequence[float], b: Sequence[float], resamples: int = RESAMPLES, seed: int = SEED) -> Estimate:
    """Mean of ``b - a`` over the same items, with the bootstrap percentile interval of the paired
    differences (items resampled together, so what both answerers got right cancels out).

    >>> e = paired_difference([0, 0, 1, 1], [1, 1, 1, 1])
    >>> (e.value, e.n)
    (0.5, 4)
    """
    diffs = [y - x for x, y in zip(a, b, strict=True)]
    e = bootstrap_ratio(diffs, resamples=resamples, seed=seed)
    return Estimate(e.value, e.low, e.high, e.n, "paired bootstrap")

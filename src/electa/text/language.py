"""Which language a text is written in (issue 14): py3langid, a numpy port of langid.py (Lui &
Baldwin, 2012: a naive Bayes model over byte n-grams; its model ships in the wheel, nothing is
downloaded), restricted to langid.py's own 97 languages (:data:`LANGID_97`, those of them its
model knows). Accuracy on XQuAD-R (``bench/multilingual.py``): 98.4-99.9% of
paragraphs and 99.3-100% of questions in en, de, es and zh.

A document is read once at ingest (its first :data:`READ_CHARS` characters) and its language
stored with its units; a text with no letters, or read with less than :data:`MIN_CONFIDENCE`,
gets ``""`` (analysed as :data:`electa.text.analysis.DEFAULT_LANGUAGE`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

import regex

IDENTIFIER = "py3langid-0.4.0/langid.py-97"
# langid.py's own languages (its README): py3langid 0.4.0 adds dialects and neighbours (Wu and
# Cantonese beside Chinese, Aragonese beside Spanish) that an analyser cannot tell apart.
LANGID_97 = """af am an ar as az be bg bn br bs ca cs cy da de dz el en eo es et eu fa fi fo fr ga gl gu he hi hr
    ht hu hy id is it ja jv ka kk km kn ko ku ky la lb lo lt lv mg mk ml mn mr ms mt nb ne nl nn no oc or pa pl ps pt
    qu ro ru rw se si sk sl sq sr sv sw ta te th tl tr ug uk ur vi vo wa xh zh zu""".split()
READ_CHARS = 4000
MIN_CONFIDENCE = 0.2
QUESTION_CONFIDENCE = 0.5
_LETTER = regex.compile(r"\p{L}")

_model: Any = None
_lock = threading.Lock()


def _identifier() -> Any:
    global _model
    if _model is None:
        with _lock:
            if _model is None:
                from py3langid.langid import MODEL_FILE, LanguageIdentifier

                model = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
                model.set_languages([code for code in LANGID_97 if code in model.labels])
                _model = model
    return _model


def warm() -> None:
    """Load the identifier now (a second or two): a question's first reading must not spend a
    leg's time budget on it."""
    _identifier()


def detect_parts(parts: Iterable[str]) -> str:
    """:func:`detect` over the first :data:`READ_CHARS` characters of ``parts`` (a document's
    title, then its text), joined by newlines."""
    taken, size = [], 0
    for part in parts:
        if size >= READ_CHARS:
            break
        taken.append(part)
        size += len(part) + 1
    return detect("\n".join(taken))


def detect_document(title: str, texts: list[str]) -> str:
    """A document's language: read from its title and text, or, when the two read as no
    language, from its text alone. A title is often a slug or a name in another language:
    "United_Methodist_Church" above "约翰" reads as nothing, and an embedder chain sent the
    unit to its English model, whose vector of it came in the dense top 10 of 178 of 300
    XQuAD-R Chinese questions.

    >>> detect_document("United_Methodist_Church", ["约翰"]), detect_parts(["United_Methodist_Church", "约翰"])
    ('zh', '')
    """
    return detect_parts([title, *texts]) or detect_parts(texts)


def detect(text: str, min_confidence: float = MIN_CONFIDENCE) -> str:
    """The ISO 639-1 code of ``text``'s language, or ``""`` when it cannot tell (read with
    less than ``min_confidence``).

    >>> detect("Refunds are issued within 14 days of purchase."), detect("退款将在购买后14天内发放。"), detect("42")
    ('en', 'zh', '')
    """
    text = text[:READ_CHARS]
    if not _LETTER.search(text):
        return ""
    lang, confidence = _identifier().classify(text)
    return str(lang) if confidence >= min_confidence else ""


def detect_question(text: str) -> str:
    """A question's language, only when read with :data:`QUESTION_CONFIDENCE`: a visitor's
    few words are often a bare topic that reads as anything ("cancel subscription" reads as
    Latin at 0.24, "mac os sierra" as Aragonese at 0.44), and a wrong reading would drop that
    language's stop words from the question, or answer in it.

    >>> detect_question("Wie setze ich mein Passwort zurück?"), detect_question("cancel subscription")
    ('de', '')
    """
    return detect(text, QUESTION_CONFIDENCE)


# Common characters written one way in Simplified Chinese and another in Traditional (each
# set holds one form of the same words: 这/這, 们/們, 码/碼, 请/請…), so that a text can be told
# as one or the other where py3langid reads both as "zh".
_SIMPLIFIED = frozenset("这个们来说时会为对发国过么没还点开问间关电进动学经与实现务户码请订单费货运买卖页设删认证帐号"
                        "机网线应该让从当题东车长门听见话语钱银报邮换达选择显错误载处图书无头两边样种总师帮办试统导执记")
_TRADITIONAL = frozenset("這個們來說説時會為爲對發國過麼沒還點開問間關電進動學經與實現務戶碼請訂單費貨運買賣頁設刪認證"
                         "帳號機網線應該讓從當題東車長門聽見話語錢銀報郵換達選擇顯錯誤載處圖書無頭兩邊樣種總師幫辦試統導執記")


def traditional_chinese(text: str) -> bool:
    """Whether ``text`` is written in Traditional Chinese characters rather than Simplified
    (more of its characters are the Traditional forms of common words than the Simplified).

    >>> traditional_chinese("我忘記了密碼怎麼辦？"), traditional_chinese("我忘记了密码怎么办？"), traditional_chinese("退款")
    (True, False, False)
    """
    traditional = sum(c in _TRADITIONAL for c in text)
    return traditional > 0 and traditional > sum(c in _SIMPLIFIED for c in text)


def language_name(code: str) -> str:
    """The English name of a language :func:`detect` may answer, or '' for none.

    >>> language_name("de"), language_name("zh"), language_name("")
    ('German', 'Chinese', '')
    """
    return NAMES.get(code, "")


NAMES = dict(pair.replace("_", " ").split(":") for pair in """af:Afrikaans am:Amharic an:Aragonese ar:Arabic as:Assamese
    az:Azerbaijani be:Belarusian bg:Bulgarian bn:Bengali br:Breton bs:Bosnian ca:Catalan cs:Czech cy:Welsh
    da:Danish de:German dz:Dzongkha el:Greek en:English eo:Esperanto es:Spanish et:Estonian eu:Basque fa:Persian
    fi:Finnish fo:Faroese fr:French ga:Irish gl:Galician gu:Gujarati he:Hebrew hi:Hindi hr:Croatian ht:Haitian_Creole
    hu:Hungarian hy:Armenian id:Indonesian is:Icelandic it:Italian ja:Japanese jv:Javanese ka:Georgian kk:Kazakh
    km:Khmer kn:Kannada ko:Korean ku:Kurdish ky:Kyrgyz la:Latin lb:Luxembourgish lo:Lao lt:Lithuanian lv:Latvian
    mg:Malagasy mk:Macedonian ml:Malayalam mn:Mongolian mr:Marathi ms:Malay mt:Maltese nb:Norwegian_Bokmål ne:Nepali
    nl:Dutch nn:Norwegian_Nynorsk no:Norwegian oc:Occitan or:Odia pa:Punjabi pl:Polish ps:Pashto pt:Portuguese
    qu:Quechua ro:Romanian ru:Russian rw:Kinyarwanda se:Northern_Sami si:Sinhala sk:Slovak sl:Slovenian sq:Albanian
    sr:Serbian sv:Swedish sw:Swahili ta:Tamil te:Telugu th:Thai tl:Tagalog tr:Turkish ug:Uyghur uk:Ukrainian ur:Urdu
    vi:Vietnamese vo:Volapük wa:Walloon xh:Xhosa zh:Chinese zu:Zulu""".split())

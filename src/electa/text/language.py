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


# Common characters written one way in Simplified Chinese and another in Traditional, as pairs
# (这這: Simplified, then Traditional; none whose Simplified form is Hong Kong's standard one, as
# 户 温 税), and Traditional characters alone: variants (説 爲 衞 閲 綫) and those whose Simplified
# form is also a Traditional character (後 for 后, 裡 for 里, 於 for 于). A text is told as one
# or the other where py3langid reads both as "zh".
_PAIRS = ("这這个個们們来來说說时時会會为為对對发發国國过過么麼没沒还還点點开開问問间間关關电電进進动動学學"
          "经經与與实實现現务務码碼请請订訂单單费費货貨运運买買卖賣页頁设設删刪认認证證帐帳账賬号號机機网網"
          "线線应應该該让讓从從当當题題东東车車长長门門听聽见見话話语語钱錢银銀报報邮郵换換达達选選择擇显顯错錯"
          "误誤载載处處图圖书書无無头頭两兩边邊样樣种種总總师師帮幫办辦试試统統导導执執记記吗嗎册冊联聯络絡隐隱"
          "权權湾灣远遠兰蘭华華马馬鸟鳥鱼魚龙龍钟鐘铁鐵阅閱闻聞阳陽阴陰陈陳陆陸际際队隊阶階难難双雙杂雜虽雖离離"
          "灵靈响響项項顺順须須预預领領频頻颜顏类類顾顧风風飞飛饭飯饮飲馆館验驗体體鲜鮮丽麗麦麥齐齊岁歲价價优優"
          "传傳众眾仅僅伤傷员員园園围圍块塊坏壞备備够夠复復宝寶宽寬寻尋层層岛島币幣带帶广廣库庫张張归歸态態恶惡"
          "战戰扫掃护護担擔拥擁损損据據旧舊条條极極构構标標档檔检檢欢歡气氣汇匯测測浏瀏览覽满滿灯燈热熱爱愛环環"
          "盘盤确確礼禮积積称稱稳穩简簡签簽纸紙级級纳納练練组組细細终終结結给給绝絕继繼续續维維编編缓緩罗羅"
          "职職脑腦节節获獲药藥补補装裝规規视視觉覺计計讨討议議讯訊许許论論访訪评評识識诉訴词詞译譯询詢详詳诚誠"
          "读讀调調谁誰谈談谢謝负負质質购購贴貼贵貴资資赛賽转轉轻輕输輸迟遲适適递遞释釋键鍵锁鎖闭閉险險随隨顶頂"
          "额額馈饋败敗数數亚亞钥鑰录錄变變尔爾则則击擊拟擬写寫区區储儲仓倉义義乐樂产產亲親农農决決况況减減"
          "刚剛创創剧劇势勢协協卫衛压壓历歷县縣参參团團场場坚堅声聲奖獎将將尽盡属屬废廢异異弃棄弹彈强強径徑扩擴"
          "携攜摄攝断斷术術杀殺枪槍柜櫃树樹梦夢楼樓横橫欧歐残殘毕畢毁毀沟溝洁潔浅淺润潤涨漲渐漸湿濕滚滾"
          "滤濾灭滅灾災烟煙烦煩烧燒状狀独獨献獻画畫疗療盖蓋监監矿礦础礎穷窮竞競笔筆纠糾红紅约約纪紀织織绑綁绕繞"
          "绘繪罚罰肤膚艺藝荣榮营營虚虛触觸讲講诊診课課谓謂贡貢财財责責贸貿贺賀赔賠赖賴赞贊趋趨践踐轨軌软軟轮輪"
          "轴軸较較辅輔辑輯辞辭迁遷违違连連逻邏遗遺针針钢鋼钮鈕铃鈴链鏈销銷锅鍋镇鎮闪閃闹鬧阵陣雾霧静靜韩韓饰飾"
          "驱驅驶駛骗騙鸡雞黄黃龄齡别別内內宁寧吕呂")
_SIMPLIFIED = frozenset(_PAIRS[0::2])
_TRADITIONAL = frozenset(_PAIRS[1::2]) | frozenset("説爲衞閲綫後裡裏於髮複臺幾準製係雲麵")


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

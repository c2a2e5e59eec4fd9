"""Stop words per language: words a question is not searched or scored by (the index keeps
every word). English is :data:`electa.text.STOPWORDS`; the others are the commonest function
words of each language (articles, pronouns, prepositions, conjunctions, auxiliaries, question
words), folded as :func:`electa.text.fold` folds them. A language with no list here has its
questions searched by every word, which BM25's idf weighs down anyway.
"""

from __future__ import annotations

from electa.text import STOPWORDS, fold

_LISTS = {
    "de": """aber alle allem allen aller alles als also am an ander andere anderem anderen anderer anderes auch auf aus
        bei beim bin bis bist da damit dann das dass dem den denn der des dessen deshalb die dies diese diesem diesen
        dieser dieses doch dort du durch ein eine einem einen einer eines er es etwas euch euer eure fur gegen gewesen
        hab habe haben hat hatte hatten hier hin hinter ich ihm ihn ihnen ihr ihre ihrem ihren ihrer ihres im in ins
        ist ja jede jedem jeden jeder jedes jetzt kann kein keine keinem keinen keiner konnen konnte mich mein meine
        meinem meinen meiner mit muss musste nach nicht nichts noch nun nur ob oder ohne sehr sein seine seinem seinen
        seiner sich sie sind so solche soll sollte sondern uber um und uns unser unsere unter vom von vor war waren
        warst was weil welche welchem welchen welcher welches wenn wer werde werden wie wieder will wir wird wo wollen
        wurde wurden zu zum zur zwar zwischen wann warum wieso weshalb wieviel viele vielen""",
    "es": """a al algo algunas algunos ante antes como con contra cual cuales cuando cuanto cuantos cuantas de del desde
        donde dos el ella ellas ello ellos en entre era eran es esa esas ese eso esos esta estaba estado estan estar
        este esto estos fue fueron ha habia han hasta hay la las le les lo los mas me mi mis mucho muy nada ni no nos
        nosotros o otra otras otro otros para pero poco por porque que quien quienes se sea ser si sido sin sobre son
        su sus tambien tanto te tiene tienen todo todos tu tus un una uno unos unas usted ustedes y ya yo cual
        cuales cuantos cuantas""",
    "fr": """a au aux avec ce ces cet cette dans de des du elle elles en est et etait etaient etre eu il ils je la le
        les leur leurs lui ma mais me meme mes moi mon ne nos notre nous on ou par pas pour qu que qui quoi sa se ses
        son sont sur ta te tes toi ton tu un une vos votre vous y comment combien quand pourquoi quel quelle quels
        quelles ont avait avaient sera fait peut""",
    "it": """a ad al alla alle allo agli ai anche che chi ci come con cosa cui da dal dalla dalle dei del della delle
        dello di e ed era erano essere gli ha hanno i il in io la le lei lo loro lui ma mi mio nei nel nella nelle
        non noi o per perche piu quale quali quando quanto quanti questa queste questo questi se si sia sono su sua
        sue suo suoi tra tu un una uno voi dove stato stata""",
    "pt": """a ao aos as com como da das de dela dele deles do dos e ela elas ele eles em entre era eram essa esse esta
        este eu foi foram ha isso isto ja lhe mais mas me meu minha muito na nas nao nem no nos o os ou para pela pelo
        por qual quais quando que quem se sem ser seu seus sua suas tambem te tem um uma umas uns voce voces onde
        quanto quantos quantas porque""",
    "nl": """aan al als ben bij dan dat de der deze die dit doch door een en er ge had heb hebben heeft het hier hij hoe
        hun ik in is ja je kan kon maar me men met mij mijn na naar niet niets nog nu of om omdat ons ook op over te
        tot u uit van veel voor was waren wat we wel werd wie wij wordt worden zal ze zei zich zij zijn zo zou waar
        wanneer waarom welke""",
}

STOPWORDS_BY_LANGUAGE: dict[str, frozenset[str]] = {
    "en": STOPWORDS, **{lang: frozenset(fold(w) for w in words.split()) for lang, words in _LISTS.items()}}


def stopwords(languages: tuple[str, ...]) -> frozenset[str]:
    """The stop words of any of ``languages`` (folded).

    >>> sorted(stopwords(("de",)) & {"der", "refund", "wie"})
    ['der', 'wie']
    """
    return _union(tuple(sorted(set(languages))))


def _union(languages: tuple[str, ...]) -> frozenset[str]:
    found = _cache.get(languages)
    if found is None:
        if len(_cache) > 1024:
            _cache.clear()
        found = _cache[languages] = frozenset().union(*(STOPWORDS_BY_LANGUAGE.get(lang, ()) for lang in languages))
    return found


_cache: dict[tuple[str, ...], frozenset[str]] = {}

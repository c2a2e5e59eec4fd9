"""Greetings, thanks and goodbyes skip retrieval (SPEC E1; reference/chat-widget-rag-pipeline.txt).

A message is small talk when it has at most four words, asks nothing (no question mark) and is
made only of known phrases in common languages plus a few fillers ("hi there", "thanks a
lot!", "Goedemorgen"). Anything longer, or with a question in it, takes the normal path.
"""

from __future__ import annotations

import re
from enum import StrEnum

from electa.text import fold


class SmallTalk(StrEnum):
    GREETING = "greeting"
    THANKS = "thanks"
    GOODBYE = "goodbye"


_PHRASES: dict[SmallTalk, tuple[str, ...]] = {
    SmallTalk.GREETING: (
        "hi", "hello", "hey", "hiya", "howdy", "good morning", "good afternoon", "good evening", "greetings",
        "hallo", "hoi", "goedemorgen", "goedemiddag", "goedenavond", "dag", "bonjour", "bonsoir", "salut",
        "hola", "buenos dias", "buenas tardes", "buenas noches", "buongiorno", "buonasera", "ciao", "guten morgen",
        "guten tag", "guten abend", "moin", "servus", "ola", "bom dia", "boa tarde", "boa noite", "hej", "namaste",
        "yo", "hiii",
    ),
    SmallTalk.THANKS: (
        "thanks", "thank you", "thx", "ty", "cheers", "much appreciated", "merci", "merci beaucoup", "danke",
        "danke schon", "vielen dank", "dank je", "dank je wel", "dankjewel", "dank u", "dank u wel", "bedankt",
        "gracias", "muchas gracias", "grazie", "grazie mille", "obrigado", "obrigada", "tack", "takk", "great thanks",
    ),
    SmallTalk.GOODBYE: (
        "bye", "goodbye", "bye bye", "see you", "see ya", "later", "good night", "tot ziens", "doei", "dag dag",
        "au revoir", "adios", "hasta luego", "arrivederci", "tschuss", "auf wiedersehen", "tchau", "ate logo",
    ),
}
_FILLERS = frozenset((
    "there", "all", "team", "everyone", "guys", "folks", "so", "much", "a", "lot", "very", "again", "and", "oh",
    "ok", "okay", "well",
))
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)


def _fold(text: str) -> list[str]:
    # Letters only (digits and "_" split), so "Hi!!" and "hi2u" are not read as one greeting word.
    return _WORD.findall(fold(text.replace("ß", "ss")))


def small_talk(message: str) -> SmallTalk | None:
    """The kind of small talk ``message`` is, or None when it needs the knowledge base.

    >>> small_talk("Hi!"), small_talk("thanks a lot"), small_talk("Goedemorgen")
    (<SmallTalk.GREETING: 'greeting'>, <SmallTalk.THANKS: 'thanks'>, <SmallTalk.GREETING: 'greeting'>)
    >>> small_talk("hi, what does E1042 mean?") is None
    True
    """
    if "?" in message:
        return None
    words = _fold(message)
    if not words or len(words) > 4:
        return None
    text = " " + " ".join(words) + " "
    found: SmallTalk | None = None
    # Longest phrases first, so "thank you" is consumed before "you" could be left over.
    for kind, phrase in sorted(((k, p) for k, ps in _PHRASES.items() for p in ps), key=lambda kp: -len(kp[1])):
        if f" {phrase} " in text:
            text = text.replace(f" {phrase} ", " ")
            found = found or kind
    rest = [w for w in text.split() if w not in _FILLERS]
    return found if found is not None and not rest else None


REPLIES = {
    SmallTalk.GREETING: "Hello! How can I help you today?",
    SmallTalk.THANKS: "You're welcome! Is there anything else I can help with?",
    SmallTalk.GOODBYE: "Goodbye! Come back any time.",
}

"""Query understanding before retrieval: follow-up rewrite (SPEC E3) and business name (E4).

Follow-ups. The gate leaves the first turn and self-contained questions alone (most turns take
this fast path). A message that leans on the previous turn — it opens with a connective ("and
for…", "what about…", "how about…") or is short and points back ("does it…", "that one") — is
made standalone. The deterministic rewrite (the fallback the chat-widget reference keeps when the
LLM is off, slow or silent) joins the previous question with the follow-up, connective dropped:
"How much is the Growth plan?" + "and for the annual plan?" -> "How much is the Growth plan? for
the annual plan". The rewrite is only a search query; the prompt keeps the visitor's words.

Business name. "What is the starting price?" names no business, and brand-heavy pages score
low for it; the search runs as "question — Business" when the agent's name yields a specific
business name (words like Agent, Assistant, Sales dropped; a generic name is never used), the
knowledge base mentions it, and the question does not already contain it.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from typing import Any

from electa.answer.prompt import Turn
from electa.text import content_tokens, tokens

_CONNECTIVES = ("and what about", "what about", "how about", "ok and", "okay and", "and", "also", "what if",
                "same for", "then")
_POINTERS = frozenset("it its that this those these they them one ones there same".split())
_ROLE_WORDS = frozenset("agent assistant bot chatbot sales support helpdesk helper ai virtual team service desk".split())
_GENERIC = frozenset("assistant agent bot chatbot helper support sales ai default".split())


def needs_rewrite(message: str, history: Sequence[Turn]) -> bool:
    """The gate: True only when there is a previous turn and the message leans on it."""
    if not history:
        return False
    text = " ".join(tokens(message))
    if any(text == c or text.startswith(c + " ") for c in _CONNECTIVES):
        return True
    words = tokens(message)
    content = content_tokens(message)
    return len(words) <= 8 and (bool(_POINTERS.intersection(words)) or len(content) <= 1)


def standalone_query(message: str, history: Sequence[Turn],
                     rewriter: Callable[[Sequence[Turn], str], str | None] | None = None) -> str:
    """The search query for ``message``: itself, or a standalone rewrite of it.

    ``rewriter`` (an LLM at temperature 0 with a hard timeout) is tried first; when it is
    missing, fails or returns nothing, the deterministic rewrite stands in.

    >>> standalone_query("and for the annual plan?", [Turn("How much is the Growth plan?", "$29/mo.")])
    'How much is the Growth plan? for the annual plan'
    >>> standalone_query("How do I export to CSV?", [Turn("Hi", "Hello!")])
    'How do I export to CSV?'
    """
    if not needs_rewrite(message, history):
        return message
    if rewriter is not None:
        try:
            rewritten = rewriter(history, message)
        except Exception:
            rewritten = None
        if rewritten and rewritten.strip():
            return rewritten.strip()
    rest = message.strip().rstrip("?!. ")
    lowered = rest.lower()
    for connective in _CONNECTIVES:
        if lowered == connective or lowered.startswith(connective + " "):
            rest = rest[len(connective):].strip(" ,")
            break
    return f"{history[-1].question.strip()} {rest}".strip()


def business_name(agent_name: str) -> str | None:
    """The business in an agent's name, or None when the name is generic.

    >>> business_name("Zepcruit Agent"), business_name("Assistant"), business_name("Tallyo Sales Bot")
    ('Zepcruit', None, 'Tallyo')
    """
    words = [w for w in re.findall(r"[\w&'-]+", agent_name) if w.lower() not in _ROLE_WORDS]
    name = " ".join(words).strip()
    if not name or name.lower() in _GENERIC:
        return None
    return name


def with_business_name(question: str, name: str | None, mentioned: Callable[[str], bool]) -> str:
    """``question — name`` when the name is specific, the knowledge mentions it and the
    question does not already contain it (chat-widget reference, card #687)."""
    if not name or name.lower() in question.lower() or not mentioned(name):
        return question
    return f"{question} — {name}"


REWRITE_INSTRUCTION = (
    "Rewrite the visitor's last message as one standalone search query, in the visitor's language, resolving "
    "pronouns and ellipsis from the conversation. Output only the query."
)


class LlmRewriter:
    """The E3 rewrite by an LLM: temperature 0 (the answerers decode greedily or at low
    temperature), a hard timeout, and a per-conversation cache. Returns None on timeout or error,
    so :func:`standalone_query` falls back to the deterministic rewrite and the stream never waits
    longer than ``timeout_s`` for it."""

    def __init__(self, answerer: Any, timeout_s: float = 2.0, max_entries: int = 10_000) -> None:
        self.answerer, self.timeout_s, self.max_entries = answerer, timeout_s, max_entries
        self._cache: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()

    def for_conversation(self, conversation: str) -> Callable[[Sequence[Turn], str], str | None]:
        def rewrite(history: Sequence[Turn], message: str) -> str | None:
            key = (conversation, message)
            with self._lock:
                if key in self._cache:
                    return self._cache[key]
            result = self._ask(history, message)
            if result:
                with self._lock:
                    if len(self._cache) >= self.max_entries:
                        self._cache.clear()
                    self._cache[key] = result
            return result

        return rewrite

    def _ask(self, history: Sequence[Turn], message: str) -> str | None:
        from electa.answer.prompt import Message, Prompt

        convo = "\n".join(f"Visitor: {t.question}\nAssistant: {t.answer}" for t in history[-3:])
        prompt = Prompt((Message("system", REWRITE_INSTRUCTION),
                         Message("user", f"{convo}\nVisitor: {message}\n\nStandalone query:")))
        out: list[str] = []

        def run() -> None:
            try:
                out.extend(self.answerer.stream(prompt, message))
            except Exception:
                out.clear()
                out.append("\x00")

        thread = threading.Thread(target=run, name="electa-rewrite", daemon=True)
        thread.start()
        thread.join(self.timeout_s)
        if thread.is_alive() or "\x00" in out:
            return None
        text = "".join(out).strip().strip('"').splitlines()
        return text[0].strip() if text and text[0].strip() else None

"""Answerers: the Protocol every LLM provider implements and the registry of built-ins; the
extractive default lives in :mod:`electa.answer.extractive` (SPEC G2).

Streaming is the basic operation: ``stream()`` yields text pieces; callers join them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol

from electa.answer.extractive import STRICT_REPLY, ExtractiveAnswerer
from electa.answer.prompt import Prompt
from electa.config import Settings
from electa.errors import ConfigError, unknown_name

__all__ = ["STRICT_REPLY", "Answerer", "ExtractiveAnswerer", "create_answerer"]


class Answerer(Protocol):
    """Writes an answer for a prompt.

    Contract: ``stream(prompt, question)`` yields pieces of text whose concatenation is the
    answer; numbers and zeros arrive as text ("$0/mo" stays "$0/mo"); it cites sources as
    ``[n]`` by their position in ``prompt.sources``; it may raise, and the caller then falls
    back to the extractive answerer and says so.
    """

    name: str

    def stream(self, prompt: Prompt, question: str) -> Iterator[str]: ...


def _openai(settings: Settings) -> Answerer:
    from electa.answer.openai_http import OpenAICompatibleAnswerer

    if not settings.llm_base_url or not settings.llm_model:
        raise ConfigError("the openai answerer needs ELECTA_LLM_BASE_URL (e.g. http://127.0.0.1:8000/v1) and "
                          "ELECTA_LLM_MODEL; ELECTA_LLM_API_KEY if the server wants one")
    return OpenAICompatibleAnswerer(settings.llm_base_url, settings.llm_model, settings.llm_api_key,
                                    stall_s=settings.llm_stall_s, deadline_s=settings.llm_deadline_s)


def _local(settings: Settings) -> Answerer:
    from electa.answer.local_llm import LocalGgufAnswerer

    return LocalGgufAnswerer.from_settings(settings)  # ELECTA_LOCAL_MODEL: smollm2, qwen2.5-coder-*, a .gguf path


_REGISTRY: dict[str, Callable[[Settings], Answerer]] = {
    "extractive": lambda settings: ExtractiveAnswerer(),
    "local": _local,
    "openai": _openai,
}


def create_answerer(name: str, settings: Settings | None = None) -> Answerer:
    """The answerer registered as ``name``: ``extractive``, ``local`` (a GGUF model, ELECTA_LOCAL_MODEL) or
    ``openai`` (any OpenAI-compatible server, configured by settings)."""
    try:
        factory = _REGISTRY[name]
    except KeyError:
        raise unknown_name("answerer", name, list(_REGISTRY)) from None
    return factory(settings or Settings())

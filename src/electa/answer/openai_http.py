"""An OpenAI-compatible chat-completions provider, streamed (SPEC G2, G3).

Works with any server that speaks ``POST {base_url}/chat/completions`` with ``stream: true``
(OpenAI, vLLM, llama.cpp's server, Ollama's OpenAI endpoint). It never blocks the answer: a
server that sends nothing for ``stall_s`` seconds, or runs past ``deadline_s``, raises, and the
engine falls back to the extractive answerer and says so in the ``done`` event.

Some servers send a number token as a JSON number (``"content": 20``) or a zero as ``0``; all
of them are text here, so "$0/mo" stays "$0/mo" (chat-widget reference, card #861).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

from electa.answer.prompt import Prompt
from electa.errors import ElectaError


class AnswererError(ElectaError):
    """The answer provider failed; the engine falls back to the extractive answerer."""


def delta_text(chunk: dict[str, object]) -> str | None:
    """The text of one streamed chunk, numbers and zeros included.

    >>> delta_text({"choices": [{"delta": {"content": 0}}]})
    '0'
    >>> delta_text({"choices": [{"delta": {"role": "assistant"}}]}) is None
    True
    """
    choices = chunk.get("choices")
    if not isinstance(choices, list) or not choices:
        return None
    delta = choices[0].get("delta") or choices[0].get("message") or {}
    content = delta.get("content") if isinstance(delta, dict) else None
    if content is None or isinstance(content, bool):
        return None
    return content if isinstance(content, str) else json.dumps(content)


def _finish_reason(chunk: object) -> object:
    choices = chunk.get("choices") if isinstance(chunk, dict) else None
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return choices[0].get("finish_reason")
    return None


class OpenAICompatibleAnswerer:
    """``OpenAICompatibleAnswerer("http://127.0.0.1:8000/v1", "my-model").stream(prompt, q)``."""

    name = "openai"

    def __init__(self, base_url: str, model: str, api_key: str | None = None, temperature: float = 0.2,
                 stall_s: float = 10.0, deadline_s: float = 60.0, max_tokens: int = 600) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model, self.api_key, self.temperature = model, api_key, temperature
        self.stall_s, self.deadline_s, self.max_tokens = stall_s, deadline_s, max_tokens

    def stream(self, prompt: Prompt, question: str) -> Iterator[str]:
        import httpx

        body = {"model": self.model, "stream": True, "temperature": self.temperature, "max_tokens": self.max_tokens,
                "messages": [{"role": m.role, "content": m.content} for m in prompt.messages]}
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        start = time.monotonic()
        timeout = httpx.Timeout(connect=5.0, read=self.stall_s, write=5.0, pool=5.0)
        try:
            with httpx.Client(timeout=timeout) as client, client.stream("POST", self.url, json=body,
                                                                         headers=headers) as response:
                if response.status_code != 200:
                    raise AnswererError(f"{self.url} answered HTTP {response.status_code}: "
                                        f"{response.read().decode(errors='replace')[:200]}")
                finished = False
                for line in response.iter_lines():
                    if time.monotonic() - start > self.deadline_s:
                        raise AnswererError(f"no complete answer within {self.deadline_s:.0f} s")
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        return
                    try:
                        chunk = json.loads(data)
                    except json.JSONDecodeError as exc:
                        raise AnswererError(f"malformed stream chunk: {data[:80]!r}") from exc
                    piece = delta_text(chunk) if isinstance(chunk, dict) else None
                    if piece:
                        yield piece
                    finished = finished or _finish_reason(chunk) is not None
                # A stream cut short (the server died, a proxy closed it) is no answer, however
                # plausible its first half reads: only [DONE] or a finish_reason ends one.
                if not finished:
                    raise AnswererError(f"{self.url} closed the stream before the answer was complete")
        except httpx.TimeoutException as exc:
            raise AnswererError(f"{self.url} sent nothing for {self.stall_s:.0f} s") from exc
        except httpx.HTTPError as exc:
            raise AnswererError(f"{self.url} failed: {exc}") from exc

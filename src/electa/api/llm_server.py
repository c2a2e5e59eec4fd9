"""``electa serve-llm``: a local GGUF model behind an OpenAI-compatible endpoint.

One loaded model serves every Electa worker that points ``ELECTA_ANSWERER=openai`` at it
(``ELECTA_LLM_BASE_URL=http://127.0.0.1:8766/v1``), instead of each worker loading its own copy;
and the OpenAI-compatible answerer is tested against a real model through it. It speaks the
part of the chat-completions protocol Electa and common clients use:

- ``GET /v1/models``: the one model, by name.
- ``POST /v1/chat/completions`` with ``messages`` (roles ``system``, ``user``, ``assistant``),
  ``max_tokens`` (capped by ``--max-tokens``) and ``stream``: streamed as
  ``chat.completion.chunk`` events ending with ``data: [DONE]``, or one ``chat.completion``.
  Decoding is greedy whatever ``temperature`` says (the local answerer's contract).

Generations run one at a time (two CPU cores hold one well); a request waits for the one before
it, and for a generation a client gave up on to actually stop (it can still be reading its
prompt), up to ``queue_timeout_s``, then gets 503 with ``Retry-After``. A request whose prompt,
through the model's chat template, plus the tokens it may write exceeds ``max_context_tokens``
(``--max-prompt-tokens``) gets 413 before it queues, as does one whose messages hold more than
``max_chars`` characters, or whose body is larger than such messages could be. With ``api_key``
set, requests must send ``Authorization: Bearer <key>``; :func:`check_exposure` refuses to serve
beyond the loopback interface without one.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any, Literal

from pydantic import BaseModel, Field

from electa.answer.local_llm import LocalGgufAnswerer
from electa.answer.openai_http import AnswererError
from electa.answer.prompt import Message, Prompt
from electa.errors import ConfigError

MAX_PROMPT_TOKENS = 4096
MAX_CHARS = 200_000
QUEUE_TIMEOUT_S = 120.0
RETRY_AFTER_S = 10
# A body holding MAX_CHARS characters of messages is at most 6 bytes a character (JSON's \uXXXX),
# plus the rest of the request.
_BODY_SLACK = 64 * 1024


def check_exposure(host: str, api_key: str | None) -> None:
    """Refuse to serve on an address other machines can reach without an API key: anyone who can
    reach it could keep the model busy.

    >>> check_exposure("127.0.0.1", None); check_exposure("0.0.0.0", "k")
    >>> check_exposure("0.0.0.0", None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    electa.errors.ConfigError: refusing to serve the model on --host 0.0.0.0 without an API key...
    """
    if api_key or _loopback(host):
        return
    raise ConfigError(f"refusing to serve the model on --host {host} without an API key: anyone who can reach it "
                      "could use it. Set ELECTA_LLM_API_KEY (clients then send Authorization: Bearer <key>), "
                      "or serve on --host 127.0.0.1")


def _loopback(host: str) -> bool:
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


class _BodyCap:
    """ASGI middleware: a request body over ``limit`` bytes gets 413 before anything reads it
    (a declared Content-Length at once; a chunked body as soon as it passes the limit)."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or ()).get(b"content-length")
        if declared is not None:
            if not declared.isdigit() or int(declared) > self.limit:
                await self._refuse(send)
                return
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size, more = 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client left
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.limit:
                await self._refuse(send)
                return
            more = message.get("more_body", False)
        body, replayed = b"".join(chunks), False

        async def replay() -> Any:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    async def _refuse(self, send: Any) -> None:
        detail = json.dumps({"detail": f"request body over {self.limit} bytes"}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(detail)).encode())]})
        await send({"type": "http.response.body", "body": detail})


class ChatMessage(BaseModel):
    role: Literal["system", "user", "assistant"]
    content: str = Field(max_length=200_000)


class ChatRequest(BaseModel):
    model: str = ""
    messages: list[ChatMessage] = Field(min_length=1, max_length=200)
    stream: bool = False
    max_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = None


def create_llm_app(answerer: LocalGgufAnswerer, model_name: str, api_key: str | None = None,
                   max_tokens: int = 600, *, max_context_tokens: int = MAX_PROMPT_TOKENS, max_chars: int = MAX_CHARS,
                   queue_timeout_s: float = QUEUE_TIMEOUT_S) -> Any:
    """The app serving ``answerer``'s model as ``model_name``: answers of at most ``max_tokens``;
    prompt + answer of at most ``max_context_tokens`` tokens and messages of at most
    ``max_chars`` characters (else 413); a request waits at most ``queue_timeout_s`` for its
    turn (else 503)."""
    from fastapi import Depends, FastAPI, Header, HTTPException
    from fastapi.responses import StreamingResponse

    app = FastAPI(title="Electa local LLM (OpenAI-compatible)", version="1")
    app.add_middleware(_BodyCap, limit=6 * max_chars + _BODY_SLACK)
    lock = threading.Lock()

    class _Turn(StreamingResponse):
        """A stream that holds the generation lock until it is sent or its client leaves."""

        def __init__(self, content: Iterator[str], release: Callable[[], None]) -> None:
            super().__init__(content, media_type="text/event-stream")
            self.release = release

        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            try:
                await super().__call__(scope, receive, send)
            finally:
                self.release()

    def authorised(authorization: str | None = Header(default=None)) -> None:
        if api_key and not hmac.compare_digest((authorization or "").encode(), f"Bearer {api_key}".encode()):
            raise HTTPException(401, "send Authorization: Bearer <the key given to serve-llm>")

    def admit(req: ChatRequest) -> tuple[Prompt, int]:
        """The request's prompt and answer cap, if it fits (else 413)."""
        chars = sum(len(m.content) for m in req.messages)
        if chars > max_chars:
            raise HTTPException(413, f"the messages hold {chars} characters; this server takes at most {max_chars}")
        prompt = Prompt(tuple(Message(m.role, m.content) for m in req.messages))
        cap = min(req.max_tokens or max_tokens, max_tokens)
        try:
            n = answerer.prompt_tokens(prompt)
        except Exception as exc:  # a chat template that refuses these roles or this order
            raise HTTPException(400, f"the model's chat template cannot read these messages ({type(exc).__name__})") from exc
        if n + cap > max_context_tokens:
            raise HTTPException(413, f"the prompt is {n} tokens and the answer may take {cap} more: over this server's "
                                     f"limit of {max_context_tokens} tokens (--max-prompt-tokens)")
        return prompt, cap

    def take_turn() -> Callable[[], None]:
        """Wait for the lock and for the model to be idle (a generation its reader gave up on
        may still be running); returns the release, or raises 503 after ``queue_timeout_s``."""
        deadline = time.monotonic() + queue_timeout_s
        busy = HTTPException(503, f"busy, retry: another answer held the model for {queue_timeout_s:g} s",
                             headers={"Retry-After": str(RETRY_AFTER_S)})
        if not lock.acquire(timeout=queue_timeout_s):
            raise busy
        if not answerer.wait_idle(max(0.0, deadline - time.monotonic())):
            lock.release()
            raise busy
        once = threading.Lock()

        def release() -> None:
            if once.acquire(blocking=False):
                lock.release()

        return release

    def pieces(prompt: Prompt, cap: int) -> Iterator[str]:
        yield from answerer.with_max_new_tokens(cap).stream(prompt, prompt.messages[-1].content)

    @app.get("/v1/models", dependencies=[Depends(authorised)])
    def models() -> dict[str, object]:
        return {"object": "list", "data": [{"id": model_name, "object": "model", "owned_by": "local"}]}

    @app.post("/v1/chat/completions", dependencies=[Depends(authorised)], response_model=None)
    def chat(req: ChatRequest) -> Any:
        ident, created = f"chatcmpl-{uuid.uuid4().hex[:24]}", int(time.time())
        prompt, cap = admit(req)
        release = take_turn()
        if not req.stream:
            try:
                text = "".join(pieces(prompt, cap))
            except AnswererError as exc:
                raise HTTPException(503, f"the local model failed: {exc}") from exc
            finally:
                release()
            return {"id": ident, "object": "chat.completion", "created": created, "model": model_name,
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}

        def events() -> Iterator[str]:
            def chunk(delta: dict[str, str], finish: str | None = None) -> str:
                body = {"id": ident, "object": "chat.completion.chunk", "created": created, "model": model_name,
                        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
                return f"data: {json.dumps(body)}\n\n"

            yield chunk({"role": "assistant"})
            try:
                for piece in pieces(prompt, cap):
                    yield chunk({"content": piece})
            except AnswererError:
                # Headers are sent: end the stream without [DONE], which a client reads as a
                # failed answer (Electa's answerer then falls back to the extractive one).
                return
            yield chunk({}, "stop")
            yield "data: [DONE]\n\n"

        try:
            return _Turn(events(), release)
        except BaseException:
            release()
            raise

    return app

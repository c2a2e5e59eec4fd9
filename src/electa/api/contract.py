"""The HTTP contract beyond the routes: error bodies and the status codes each route documents,
the SSE frames and their schema, strict JSON numbers, leg weights, upload names, and ``Allow``
on every 405. Kept apart from :mod:`electa.api.app` so the routes stay readable."""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Iterator
from typing import Annotated, Any
from urllib.parse import urlsplit, urlunsplit

from fastapi.responses import StreamingResponse
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from electa.answer.pipeline import new_incident
from electa.ingest.loaders import LOADERS
from electa.types import AnswerEvent

log = logging.getLogger("electa.api")


class ErrorOut(BaseModel):
    """Every 4xx and 5xx body: ``detail`` says what was wrong (a list of field errors for a
    malformed body); a 500 names an ``incident`` to quote, its details are in the server log."""

    detail: str | list[Any]
    incident: str | None = None


_WHY = {400: "The body could not be parsed at all (not UTF-8, or nested too deeply).",
        401: "No usable API key or visitor token.", 403: "The credential's scope or organisation does not allow this.",
        404: "No such source, organisation or key.", 409: "The same work is already running: wait for it.",
        413: "The upload is over the size limit.",
        422: "The request is malformed or names something invalid (`detail` says what).",
        429: "Too many requests; retry after `Retry-After` seconds."}


def errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The documented error responses of a route (``responses=`` on its decorator)."""
    return {code: {"model": ErrorOut, "description": _WHY[code]} for code in codes}


def json_errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The same for a route whose success is not JSON (FastAPI would file ``model`` under the
    route's own media type, claiming a 401 comes as ``text/event-stream``)."""
    ref = {"schema": {"$ref": "#/components/schemas/ErrorOut"}}
    return {code: {"description": _WHY[code], "content": {"application/json": ref}} for code in codes}


AUTHED = errors(400, 401, 403, 422, 429)  # every route behind a key: no key, wrong scope, bad input, rate limit
# One SSE event as OpenAPI 3.2's `itemSchema` describes it (the event names of the contract).
SSE_EVENT = {"type": "object", "required": ["event", "data"], "properties": {
    "event": {"type": "string", "enum": ["token", "reset", "citations", "done", "error"]},
    "data": {"type": "string", "contentMediaType": "application/json"}}}
# The whole stream (OpenAPI 3.2: `schema` of a sequential media type covers it): at least one event.
SSE_STREAM = {"type": "array", "items": SSE_EVENT, "minItems": 1}


def _json_integer(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("Input should be a valid integer")
    return value


# An integer as JSON Schema has it: 11 and 11.0 are integers, "11" and true are not (the request
# models are strict, which would refuse 11.0; lax, they would take "11" and true).
JsonInt = Annotated[int, BeforeValidator(_json_integer), Field(strict=False)]


class EventStreamResponse(StreamingResponse):
    media_type = "text/event-stream"


class LegWeights(BaseModel):
    """Per-leg weights of the weighted RRF: each leg by name, a finite number >= 0 (0 mutes the
    leg); a leg left out keeps its configured weight."""

    model_config = ConfigDict(extra="forbid", strict=True)
    fulltext: float | None = Field(None, ge=0, allow_inf_nan=False)
    dense: float | None = Field(None, ge=0, allow_inf_nan=False)
    qa: float | None = Field(None, ge=0, allow_inf_nan=False)
    sparse: float | None = Field(None, ge=0, allow_inf_nan=False)
    graph: float | None = Field(None, ge=0, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _known_legs(cls, data: Any) -> Any:
        unknown = [k for k in data if k not in cls.model_fields] if isinstance(data, dict) else []
        if unknown:
            raise ValueError(f"unknown leg {unknown[0]!r}; valid legs: {', '.join(cls.model_fields)}")
        return data

    def as_dict(self) -> dict[str, float]:
        return {leg: w for leg, w in self.model_dump().items() if w is not None}


# A name the loaders can read: one of their extensions, in any case (spelled as character classes,
# since JSON Schema's regex dialect has no (?i)).
UPLOAD_NAME = r"[^/]\.(" + "|".join(sorted("".join(f"[{c.lower()}{c.upper()}]" for c in ext.lstrip("."))
                                             for ext in LOADERS)) + ")$"


class AllowEveryMethod:
    """On a 405, ``Allow`` names every method the path supports (RFC 9110 §15.5.6). Starlette
    names only those of the first route it tried, and each method of a path is its own route."""

    def __init__(self, app: ASGIApp, routes: list[BaseRoute]) -> None:
        self.app, self.routes = app, routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_allow(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] == 405:
                methods = sorted({m for r in self.routes if r.matches(scope)[0] is not Match.NONE
                                  for m in getattr(r, "methods", None) or ()})
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"allow"]
                message = {**message, "headers": [*headers, (b"allow", ", ".join(methods).encode())]}
            await send(message)

        await self.app(scope, receive, send_allow)


def page_address(url: str | None) -> str | None:
    """The page a visitor is on, as the page boost and the prompt read it: an http(s) address
    without its query and fragment. Those can carry a reset token, an e-mail address or text
    written to steer the assistant (a crafted link to the real site would put it in the prompt).
    A help centre whose pages differ by their query alone (``?article=KB1``) is boosted by none of
    them: the price of that.

    >>> page_address("https://Help.acme.com/billing/refunds?utm=x&q=Ignore+your+rules#top")
    'https://help.acme.com/billing/refunds'
    >>> page_address("http://user:pw@[::1]:8080/x"), page_address("https://acme.com")
    ('http://[::1]:8080/x', 'https://acme.com')
    >>> page_address("javascript:alert(1)")
    Traceback (most recent call last):
    ...
    ValueError: page_url must be an http(s) address (https://host/path), got 'javascript:alert(1)'
    """
    if url is None or url == "":
        return None
    parts = urlsplit(url.strip())
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname or len(url) > 2000:
        shown = url if len(url) <= 80 else url[:77] + "..."
        raise ValueError(f"page_url must be an http(s) address (https://host/path), got {shown!r}")
    host = parts.netloc.rsplit("@", 1)[-1].lower()  # (no user or password; an IPv6 host keeps its brackets)
    return urlunsplit((parts.scheme.lower(), host, parts.path, "", ""))


PageUrl = Annotated[str | None, AfterValidator(page_address)]


def json_safe(error: Any) -> dict[str, Any]:
    """One validation error as strict JSON: where, what type, the message; the input only if it is JSON."""
    out: dict[str, Any] = {k: error[k] for k in ("type", "loc", "msg") if k in error}
    try:
        json.dumps(error.get("input"), allow_nan=False)
        out["input"] = error.get("input")
    except (TypeError, ValueError):
        pass
    return out


def sse_frames(first: AnswerEvent, rest: Iterator[AnswerEvent]) -> Iterator[bytes]:
    """Events as SSE frames. A failure mid-stream ends it with an ``error`` event that carries a
    fixed description and an incident id; the exception goes to the server log, never to the client."""
    try:
        for event in itertools.chain([first], rest):
            yield f"event: {event.kind}\ndata: {json.dumps(event.data, ensure_ascii=False, default=str)}\n\n".encode()
    except Exception:
        incident = new_incident()
        log.exception("ask stream failed (incident %s)", incident)
        data = json.dumps({"error": "the answer could not be completed", "incident": incident})
        yield f"event: error\ndata: {data}\n\n".encode()

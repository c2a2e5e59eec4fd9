"""Cross-origin access for the routes a page on another site calls: the chat widget (issue 13).

The widget runs in the host site's page and calls ``POST /v1/ask`` (and ``/v1/search``,
``/v1/feedback``) on Electa's origin with a search key or visitor token in ``Authorization``. A
browser sends such a request only after a preflight (``OPTIONS``) that this origin answers
with CORS headers (Fetch standard, "CORS protocol"). Only these routes' POSTs are offered, and
only without credentials mode: the browser never attaches a cookie or an ambient credential,
so a page can do nothing with them that it could not do with the key from a server.
``Settings.widget_origins`` narrows the pages allowed ("*" by default): it keeps other sites'
pages from spending a key's rate limit from their visitors' browsers (a server holding the
public key is held by the per-client limits instead).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from electa.errors import ConfigError

BROWSER_ROUTES = frozenset({"/v1/ask", "/v1/search", "/v1/feedback"})
PREFLIGHT_MAX_AGE_S = 600
DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_of(text: str) -> str | None:
    """``scheme://host[:port]`` as a browser writes it in ``Origin`` (lower case, no default
    port), or None for what is not an http(s) origin.

    >>> origin_of("HTTPS://Acme.com:443/"), origin_of("http://localhost:8080"), origin_of("acme.com")
    ('https://acme.com', 'http://localhost:8080', None)
    """
    try:
        parts = urlsplit(text.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname or parts.path not in ("", "/") or parts.query or parts.fragment:
        return None
    return f"{scheme}://{parts.hostname}" + (f":{port}" if port and port != DEFAULT_PORTS[scheme] else "")


def allowed_origins(setting: str) -> frozenset[str] | None:
    """``None`` for any origin ("*"), else the origins listed (comma-separated). An entry that
    is not an http(s) origin raises :class:`ConfigError` naming it: silently matching nothing,
    it would lock out the very site it was written for.

    >>> sorted(allowed_origins("https://Acme.com, https://help.acme.com/") or ())
    ['https://acme.com', 'https://help.acme.com']
    >>> allowed_origins(" * ") is None
    True
    """
    listed = [o.strip() for o in setting.split(",") if o.strip()]
    if "*" in listed:
        return None
    out = set()
    for entry in listed:
        origin = origin_of(entry)
        if origin is None:
            raise ConfigError(f"ELECTA_WIDGET_ORIGINS: {entry!r} is not an origin; write scheme://host[:port],"
                              " e.g. https://help.acme.com, or * for any page")
        out.add(origin)
    return frozenset(out)


class BrowserCors:
    """CORS headers on :data:`BROWSER_ROUTES` for the allowed origins, and their preflights.
    ``on_error`` makes the response of an exception the app let through: the server's own 500
    is made outside this middleware, without these headers, so the page could not read it."""

    def __init__(self, app: ASGIApp, origins: frozenset[str] | None,
                 on_error: Callable[[Any, Exception], Response] | None = None) -> None:
        self.app, self.origins, self.on_error = app, origins, on_error

    def _allow(self, origin: str) -> list[tuple[bytes, bytes]] | None:
        if self.origins is not None and origin_of(origin) not in self.origins:
            return None
        value = "*" if self.origins is None else origin
        return [(b"access-control-allow-origin", value.encode("latin-1"))]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] not in BROWSER_ROUTES:
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v.decode("latin-1") for k, v in scope["headers"]}
        origin = headers.get(b"origin")
        # An answer that depends on Origin says so, whichever origin (or none) asked.
        vary = [] if self.origins is None else [(b"vary", b"Origin")]
        if origin is None:  # not a cross-origin browser request
            await self.app(scope, receive, self._with(send, vary))
            return
        allow = self._allow(origin)
        if scope["method"] == "OPTIONS" and b"access-control-request-method" in headers:
            if allow is None or headers[b"access-control-request-method"].upper() != "POST":
                refused = PlainTextResponse(f"{origin} may not call {scope['path']} from a browser (POST only; the"
                                            " origins allowed are set by ELECTA_WIDGET_ORIGINS)", status_code=403)
                refused.raw_headers.extend(vary)
                await refused(scope, receive, send)
                return
            preflight = PlainTextResponse("", status_code=204)
            preflight.raw_headers.extend([*allow, *vary, (b"access-control-allow-methods", b"POST"),
                                          (b"access-control-allow-headers", b"authorization, content-type"),
                                          (b"access-control-max-age", str(PREFLIGHT_MAX_AGE_S).encode())])
            await preflight(scope, receive, send)
            return
        if allow is None or scope["method"] != "POST":  # the browser withholds the response from the page
            await self.app(scope, receive, self._with(send, vary))
            return
        # The page reads how long to wait after a 429 (Retry-After is not a safelisted header).
        extra = [*allow, *vary, (b"access-control-expose-headers", b"Retry-After")]
        started = False
        sender = self._with(send, extra)

        async def tracking(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await sender(message)

        try:
            await self.app(scope, receive, tracking)
        except Exception as exc:
            if started or self.on_error is None:
                raise
            await self.on_error(None, exc)(scope, receive, sender)

    @staticmethod
    def _with(send: Send, extra: list[tuple[bytes, bytes]]) -> Send:
        if not extra:
            return send

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        return sending

"""Cross-origin access for the routes a page on another site calls: the chat widget (issue 13).

The widget runs in the host site's page and calls ``POST /v1/ask`` (and ``/v1/search``,
``/v1/feedback``) on Electa's origin with a search key or visitor token in ``Authorization``. A
browser sends such a request only after a preflight (``OPTIONS``) that this origin answers
with CORS headers (Fetch standard, "CORS protocol"). Only these routes are offered, and only
without credentials mode: the browser never attaches a cookie or an ambient credential, so a
page can do nothing with them that it could not do with the key from a server.
``Settings.widget_origins`` narrows the pages allowed ("*" by default).
"""

from __future__ import annotations

from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

BROWSER_ROUTES = frozenset({"/v1/ask", "/v1/search", "/v1/feedback"})
PREFLIGHT_MAX_AGE_S = 600


def allowed_origins(setting: str) -> frozenset[str] | None:
    """``None`` for any origin ("*"), else the origins listed (comma-separated, without a trailing
    slash: an origin is scheme://host[:port]).

    >>> sorted(allowed_origins("https://acme.com, https://help.acme.com/") or ())
    ['https://acme.com', 'https://help.acme.com']
    >>> allowed_origins(" * ") is None
    True
    """
    listed = {o.strip().rstrip("/") for o in setting.split(",") if o.strip()}
    return None if "*" in listed else frozenset(listed)


class BrowserCors:
    """CORS headers on :data:`BROWSER_ROUTES` for the allowed origins, and their preflights."""

    def __init__(self, app: ASGIApp, origins: frozenset[str] | None) -> None:
        self.app, self.origins = app, origins

    def _allow(self, origin: str) -> list[tuple[bytes, bytes]] | None:
        if self.origins is not None and origin not in self.origins:
            return None
        # "*" when every origin is allowed (a cache may then share one response); else the
        # origin itself, and Vary so that no cache serves one origin's answer to another.
        value = "*" if self.origins is None else origin
        return [(b"access-control-allow-origin", value.encode()), (b"vary", b"Origin")]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] not in BROWSER_ROUTES:
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v.decode("latin-1") for k, v in scope["headers"]}
        origin = headers.get(b"origin")
        if origin is None:  # not a cross-origin browser request
            await self.app(scope, receive, send)
            return
        allow = self._allow(origin)
        if scope["method"] == "OPTIONS" and b"access-control-request-method" in headers:
            if allow is None:
                refused = PlainTextResponse(f"{origin} may not call this server from a browser: add it to"
                                            " ELECTA_WIDGET_ORIGINS", status_code=403)
                await refused(scope, receive, send)
                return
            preflight = PlainTextResponse("", status_code=204)
            preflight.raw_headers.extend([*allow, (b"access-control-allow-methods", b"POST"),
                                          (b"access-control-allow-headers", b"authorization, content-type"),
                                          (b"access-control-max-age", str(PREFLIGHT_MAX_AGE_S).encode())])
            await preflight(scope, receive, send)
            return
        if allow is None or scope["method"] != "POST":  # the browser withholds the response from the page
            await self.app(scope, receive, send)
            return

        async def with_cors(message: Message) -> None:
            if message["type"] == "http.response.start":
                # The page reads how long to wait after a 429 (Retry-After is not a safelisted header).
                message = {**message, "headers": [*message.get("headers", []), *allow,
                                                  (b"access-control-expose-headers", b"Retry-After")]}
            await send(message)

        await self.app(scope, receive, with_cors)

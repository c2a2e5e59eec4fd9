"""The pages `electa serve` shows people (issue 13): static files of the package, under ``/ui/``.

No build step and no toolchain at run time: the pages are plain HTML, CSS and JavaScript in
``electa/web``, read once when the app is made. Each is served with a content security policy
that allows only this origin's scripts, styles and API (no inline script, no other host, no
framing), so a hostile page title that slipped past the page's own escaping still could not run.
Each carries an ETag, so a page that embeds the widget revalidates it instead of fetching it.
"""

from __future__ import annotations

import hashlib
import html
from importlib.resources import files

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response

HTML, JS, CSS = "text/html; charset=utf-8", "text/javascript; charset=utf-8", "text/css; charset=utf-8"
# Name in the URL -> (file in electa/web, content type). Only these are served: a name is never
# joined to a path, so nothing else of the package or the disk can be asked for.
PAGES = {"search": ("search.html", HTML), "search.js": ("search.js", JS), "ui.css": ("ui.css", CSS),
         "admin": ("admin.html", HTML), "admin.js": ("admin.js", JS), "admin.css": ("admin.css", CSS),
         "common.js": ("common.js", JS), "widget.js": ("widget.js", JS)}
# The sample help-center page, served by `electa demo --serve` alone: it carries that server's
# search key, so that no address (nor a browser's command line) needs to.
DEMO = {"demo": ("demo.html", HTML), "demo.js": ("demo.js", JS), "demo.css": ("demo.css", CSS)}
DEMO_KEY_SLOT = b'<meta name="electa-demo-key" content="">'
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
# The widget's script is loaded by other sites' pages: any of them may fetch it (a page with
# Cross-Origin-Embedder-Policy needs the resource policy to say so).
SHARED = {"widget.js"}
HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self';"
                               " img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def add_pages(app: FastAPI, demo_key: str | None = None) -> None:
    """``GET /ui/search`` (the search page), ``/ui/admin`` (the admin console), ``/ui/widget.js``
    (the chat widget, for any site) and their assets; with ``demo_key``, ``/ui/demo`` (a sample
    help-center page with the widget, asking with that key). ``GET /ui`` goes to the search page."""
    folder = files("electa") / "web"
    served = {**PAGES, **(DEMO if demo_key else {})}
    bodies = {name: (folder.joinpath(file).read_bytes(), kind) for name, (file, kind) in served.items()}
    if demo_key:
        page, kind = bodies["demo"]
        slot = f'<meta name="electa-demo-key" content="{html.escape(demo_key, quote=True)}">'.encode()
        bodies["demo"] = (page.replace(DEMO_KEY_SLOT, slot), kind)
    tags = {name: '"' + hashlib.sha256(body).hexdigest()[:20] + '"' for name, (body, _) in bodies.items()}
    listed = ", ".join(f"/ui/{n}" for n in served if "." not in n)

    @app.api_route("/ui", methods=["GET", "HEAD"], include_in_schema=False)
    def ui_root() -> Response:
        return RedirectResponse("/ui/search", status_code=307)

    @app.api_route("/ui/{name}", methods=["GET", "HEAD"], include_in_schema=False)
    def ui_page(name: str, request: Request) -> Response:
        found = bodies.get(name)
        if found is None:
            return JSONResponse({"detail": f"no page {name!r}; the pages are {listed}"}, status_code=404)
        if name in DEMO and request.url.hostname not in LOOPBACK:
            # The page holds a key: only for this machine's own browser (a name that resolves
            # here by DNS rebinding is another site).
            return JSONResponse({"detail": "the demo page is served to 127.0.0.1 and localhost only"}, status_code=403)
        body, kind = found
        headers = {**HEADERS, "ETag": tags[name],
                   **({"Cross-Origin-Resource-Policy": "cross-origin", "Access-Control-Allow-Origin": "*"}
                      if name in SHARED else {})}
        if tags[name] in {t.strip() for t in request.headers.get("if-none-match", "").split(",")}:
            return Response(status_code=304, headers=headers)
        return Response(body, media_type=kind, headers=headers)

"""The pages `electa serve` shows people (issue 13): static files of the package, under ``/ui/``.

No build step and no toolchain at run time: the pages are plain HTML, CSS and JavaScript in
``electa/web``, read once when the app is made. Each is served with a content security policy
that allows only this origin's scripts, styles and API (no inline script, no other host, no
framing), so a hostile page title that slipped past the page's own escaping still could not run.
"""

from __future__ import annotations

from importlib.resources import files

from fastapi import FastAPI
from fastapi.responses import JSONResponse, RedirectResponse, Response

# Name in the URL -> (file in electa/web, content type). Only these are served: a name is never
# joined to a path, so nothing else of the package or the disk can be asked for.
HTML, JS, CSS = "text/html; charset=utf-8", "text/javascript; charset=utf-8", "text/css; charset=utf-8"
PAGES = {"search": ("search.html", HTML), "search.js": ("search.js", JS), "ui.css": ("ui.css", CSS),
         "demo": ("demo.html", HTML), "demo.js": ("demo.js", JS), "demo.css": ("demo.css", CSS),
         "widget.js": ("widget.js", JS), "admin": ("admin.html", HTML), "admin.js": ("admin.js", JS),
         "admin.css": ("admin.css", CSS)}
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


def add_pages(app: FastAPI) -> None:
    """``GET /ui/search`` (the search page), ``/ui/admin`` (the admin console), ``/ui/demo`` (a sample help-center page with the
    chat widget), ``/ui/widget.js`` (the widget, for any site) and their assets; ``GET /ui``
    goes to the search page."""
    folder = files("electa") / "web"
    bodies = {name: (folder.joinpath(file).read_bytes(), kind) for name, (file, kind) in PAGES.items()}

    @app.api_route("/ui", methods=["GET", "HEAD"], include_in_schema=False)
    def ui_root() -> Response:
        return RedirectResponse("/ui/search", status_code=307)

    @app.api_route("/ui/{name}", methods=["GET", "HEAD"], include_in_schema=False)
    def ui_page(name: str) -> Response:
        found = bodies.get(name)
        if found is None:
            return JSONResponse({"detail": f"no page {name!r}; the pages are /ui/search, /ui/admin and /ui/demo"},
                                status_code=404)
        body, kind = found
        shared = {"Cross-Origin-Resource-Policy": "cross-origin", "Access-Control-Allow-Origin": "*"} if name in SHARED else {}
        return Response(body, media_type=kind, headers={**HEADERS, **shared})

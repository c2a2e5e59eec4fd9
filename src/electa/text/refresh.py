"""A page that only sends its visitor to another: a meta refresh naming an address
(``<meta http-equiv="refresh" content="0; url=next.html">``; reStructuredText's ``.. meta::`` with
``:http-equiv=refresh:``) on a page holding no more than a stub's text. A search engine follows
it and indexes where it leads, not the stub (Google reads an instant one as a permanent
redirect, a delayed one as a temporary one); rustdoc writes one for every renamed item (15,626
of the 48,625 HTML pages of Rust's documentation on this machine, each "Redirection:
Redirecting to …": ``python bench/moved_pages.py``), pip's docs one for every page that moved
("This page has moved"). A page with more text than a stub's is read as it stands, whatever it
refreshes to (a status page reloading itself, a session's timeout sending to a login page).
"""

from __future__ import annotations

import posixpath
import re
from urllib.parse import unquote

MOST_SECONDS = 60  # a longer wait is a page that reloads now and then, read as it stands
STUB_CHARS = 400  # a page holding more text than this is read as it stands, whatever it refreshes to
MOST_CHARS = 2_000  # of a refresh's content read: an address longer is no page's
_DELAY = re.compile(r"[0-9]{0,10}(?:\.[0-9.]{0,10})?")
_URL = re.compile(r"url[ \t\n\r\f]*=", re.IGNORECASE)
_SPACE = " \t\n\r\f"
_INDEXES = frozenset({"index.html", "index.htm", "index.rst", "index.md"})


def refresh_target(content: str) -> str:
    """The address a meta refresh's ``content`` sends the visitor to, read as HTML's "shared
    declarative refresh steps" read it (a delay, then ";" or "," or a space, then an address,
    after "url=" or bare, quoted or not; tabs and line breaks in it dropped, as a URL parser
    drops them): "" where it sends them nowhere (no address, "#…") or only after more than
    :data:`MOST_SECONDS`. Linear in what it reads (its first :data:`MOST_CHARS` characters): no
    pattern here can backtrack.

    >>> refresh_target("0;URL=macro.is_x86_feature_detected.html"), refresh_target("3; url='../../cli/pip_freeze/'")
    ('macro.is_x86_feature_detected.html', '../../cli/pip_freeze/')
    >>> refresh_target("5 , URL = next.html"), refresh_target("0; next.html"), refresh_target(".5;url=x")
    ('next.html', 'next.html', 'x')
    >>> refresh_target("000000; url=new\\n.html"), refresh_target("0; URL='x")
    ('new.html', 'x')
    >>> refresh_target("300"), refresh_target("600; url=news.html"), refresh_target("0; url=#top"), refresh_target("0x")
    ('', '', '', '')
    """
    text = content[:MOST_CHARS].lstrip(_SPACE)
    delay = _DELAY.match(text)
    if delay is None or not delay.group() or int(delay.group().split(".")[0] or "0") > MOST_SECONDS:
        return ""
    rest = text[delay.end():]
    if rest and rest[0] not in ";," + _SPACE:
        return ""
    rest = rest.lstrip(_SPACE).removeprefix(";").removeprefix(",").lstrip(_SPACE)
    named = _URL.match(rest)
    if named is not None:
        rest = rest[named.end():].lstrip(_SPACE)
    if rest[:1] in ("'", '"'):
        end = rest.find(rest[0], 1)
        rest = rest[1:end] if end > 0 else rest[1:]
    target = rest.strip(_SPACE).replace("\t", "").replace("\n", "").replace("\r", "")
    return "" if not target or target.startswith("#") else target


def moves_elsewhere(target: str, name: str, text_chars: int) -> bool:
    """Whether a page named ``name`` (its path in its folder), holding ``text_chars`` characters
    of text, whose refresh sends its visitor to ``target`` (:func:`refresh_target`), only sends
    them elsewhere: it is a stub (at most :data:`STUB_CHARS` of text) and the address is a web
    page's (``http``, ``https`` or a path) other than its own. Where the page's own address
    cannot be told apart (an absolute path or a site's address, other letter case or escapes) an
    address ending in the page's own file name is taken for it, and an index page's folder
    ("./") for the page: a page wrongly read as it stands costs a stub in the index, one
    wrongly left out is a page lost.

    >>> moves_elsewhere("struct.Vec.html", "std/struct.Vec.t.html", 52), moves_elsewhere("../new/index.html", "old/index.html", 9)
    (True, True)
    >>> moves_elsewhere("../../cli/pip_freeze/", "reference/pip_freeze.rst", 120)
    True
    >>> [moves_elsewhere(t, "docs/status/index.html", 20) for t in ("./", ".", "?x=1", "/docs/status/index.html",
    ...     "https://x.org/docs/status/INDEX.html", "index%2Ehtml", "javascript:go()", "mailto:a@b.org")]
    [False, False, False, False, False, False, False, False]
    >>> moves_elsewhere("guide/", "old.rst", 5_000), moves_elsewhere("", "old.html", 0)
    (False, False)
    """
    if not target or text_chars > STUB_CHARS:
        return False
    path = unquote(target.split("#", 1)[0].split("?", 1)[0]).strip()
    scheme, colon, after = path.partition(":")
    if colon and "/" not in scheme:
        if scheme.lower() not in ("http", "https"):
            return False  # (javascript:, mailto:, data: …: no page)
        path = after.lstrip("/").partition("/")[2]  # (the site's address dropped: a path)
        absolute = True
    else:
        absolute = path.startswith("/")
    own = posixpath.basename(name).casefold()
    if not path or path in (".", "./"):
        return False  # (the page itself, or its folder: an index page's own address)
    if absolute:
        last = posixpath.basename(path.rstrip("/")).casefold()
        folder = posixpath.basename(posixpath.dirname(name)).casefold()
        return last != own and not (own in _INDEXES and last == folder)
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(name), path))
    if resolved.casefold() == posixpath.normpath(name).casefold():
        return False
    return not (own in _INDEXES and resolved.casefold() == posixpath.dirname(name).casefold())

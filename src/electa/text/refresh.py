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


def read_refresh(content: str) -> tuple[float, str] | None:
    """A meta refresh's ``content`` read as HTML's "shared declarative refresh steps" read it: its
    delay in seconds and the address it names ("" for the page itself), or None where a browser
    cannot read it as a refresh at all (a delay, then ";" or "," or a space, then an address,
    after "url=" or bare, quoted or not; tabs and line breaks in it dropped, as a URL parser
    drops them). Linear in what it reads (its first :data:`MOST_CHARS` characters): no pattern
    here can backtrack.

    >>> read_refresh("0;URL=x.html"), read_refresh(".5;url=x"), read_refresh("300"), read_refresh("0x")
    ((0.0, 'x.html'), (0.0, 'x'), (300.0, ''), None)
    """
    text = content[:MOST_CHARS].lstrip(_SPACE)
    delay = _DELAY.match(text)
    if delay is None or not delay.group().strip("."):
        return None
    rest = text[delay.end():]
    if rest and rest[0] not in ";," + _SPACE:
        return None
    seconds = float(int(delay.group().split(".")[0] or "0"))
    rest = rest.lstrip(_SPACE).removeprefix(";").removeprefix(",").lstrip(_SPACE)
    named = _URL.match(rest)
    if named is not None:
        rest = rest[named.end():].lstrip(_SPACE)
    if rest[:1] in ("'", '"'):
        end = rest.find(rest[0], 1)
        rest = rest[1:end] if end > 0 else rest[1:]
    return seconds, rest.strip(_SPACE).replace("\t", "").replace("\n", "").replace("\r", "")


def refresh_target(content: str) -> str:
    """The address a meta refresh's ``content`` sends the visitor to (:func:`read_refresh`): ""
    where it sends them nowhere (no address, "#…", not a refresh) or only after more than
    :data:`MOST_SECONDS`.

    >>> refresh_target("0;URL=macro.is_x86_feature_detected.html"), refresh_target("3; url='../../cli/pip_freeze/'")
    ('macro.is_x86_feature_detected.html', '../../cli/pip_freeze/')
    >>> refresh_target("5 , URL = next.html"), refresh_target("0; next.html"), refresh_target(".5;url=x")
    ('next.html', 'next.html', 'x')
    >>> refresh_target("000000; url=new\\n.html"), refresh_target("0; URL='x")
    ('new.html', 'x')
    >>> refresh_target("300"), refresh_target("600; url=news.html"), refresh_target("0; url=#top"), refresh_target("0x")
    ('', '', '', '')
    """
    read = read_refresh(content)
    if read is None or read[0] > MOST_SECONDS:
        return ""
    target = read[1]
    return "" if not target or target.startswith("#") else target


_SOURCES = (".rst", ".rest", ".md", ".markdown", ".txt")  # (a page written for a site's builder)


def _stem(name: str) -> str:
    """A page's path without the suffixes a file or a build gives it ("a/b.rst.gz", "a/b.html": "a/b")."""
    name = name.removesuffix(".gz")
    for suffix in (*_SOURCES, ".html", ".htm"):
        if name.casefold().endswith(suffix):
            return name[: -len(suffix)]
    return name


def moves_elsewhere(target: str, name: str, text_chars: int) -> bool:
    """Whether a page named ``name`` (its path in its folder), holding ``text_chars`` characters
    of text, whose refresh sends its visitor to ``target`` (:func:`refresh_target`), only sends
    them elsewhere: it is a stub (at most :data:`STUB_CHARS` of text) and the address is a web
    page's (``http``, ``https`` or a path) other than its own. A relative address is resolved
    from where the page is served: an HTML page where it lies, a page a builder turns into one
    (``.rst``, ``.md``) as ``x.html`` or as the folder ``x/`` (Sphinx's two builds), any of them
    its own. Where its own address cannot be told apart (an absolute path or another site's
    address, other letter case, escapes) an address ending in its own name is taken for it: a
    page wrongly read costs a stub in the index, one wrongly left out (and deleted by ``sync``)
    is a page lost.

    >>> moves_elsewhere("struct.Vec.html", "std/struct.Vec.t.html", 52), moves_elsewhere("../new/index.html", "old/index.html", 9)
    (True, True)
    >>> moves_elsewhere("../../std/collections/hash_map/enum.Entry.html", "std/collections/hash/map/enum.Entry.html", 60)
    True
    >>> moves_elsewhere("../../cli/pip_freeze/", "reference/pip_freeze.rst", 120), moves_elsewhere("/", "a.html", 9)
    (True, True)
    >>> [moves_elsewhere(t, "docs/status/index.html", 20) for t in ("./", ".", "?x=1", "/docs/status/index.html",
    ...     "https://x.org/docs/status/INDEX.html", "index%2Ehtml", "javascript:location.reload()", "mailto:a@b.org")]
    [False, False, False, False, False, False, False, False]
    >>> [moves_elsewhere(t, "ops/status.rst", 20) for t in ("status.html", "../status/", "./", "status")]
    [False, False, False, False]
    >>> moves_elsewhere("guide/", "old.rst", 5_000), moves_elsewhere("", "old.html", 0)
    (False, False)
    """
    if not target or text_chars > STUB_CHARS:
        return False
    path = unquote(target.split("#", 1)[0].split("?", 1)[0]).strip()
    scheme, colon, after = path.partition(":")
    absolute = path.startswith("/")
    if colon and "/" not in scheme:
        if scheme.lower() not in ("http", "https"):
            return False  # (javascript:, mailto:, data: …: no page)
        path, absolute = "/" + after.lstrip("/").partition("/")[2], True  # (the site's address dropped: a path)
    if not path or path in (".", "./"):
        return False  # (the page itself, or its folder: an index page's, or a built page's own)
    stem = _stem(name)
    built = name.removesuffix(".gz").casefold().endswith(_SOURCES)
    indexed = posixpath.basename(stem).casefold() == "index"
    if absolute:
        last = _stem(posixpath.basename(path.rstrip("/"))).casefold()
        if not last:
            return True  # (a site's front page)
        own = {posixpath.basename(stem).casefold()}
        if indexed:  # (an index page's address is its folder's)
            own.add(posixpath.basename(posixpath.dirname(stem)).casefold())
        return last not in own
    folder = posixpath.dirname(stem)
    own = {stem, posixpath.join(folder, "") if indexed else stem}
    bases = [folder, stem] if built else [folder]  # (a built page is served as x.html, or as the folder x/)
    for base in bases:
        resolved = _stem(posixpath.normpath(posixpath.join(base, path)))
        if any(resolved.casefold() == posixpath.normpath(o).casefold() for o in own if o):
            return False
        if indexed and resolved.casefold() == posixpath.normpath(folder or ".").casefold():
            return False
    return True

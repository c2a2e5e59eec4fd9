"""Which reading of a file a stored source holds, so that a better reader reaches stored pages.

A file is read again only when it changes: its SHA-256 is stored with its source, and an
unchanged file is skipped. So a release that reads a format better (a permalink mark no longer
quoted, a heading read as one) reached only the files edited since, and a help center ingested
once kept its old reading for good. The stored hash now carries the version of the reader that
read the file (``<sha256>@html-4``): a file whose reader's version differs from the one stored
is read again at its next ``electa ingest`` or ``electa sync``, as if it had changed. What reads
the same stays as it was: a document whose text is unchanged keeps its units and vectors (the
store keeps a document by its text), so a release that changes nothing in a file costs its
reading, not its embedding. A store written before these versions holds bare hashes, so its
files are all read again once.

``READERS`` holds each loader's version: bump a loader's number with any change to what it
reads out of a file (its documents' titles, text, sections, addresses, Q&A pairs), never for a
change that reads the same. The version of the parser a loader reads with (``PARSERS``:
selectolax for HTML, pypdf for PDF) is part of it. ``tests/unit/test_reader_versions.py``
records a digest of the readers' code beside these numbers and fails when the code changes
until the digest is recorded again, so that a change to a reader is a decision about its
version.

A file read again that reads the same is left as it was: its version and last change stay,
and only its new hash, kind and count are recorded
(``electa.stores.protocol.same_documents``). A file whose new reading fails keeps the stored
one, and is read again at the next ingest.

Limits: a document whose title and text read the same keeps the units it was cut into, even
where the new reading titles or cuts its sections otherwise (a mark dropped from a sub-heading:
the store keeps a document by its title and text); a change of chunker (``CHUNKER_VERSION``) or
of chunk sizes reaches stored pages only with their text; uploads (``POST /v1/sources``) are
hashed by what was read, and no file is kept to read again. Two releases with other readers
writing one store read each other's files again at every sync, each writing its own reading.
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import PackageNotFoundError, version

from electa.ingest.loaders import loader_for

# html 2: a page of a folder asking not to be indexed is not stored (html_page.asks_not_indexed).
# html 3: text outside every block (a <div>'s own words, a <summary>, an accordion's <button>) is read.
# html 4: the same, after review (3 was one commit's, e48eba2: its stores read again).
# html 5: a heading a <details>'s <summary> holds (rustdoc's methods) closes with the <details>, where
#   what follows it read under it until the next heading, and a second <summary> no longer heads.
# html 6: the words a <summary> holds before its heading end its <details> (they opened the
#   heading's section in 5, which was two commits', ba4b879 and 96a70a2: their stores read again),
#   and a summary read as a line no longer joins the list item after it.
# markdown 2: a raw <details>'s <summary> line heads what it discloses, its tags' lines blank.
# markdown 3: MyST's roles, targets, comments and directives read as Sphinx shows them
#   (electa.text.myst); a fence opening a list item ("- ```") is code to where it closes.
# markdown 4: a MyST layout directive's argument ("{grid} 1 2 2 2") is not read, and a "{div}"
#   classed hidden hides what it holds.
# html 7: a page whose meta refresh sends its visitor to another says where (Loaded.moved_to):
#   a folder's ingest leaves it out (rustdoc's "Redirection" pages); a definition list reads as
#   items "term: definition".
# rst 2: an extension's directive ("pip-command-usage:: config") shows its content, not its
#   arguments; a tab over nothing read is no text; sphinx-tabs' "code-tab" is code; a page whose
#   ".. meta::" refresh sends its visitor to another says where; a definition list reads as
#   items "term: definition".
# html 8, rst 3, markdown 5: the same, after two reviews (7, 2 and 4 were commits fdc46e1 to
#   7f9abc2's, never released: their stores read again): only a stub refreshing elsewhere is a
#   moved page; a definition's term is never lost; an extension's argument that reads as words
#   is read.
# rst 4: a ".. class:: hidden" ending a list item's, a field's or a definition's block marks the
#   next item alone (docutils' ClassAttribute), where it hid every item after it; a description
#   of nothing but its signature over the section title it names is that title's target, not shown
#   (Django's ".. setting:: ALLOWED_HOSTS"); an extension's object type named for its kind
#   ("django-admin-option") shows its signature as the domains' descriptions do; an inline literal
#   ending in a backtick keeps it (docutils' end-string is never followed by a backtick).
# rst 4, markdown 6: a reference naming no title (":doc:`/howto/custom-template-tags`", MyST's
#   "{doc}") shows its target's words ("custom template tags"), not a path.
# text 2: a ".txt" file that is a reStructuredText page (a Sphinx project's source: Django's docs)
#   is read as one (electa.text.rst.rst_evidence).
# rst 5, text 3, markdown 7: the same, after two reviews (rst 4, text 2 and markdown 6 were commits
#   133076a to a742312's, never released: their stores read again): a ".txt" file reads as a
#   reStructuredText page only where it writes that language's own marks (a role only where
#   markup may start, none inside a Markdown fence), or where its title is overlined and that
#   reading keeps every word, as often; a class ending an item climbs past a comment to the whole
#   next element; a description that is a title's target is no element; a ":doc:" reference to
#   an index page shows its folder's name.
# html 9: a page's <h1> that says its <title> but for its spaces (DocBook's "4.&nbsp;Memcheck",
#   the heading after an empty anchor) is the title, no heading of its own. (Only its sections'
#   paths change, so a stored page read again reads the same and keeps its units, as the Limits
#   above say: new pages and pages whose text changes get it.)
READERS: dict[str, int] = {
    "load_markdown": 7,
    "load_html": 9,
    "load_rst": 5,
    "load_text": 3,
    "load_pdf": 1,
    "load_jsonl": 1,
    "load_json": 1,
    "load_csv": 1,
}


# The readers another hands a file, or part of one, to: their version is part of its own, so a
# change to the reStructuredText reader reads again a ".txt" file that is a reStructuredText page
# (Django's) and a MyST page (whose "{eval-rst}" blocks and roles that reader reads).
HANDS_TO: dict[str, tuple[str, ...]] = {"load_text": ("load_rst",), "load_markdown": ("load_rst",)}


# The parsers a reader's output also depends on: their version is part of its own (a new
# lexbor may build another tree of the same page), so upgrading one reads its files again.
PARSERS: dict[str, str] = {"load_html": "selectolax", "load_pdf": "pypdf"}


@cache
def _parser(package: str) -> str:
    try:
        return f"+{package}{version(package)}"
    except PackageNotFoundError:
        return ""


def reader_of(name: str) -> str:
    """The reader of a file named ``name`` and its version (with its parser's, where it has one).

    >>> reader_of("guide/setup.md") == f"markdown-{READERS['load_markdown']}+rst-{READERS['load_rst']}"
    True
    >>> reader_of("faq.csv")
    'csv-1'
    >>> reader_of("README") == f"text-{READERS['load_text']}+rst-{READERS['load_rst']}"
    True
    >>> reader_of("index.html").startswith(f"html-{READERS['load_html']}+selectolax")
    True
    """
    loader = loader_for(name).__name__
    parser = _parser(PARSERS[loader]) if loader in PARSERS else ""
    handed = "".join(f"+{other.removeprefix('load_')}-{READERS.get(other, 1)}" for other in HANDS_TO.get(loader, ()))
    return f"{loader.removeprefix('load_')}-{READERS.get(loader, 1)}{handed}{parser}"


def stamped(digest: str, name: str) -> str:
    """A file's stored hash: its bytes' ``digest`` and the reader that reads it.

    >>> stamped("ab12", "faq.csv")
    'ab12@csv-1'
    """
    return f"{digest}@{reader_of(name)}"


def read_again(stored: str, now: str) -> bool:
    """Whether a stored hash and a file's hash now differ only by the reader: the same bytes,
    read by another reader or another version of it (or stored before readers had versions).

    >>> read_again("ab12", "ab12@markdown-1"), read_again("ab12@markdown-1", "ab12@markdown-2")
    (True, True)
    >>> read_again("ab12@markdown-1", "cd34@markdown-2"), read_again("ab12@markdown-1", "ab12@markdown-1")
    (False, False)
    """
    return stored != now and stored.partition("@")[0] == now.partition("@")[0]

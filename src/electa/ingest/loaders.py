"""Loaders: one per file format, registered by extension (SPEC A1).

A loader takes the file's name and bytes and returns a :class:`~electa.ingest.page.Loaded`:
documents (with heading sections) and curated Q&A pairs. It raises :class:`IngestError` naming
what was wrong. Markdown and reStructuredText are read in :mod:`electa.ingest.markup`, HTML in
:mod:`electa.ingest.html_page`, records (CSV, JSON, JSON Lines) in :mod:`electa.ingest.records`;
plain text and PDF here.
"""

from __future__ import annotations

import io
import re
from collections import Counter
from pathlib import PurePath

from electa.errors import IngestError, UnsupportedFormat
from electa.ingest.decode import decode_text
from electa.ingest.html_page import load_html
from electa.ingest.markup import load_markdown, load_rst, rst_page
from electa.ingest.page import Loaded, Loader, page_document, stem_title
from electa.ingest.records import load_csv, load_json, load_jsonl
from electa.text.rst import MARKED, TITLED, rst_evidence
from electa.types import Section


def load_text(name: str, data: bytes) -> Loaded:
    """A plain-text file, or the reStructuredText page a Sphinx project named ``.txt``
    (Django's documentation), read as one (:func:`electa.text.rst.rst_evidence`): where it
    writes reStructuredText's own marks, or where its title is overlined and that reading keeps
    every word the plain one does, as often. (A banner over a plain text, Debian's TODO files,
    reads as text: its dashed rules would make titles of what they underline, and a title over
    nothing is dropped.)"""
    text, note = decode_text(name, data)
    evidence = rst_evidence(text)
    if evidence == MARKED:
        return rst_page(name, text, note)
    if evidence == TITLED:
        try:
            page = rst_page(name, text, note)
        except IngestError:
            page = None
        words = Counter(_WORD.findall(_EMBEDDED.sub(" ", text).lower()))
        if page is not None and words and not words - _words_of(page):
            return page
    doc = page_document(name, stem_title(name), "", [Section((), text.strip())], name)
    return Loaded(documents=[doc], note=note)


_WORD = re.compile(r"[^\W_]+")
# A reference's address in angle brackets ("`rebinding <https://…>`_"), which it shows as its text.
_EMBEDDED = re.compile(r"<[^<>\s]{1,2000}>(?=`__?)")


def _words_of(page: Loaded) -> Counter[str]:
    """Every word a page's reading holds, as often as it does: its titles, headings and text
    (lowercased; a heading counts once for each section under it)."""
    parts = [part for doc in page.documents for part in (doc.title, *(x for s in doc.sections for x in (*s.path, s.text)))]
    return Counter(_WORD.findall(" ".join(parts).lower()))


def load_pdf(name: str, data: bytes) -> Loaded:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise IngestError(name, "the PDF is encrypted; export an unencrypted copy")
        pages = [(page.extract_text() or "").strip() for page in reader.pages]
        meta_title = (reader.metadata.title if reader.metadata else None) or ""
    except IngestError:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise IngestError(name, f"not a readable PDF ({exc})") from exc
    sections = [Section((f"Page {i}",), text) for i, text in enumerate(pages, 1) if text]
    if not sections:
        raise IngestError(name, "the PDF has no extractable text (scanned images need OCR first)")
    return Loaded(documents=[page_document(name, str(meta_title) or stem_title(name), "", sections, name)])


LOADERS: dict[str, Loader] = {
    ".md": load_markdown,
    ".markdown": load_markdown,
    ".html": load_html,
    ".htm": load_html,
    ".rst": load_rst,
    ".rest": load_rst,
    ".txt": load_text,
    ".text": load_text,
    ".pdf": load_pdf,
    ".jsonl": load_jsonl,
    ".json": load_json,
    ".csv": load_csv,
}


# Files a project names by what they are rather than by a format: plain text by convention
# (README, CHANGELOG, LICENSE), read as text when nothing follows the name or only what Debian
# adds ("changelog.Debian", "README.source", a rotated "changelog.1"). Any other suffix keeps its
# own meaning ("install.sh", "security.env", "readme.png" are no pages), and binary content is
# refused by the text decoder all the same.
PLAIN_TEXT_NAMES = frozenset(
    "readme changelog changes history news license licence copying copyright authors contributors"
    " contributing install todo thanks notice faq usage support security release-notes releasenotes".split())
_PLAIN_TEXT_TAILS = re.compile(r"(?:\.(?:debian|source|old|\d{1,3}))*", re.IGNORECASE)


def loader_for(name: str) -> Loader:
    """The loader of a file's format, by its extension; a conventional plain-text name
    (:data:`PLAIN_TEXT_NAMES`) with nothing after it but Debian's tails is text.

    >>> [loader_for(n).__name__ for n in ("README", "changelog.Debian", "changelog.1", "NEWS.md", "LICENSE.txt")]
    ['load_text', 'load_text', 'load_text', 'load_markdown', 'load_text']
    >>> loader_for("install.sh")
    Traceback (most recent call last):
    electa.errors.UnsupportedFormat: install.sh: unsupported file type .sh; ...
    """
    path = PurePath(name)
    suffix = path.suffix.lower()
    if suffix in LOADERS:
        return LOADERS[suffix]
    base, _, tails = path.name.partition(".")
    if base.lower() in PLAIN_TEXT_NAMES and _PLAIN_TEXT_TAILS.fullmatch(f".{tails}" if tails else ""):
        return load_text
    raise UnsupportedFormat(
        name, f"unsupported file type {suffix or '(none)'}; supported: {', '.join(sorted(LOADERS))}, and plain text"
        " named README, CHANGELOG, LICENSE and the like"
    ) from None

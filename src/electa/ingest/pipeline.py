"""From paths to stored sources: read, load, chunk, embed, store.

Each file is one source and is written in one transaction, so a bad file or a crash leaves
every other source as it was (SPEC A8). Unchanged files (same content hash) are skipped before
they are even parsed (SPEC A5).

Files are read and chunked one by one, but their units are embedded together, a window of
files at a time (:data:`WINDOW_TEXTS`): a help-center page holds a few dozen units, and the
model read them page by page in small batches, each padded to its own longest text. Sorted by
length across many pages, the batches are full and pad little (``bench/ingest_window.py``).
Then each file is stored in its own transaction, in the order read.
"""

from __future__ import annotations

import hashlib
import logging
import sys
import time
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePath
from typing import Any
from urllib.parse import quote

import numpy as np

from electa.embedders.chain import ENGLISH, ChainEmbedder
from electa.embedders.protocol import Embedder
from electa.errors import ContentsOnly, IngestError, UnsupportedFormat
from electa.ingest import naming
from electa.ingest.chunker import chunk_document, embed_text
from electa.ingest.loaders import loader_for
from electa.ingest.naming import list_files
from electa.ingest.page import Loaded
from electa.ingest.reading import read_again, stamped
from electa.ingest.unit_vectors import REUSABLE, Recipe, unit_vectors
from electa.stores.protocol import IndexStore, PreparedDocument, SourceOutcome, SourceRecord, language_of, same_access
from electa.types import Access, Chunk, ChunkKind, Document

_log = logging.getLogger("electa.ingest")

EMBED_BATCH = 512  # texts per call to the model, sorted by length across the whole window
WINDOW_TEXTS = 2048  # units read (chunked, not yet embedded) before the window is embedded and stored
WINDOW_FILES = 64  # files, whatever their units: a failure to embed is retried file by file


@dataclass
class IngestReport:
    """What an ingest did: per source outcomes, failures by name, throughput."""

    outcomes: list[SourceOutcome] = field(default_factory=list)
    failures: list[tuple[str, str]] = field(default_factory=list)
    notes: list[tuple[str, str]] = field(default_factory=list)
    documents: int = 0
    seconds: float = 0.0
    seen: set[str] = field(default_factory=set)  # source names of every file read, changed or not
    deleted: list[str] = field(default_factory=list)  # sources a sync removed (their files are gone)
    roots: dict[Path, str] = field(default_factory=dict)  # each given path -> its name in the store
    unlisted: set[Path] = field(default_factory=set)  # given folders not listed whole: a sync deletes nothing there
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, type) a folder held that no loader reads
    # Unchanged files read again, and stored, because this release reads their type otherwise
    # (electa.ingest.reading): "updated" where they read otherwise, "unchanged" where the same.
    reread: list[SourceOutcome] = field(default_factory=list)
    # HTML pages of a folder that ask not to be indexed (paths), and the source names of those
    # an earlier reading stored: those are kept up to date (nothing is deleted for it), the
    # others not stored.
    unindexed: list[str] = field(default_factory=list)
    unindexed_stored: list[str] = field(default_factory=list)
    # Pages of a folder that only send their visitor to another (a meta refresh), and the
    # source names of those an earlier reading stored: a sync deletes those (``deleted``), an
    # ingest keeps them as stored.
    moved: list[str] = field(default_factory=list)
    moved_stored: list[str] = field(default_factory=list)
    # Pages of a folder that are only a table of contents of others (a toctree alone), and the
    # source names of those an earlier reading stored: as ``moved``.
    contents: list[str] = field(default_factory=list)
    contents_stored: list[str] = field(default_factory=list)

    @property
    def docs_per_second(self) -> float:
        return self.documents / self.seconds if self.seconds > 0 else 0.0

    def counts(self) -> dict[str, int]:
        out = {"added": 0, "updated": 0, "unchanged": 0, "failed": len(self.failures), "deleted": len(self.deleted)}
        for o in self.outcomes:
            out[o.status] += 1
        return out


def nul_free(text: str) -> str:
    """``text`` with each NUL as U+FFFD. A NUL deep in a text file (the binary check reads the
    first 8 KB) or in JSON (``\\u0000``) means nothing to a reader, and PostgreSQL text cannot
    hold one: both backends store the same replacement rather than one refusing the source.

    >>> nul_free("a\\x00b")
    'a\\ufffdb'
    """
    return text.replace("\x00", "\ufffd") if "\x00" in text else text


def text_hash(title: str, text: str, kind: str = "") -> str:
    """What makes two units the same document (stored once, vectors reused): their title and
    text, and ``kind`` when given. A curated answer is hashed with its kind: one whose one
    trigger is a Q&A pair's question, with the same answer, is not that pair, yet it was folded
    into it and its trigger lost (an answer written for a content gap never answered it). Pages
    and Q&A pairs keep the hash they always had, so that a store written before matches them."""
    head = f"{kind}\x00" if kind else ""
    return hashlib.sha256(f"{head}{title.strip()}\n{text.strip()}".encode()).hexdigest()


def gunzip_limited(name: str, data: bytes, max_bytes: int) -> bytes:
    """Decompress gzip ``data`` without ever holding more than ``max_bytes`` of output: a small
    file that inflates to gigabytes (a gzip bomb) is refused once the limit is passed. Every
    member of a multi-member file is read (as ``gzip.decompress`` does); bytes after the last
    member that are not gzip are refused rather than ignored."""
    out = bytearray()
    pending = data
    try:
        while pending:
            inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
            while pending and not inflater.eof:
                out += inflater.decompress(pending, max_bytes + 1 - len(out))
                if len(out) > max_bytes:
                    raise IngestError(name, f"decompresses to more than the {max_bytes / 2**20:.0f} MB limit"
                                      " (ELECTA_MAX_FILE_MB)")
                pending = inflater.unconsumed_tail
            if not inflater.eof:
                raise IngestError(name, "not a readable gzip file (it ends before its last block)")
            pending = inflater.unused_data  # the next member, if any
    except zlib.error as exc:
        raise IngestError(name, f"not a readable gzip file ({exc})") from exc
    return bytes(out)


def read_source(path: Path, max_bytes: int) -> tuple[str, bytes]:
    """The file's logical name (``.gz`` removed) and its bytes, size-checked before and (for
    gzip) during decompression."""
    size = path.stat().st_size
    if size > max_bytes:
        raise IngestError(str(path), f"{size / 2**20:.1f} MB is over the {max_bytes / 2**20:.0f} MB limit (ELECTA_MAX_FILE_MB)")
    data = path.read_bytes()
    name = path.name
    if name.endswith(".gz"):
        data = gunzip_limited(str(path), data, max_bytes)
        name = name[:-3]
    return name, data


# Files a site serves as pages, whose extension a site generator drops or replaces
# (``--url-suffix``); any other file (a PDF, a CSV) keeps its name in its address.
PAGE_EXTENSIONS = frozenset({".md", ".markdown", ".rst", ".rest", ".html", ".htm"})


def page_address(base_url: str, rel: str, suffix: str | None = None) -> str:
    """The address of the file at ``rel`` (its path under the ingested folder) on the site at
    ``base_url``: '' without one. ``suffix`` None keeps the file's name (only ``#``, ``?`` and
    ``%`` encoded: each would break the link); otherwise a page's extension becomes ``suffix``
    ('' as Docusaurus serves pages, '/' as MkDocs and Hugo do, '.html' as Jekyll does), an
    index page (``index.md``) its folder, and the page's address, which a generator made from
    the uncompressed file, has no ``.gz`` and is percent-encoded throughout.

    >>> page_address("https://docs.npmjs.com/", "commands/npm-ci.md")
    'https://docs.npmjs.com/commands/npm-ci.md'
    >>> page_address("https://docs.npmjs.com", "commands/npm-ci.md", ""), page_address("https://x.org", "a/b.md", "/")
    ('https://docs.npmjs.com/commands/npm-ci', 'https://x.org/a/b/')
    >>> page_address("https://x.org", "guide/index.md", "/"), page_address("https://x.org", "index.md", "")
    ('https://x.org/guide/', 'https://x.org/')
    >>> page_address("https://x.org", "price list.pdf", ""), page_address("https://x.org", "notes/a#1.md.gz")
    ('https://x.org/price list.pdf', 'https://x.org/notes/a%231.md.gz')
    >>> page_address("https://x.org", "notes/a b.md.gz", ""), page_address("https://x.org", "café?.md")
    ('https://x.org/notes/a%20b', 'https://x.org/café%3F.md')
    >>> page_address("", "a.md", "")
    ''
    """
    if not base_url:
        return ""
    path = PurePath(rel.removesuffix(".gz"))
    if suffix is None or path.suffix.lower() not in PAGE_EXTENSIONS:
        # The file's own name, as stores made before --url-suffix hold it (a browser encodes a
        # space or an accent itself); only what would cut the link short (a "#", a "?") or be
        # misread as an escape ("%") is encoded.
        return f"{base_url.rstrip('/')}/{rel.replace('%', '%25').replace('#', '%23').replace('?', '%3F')}"
    folder = "" if str(path.parent) == "." else f"{path.parent.as_posix()}/"
    if path.stem.lower() == "index" and suffix != ".html":
        rel = folder if suffix == "/" or not folder else folder.rstrip("/")
    else:
        rel = f"{folder}{path.stem}{suffix}"
    return f"{base_url.rstrip('/')}/{quote(rel, safe='/')}"



def _readable(name: str) -> bool:
    """Whether a loader reads a file of this name (``.gz`` aside)."""
    try:
        loader_for(name.removesuffix(".gz"))
    except UnsupportedFormat:
        return False
    return True


def same_source(existing: Mapping[str, Any] | None, record: SourceRecord) -> bool:
    """Whether a stored source already holds exactly this content under exactly this access
    and address. A change of access alone (a page made team-only) is a change: it must be
    re-stamped; so is a change of address alone (`electa ingest --base-url` given anew: every
    answer cited the old site's links, and the files read as unchanged)."""
    if existing is None or existing["content_hash"] != record.content_hash:
        return False
    return same_access(existing["access"], record.access) and (existing.get("url") or "") == record.url


@dataclass
class _Prepared:
    """One source chunked and ready to store, but for the vectors of its ``fresh`` documents
    (those no stored unit of the same access already holds)."""

    record: SourceRecord
    docs: list[PreparedDocument]
    fresh: list[int]  # indexes into ``docs``
    path: str = ""  # the file it was read from, for the report ('' for an upload)
    stored: bool = False  # an earlier version of the source is stored: its units' vectors may serve

    @property
    def texts(self) -> int:
        return sum(len(self.docs[d].chunks) for d in self.fresh)


class Ingestor:
    """Prepares and stores sources. Used by :class:`electa.engine.Engine`."""

    def __init__(self, store: IndexStore, embedder: Embedder | None, parent_chars: int,
                 child_chars: int, overlap: int, max_bytes: int, recipe: Recipe = Recipe.POOLED,
                 language: str = "", window_texts: int | None = None) -> None:
        self.window_texts = WINDOW_TEXTS if window_texts is None else window_texts  # 0: each file alone
        self.store = store
        self.language = language  # every document's, or '' for the store to read each one's
        self.embedder = embedder
        self.recipe = recipe
        self.parent_chars, self.child_chars, self.overlap = parent_chars, child_chars, overlap
        self.max_bytes = max_bytes

    def ingest_paths(self, paths: Sequence[Path], access: Access, base_url: str = "",
                     progress: bool = True, as_name: str | None = None, url_suffix: str | None = None,
                     read_noindex: bool = False) -> IngestReport:
        """Ingest files and folders; ``report.roots`` maps each given path to its name in the
        store (``as_name`` names a single path; see :mod:`electa.ingest.naming`); each file's
        address on the site at ``base_url`` as :func:`page_address` makes it."""
        report = IngestReport()
        start = time.perf_counter()
        try:
            listing = list_files(list(paths))
            # Decided and recorded in one transaction: one refused path leaves nothing changed.
            namings = naming.claim(self.store, access.org, access.agent, list(paths), as_name)
        except IngestError as exc:
            report.failures.append((exc.source, exc.reason))
            return report
        report.roots = {n.path: n.name for n in namings}
        report.failures.extend(listing.errors)
        if listing.errors:  # something could not be listed: a sync must not read its absence as deletion
            report.unlisted.update(paths)
        bar = _progress(len(listing.files), "files", progress)
        window: list[_Prepared] = []
        rereading: set[str] = set()  # unchanged files read for their reader (counted once stored)
        kept = "; the reading an earlier release stored is kept, and read again at the next ingest"

        def flush() -> None:
            for prepared, outcome in self._store_window(window):
                if isinstance(outcome, SourceOutcome):
                    if outcome.uri in rereading:
                        report.reread.append(outcome)
                    report.outcomes.append(outcome)
                    report.documents += outcome.documents
                else:
                    report.failures.append((prepared.path, outcome + (kept if prepared.record.uri in rereading else "")))
                bar.update(1, report.documents, time.perf_counter() - start)
            window.clear()

        report_uris: list[str] = []
        for path, root in listing.files:
            rel = path.relative_to(root).as_posix() if path != root else path.name
            uri = report.roots[root] if path == root else f"{report.roots[root]}/{rel}"
            report_uris.append(uri)
            report.seen.add(uri)  # even when it fails below: a sync never deletes a file it could not read
            if path != root and not _readable(path.name):
                # A docs folder holds images, scripts and build files beside its pages: each is no
                # failure (nor read, however large), but counted by type.
                report.skipped.append((str(path), PurePath(path.name.removesuffix(".gz")).suffix.lower() or "(none)"))
                bar.update(1, report.documents, time.perf_counter() - start)
                continue
            try:
                name, data = read_source(path, self.max_bytes)
                # Stores written before relative names knew this file by its absolute path.
                self.store.rename_source(access.org, access.agent, str(path.resolve()), uri)
                existing = self.store.source(access.org, access.agent, uri)
                # Without --base-url a file keeps the address it has (a nightly `electa sync` that
                # omits it must not wipe every link); with one, its address is the one given.
                url = page_address(base_url, rel, url_suffix) if base_url else str((existing or {}).get("url") or "")
                record = SourceRecord(access.org, access.agent, uri, Path(name).suffix.lstrip("."),
                                      url, stamped(hashlib.sha256(data).hexdigest(), name), access)
                if existing is not None and existing["kind"] == "api":
                    raise IngestError(str(path), f"an upload named {uri!r} is stored; a file never replaces an upload"
                                      " (delete the upload, or ingest the folder under another name with --as)")
                if same_source(existing, record):
                    assert existing is not None
                    report.outcomes.append(SourceOutcome(record.uri, "unchanged", existing["version"], existing["documents"]))
                else:
                    if existing is not None and read_again(existing["content_hash"], record.content_hash):
                        rereading.add(uri)
                    try:
                        loaded = loader_for(name)(uri[:-3] if uri.endswith(".gz") else uri, data)
                        # A stub sending its visitor to another page (electa.text.refresh)
                        leaves = (report.moved, report.moved_stored) if loaded.moved_to and path != root else None
                    except ContentsOnly:
                        if path == root:
                            raise
                        # A table of contents of other pages (a toctree alone): their text is in their own files.
                        leaves = (report.contents, report.contents_stored)
                    if leaves is not None:
                        # Not stored. One an earlier reading stored holds what the folder no longer
                        # shows (what the page said before it moved; a toctree read as plain text):
                        # a sync deletes it as it deletes a file that is gone (it counts as unseen);
                        # an ingest, which deletes nothing, names it.
                        left, stored = leaves
                        left.append(str(path))
                        if existing is not None:
                            stored.append(uri)
                            report.seen.discard(uri)
                        bar.update(1, report.documents, time.perf_counter() - start)
                        continue
                    if loaded.moved_to and not loaded.documents:
                        raise IngestError(str(path), f"it holds no text: it only sends its visitor to {loaded.moved_to!r}"
                                          "; ingest that page")
                    if loaded.noindex and not read_noindex and path != root:
                        # Not stored. One an earlier reading stored is neither deleted (a site
                        # that asks it of every page, an intranet's, must not vanish at a nightly
                        # sync) nor left stale: it is kept up to date, and the report names it
                        # (`electa sources delete` removes it).
                        report.unindexed.append(str(path))
                        if existing is None:
                            bar.update(1, report.documents, time.perf_counter() - start)
                            continue
                        report.unindexed_stored.append(uri)
                    if loaded.note:
                        report.notes.append((str(path), loaded.note))
                    window.append(replace(self.prepare(record, loaded), path=str(path), stored=existing is not None))
                    if (sum(p.texts for p in window) >= self.window_texts or len(window) >= WINDOW_FILES):
                        flush()
                    continue  # counted on the bar once stored
            except IngestError as exc:
                report.failures.append((str(path), exc.reason + (kept if uri in rereading else "")))
            except Exception as exc:
                report.failures.append((str(path), f"could not be read ({type(exc).__name__}: {exc})"
                                        + (kept if uri in rereading else "")))
            bar.update(1, report.documents, time.perf_counter() - start)
        flush()
        bar.close()
        # In the order the files were read (an unchanged file is known at once, a changed one
        # once its window is stored); what no file names (a folder that cannot be listed) first.
        read = {str(path): n for n, (path, _) in enumerate(listing.files)}
        named = {o: n for n, o in enumerate(report_uris)}
        report.outcomes.sort(key=lambda o: named.get(o.uri, -1))
        report.failures.sort(key=lambda f: read.get(f[0], -1))
        report.seconds = time.perf_counter() - start
        return report

    def store_loaded(self, record: SourceRecord, loaded: Loaded, progress: bool = True) -> SourceOutcome:
        """Chunk, embed and store one source's documents and Q&A pairs atomically."""
        prepared = self.prepare(record, loaded)
        self._fill_vectors([prepared], progress)
        return self._put(prepared)

    def _store_window(self, window: list[_Prepared]) -> list[tuple[_Prepared, SourceOutcome | str]]:
        """Embed the window's units in one pass, then store each source in its own transaction.
        Should the model fail on the window, each source is embedded alone, so that one that
        cannot be read fails alone; a source whose write fails leaves the others stored."""
        if not window:
            return []
        out: list[tuple[_Prepared, SourceOutcome | str]] = []
        try:
            self._fill_vectors(window, progress=False)
            ready = window
        except Exception as exc:
            _log.warning("embedding %d files together failed (%s: %s); embedding each alone", len(window),
                         type(exc).__name__, exc)
            ready = []
            for prepared in window:
                try:
                    self._fill_vectors([prepared], progress=False)
                    ready.append(prepared)
                except Exception as exc:
                    out.append((prepared, f"could not be embedded ({type(exc).__name__}: {exc})"))
        for prepared in ready:
            try:
                self._refill_lost(prepared)
            except Exception as exc:
                out.append((prepared, f"could not be embedded ({type(exc).__name__}: {exc})"))
                continue
            try:
                out.append((prepared, self._put(prepared)))
            except IngestError as exc:
                out.append((prepared, exc.reason))
            except Exception as exc:
                out.append((prepared, f"could not be stored ({type(exc).__name__}: {exc})"))
        order = {id(p): i for i, p in enumerate(window)}
        return sorted(out, key=lambda pair: order[id(pair[0])])

    def prepare(self, record: SourceRecord, loaded: Loaded) -> _Prepared:
        """Chunk one source's documents, Q&A pairs and curated answers and read each new
        document's language; nothing is embedded or stored yet."""
        prepared: list[tuple[str, str, str, str, list[Chunk]]] = []
        for doc in loaded.documents:
            prepared.append((doc.ext_id, doc.title, doc.url or record.url, text_hash(doc.title, doc.text),
                             self._chunks(doc)))
        for pair in loaded.qa_pairs:
            chunk = Chunk(ChunkKind.QA, 0, pair.question, pair.answer)
            prepared.append((pair.ext_id, pair.question, pair.url or record.url,
                             text_hash(pair.question, pair.answer), [chunk]))
        for curated in loaded.curated:
            chunk = Chunk(ChunkKind.CURATED, 0, "\n".join(curated.triggers), curated.answer)
            prepared.append((curated.ext_id, curated.triggers[0], curated.url or record.url,
                             text_hash("\n".join(curated.triggers), curated.answer, "curated"), [chunk]))
        if not prepared:
            raise IngestError(record.uri, "nothing to index in this source")
        known = self.store.known_text_hashes(record.org, record.agent, record.access, among={p[3] for p in prepared})
        fresh: list[int] = []
        seen: set[str] = set()
        for d, (_, _, _, thash, _) in enumerate(prepared):
            if thash in known or thash in seen:
                continue  # stored already (its vectors are reused) or twice in this source
            seen.add(thash)
            fresh.append(d)
        docs = [
            PreparedDocument(nul_free(ext_id), nul_free(title), nul_free(url), thash,
                             tuple(replace(ch, title=nul_free(ch.title), text=nul_free(ch.text)) for ch in chunks),
                             (None,) * len(chunks), self.language)
            for ext_id, title, url, thash, chunks in prepared
        ]
        # Each new document's language read here, not in the store's write (its lock is every
        # writer's), and before its units are embedded (a chain embedder reads each language
        # with its own model); the store reads again only one with none found.
        docs = [doc if doc.lang or doc.text_hash in known else replace(doc, lang=language_of(doc)) for doc in docs]
        return _Prepared(record, docs, fresh)

    def _fill_vectors(self, window: Sequence[_Prepared], progress: bool) -> None:
        """Give every fresh document of the window its units' vectors, the same units read
        once (a page two files share is embedded once, and both copies carry its vectors, so
        neither depends on the other being stored). Shared by the units and their language,
        never by text hash alone: a page and a Q&A pair of the same title and text hash alike
        but are different units."""
        first: dict[tuple[str, tuple[Chunk, ...]], tuple[int, int]] = {}
        todo: list[tuple[int, int]] = []
        for w, prepared in enumerate(window):
            for d in prepared.fresh:
                doc = prepared.docs[d]
                if first.setdefault((doc.lang, doc.chunks), (w, d)) == (w, d):
                    todo.append((w, d))
        # A source stored before lends its units' vectors to the same pieces of its new version:
        # a page edited in one paragraph, or read again by a new reader, is not read whole again.
        lent = self._stored_vectors(window)
        vectors = self._embed([list(window[w].docs[d].chunks) for w, d in todo],
                              [window[w].docs[d].lang for w, d in todo], progress, [lent.get(w) for w, _ in todo])
        read = {(window[w].docs[d].lang, window[w].docs[d].chunks): tuple(vecs)
                for (w, d), vecs in zip(todo, vectors, strict=True)}
        for prepared in window:
            for d in prepared.fresh:
                doc = prepared.docs[d]
                prepared.docs[d] = replace(doc, vectors=read[(doc.lang, doc.chunks)])

    def _refill_lost(self, prepared: _Prepared) -> None:
        """Embed the documents ``prepared`` was to reuse from the store that the store no longer
        holds: another file of the window (stored first) or another writer replaced the
        source that held them since ``prepared`` was read. Without this they would be stored
        with no vectors (until the engine's repair after the write)."""
        if self.embedder is None:
            return
        fresh = set(prepared.fresh)
        own = {prepared.docs[d].text_hash for d in fresh}  # a text twice in the source rides on its first
        reused = [d for d, doc in enumerate(prepared.docs) if d not in fresh and doc.text_hash not in own]
        if not reused:
            return
        known = self.store.known_text_hashes(prepared.record.org, prepared.record.agent, prepared.record.access,
                                             among={prepared.docs[d].text_hash for d in reused})
        lost = [d for d in reused if prepared.docs[d].text_hash not in known]
        if lost:
            for d in lost:  # read as a stored page, its language was never looked for: its model depends on it
                doc = prepared.docs[d]
                prepared.docs[d] = doc if doc.lang else replace(doc, lang=language_of(doc))
            self._fill_vectors([_Prepared(prepared.record, prepared.docs, lost)], progress=False)
            prepared.fresh.extend(lost)

    def _put(self, prepared: _Prepared) -> SourceOutcome:
        model_id = self.embedder.model_id if self.embedder is not None else ""
        return self.store.put_source(prepared.record, prepared.docs, model_id=model_id)

    def _chunks(self, doc: Document) -> list[Chunk]:
        return chunk_document(doc, self.parent_chars, self.child_chars, self.overlap)

    def _stored_vectors(self, window: Sequence[_Prepared]) -> dict[int, dict[tuple[str, str], np.ndarray]]:
        """For each source of ``window`` stored before (by its place in the window), the
        vectors this model read for the units of the stored documents its fresh ones replace
        (by ext_id) that may stand for theirs (:data:`electa.ingest.unit_vectors.REUSABLE`), by
        their document's language and what the model read. Copies: the source may be replaced
        or deleted meanwhile, and a vector stays right for the same text. A chain's vector is
        lent only where the half it fills is the one the unit's language reads with now (a
        document's language may have been read again since). Failing, it lends nothing: this
        only spares the model work."""
        if self.embedder is None:
            return {}
        try:
            wanted: dict[int, list[int]] = {}
            for w, prepared in enumerate(window):
                if not prepared.stored:  # (a first ingest has nothing to lend)
                    continue
                names = sorted({prepared.docs[d].ext_id for d in prepared.fresh
                                if any(c.kind in REUSABLE for c in prepared.docs[d].chunks)})
                if names:
                    record = prepared.record
                    wanted[w] = self.store.source_unit_ids(record.org, record.agent, record.uri, REUSABLE, names)
            ids = sorted({i for found in wanted.values() for i in found})
            if not ids:
                return {}
            units = self.store.units(ids)
            found, vecs = self.store.vectors_of(self.embedder.model_id, np.asarray(ids, dtype=np.int64))
            by_id = dict(zip(found.tolist(), vecs, strict=True))
            english = self.embedder.english.dim if isinstance(self.embedder, ChainEmbedder) else 0
            out: dict[int, dict[tuple[str, str], np.ndarray]] = {}
            for w, unit_ids in wanted.items():
                lent = out.setdefault(w, {})
                for uid in unit_ids:
                    unit, vec = units.get(uid), by_id.get(uid)
                    if unit is None or vec is None:  # (source_unit_ids returned REUSABLE kinds only)
                        continue
                    if unit.kind is ChunkKind.TITLE and unit.title != unit.title.strip():
                        continue  # (a title unit added later was read as written, not as embed_text reads it)
                    if english and bool(np.any(vec[:english])) != (unit.lang in ENGLISH):
                        continue  # (read by the other half's model than its language's now)
                    lent[(unit.lang, embed_text(Chunk(unit.kind, 0, unit.title, unit.text)))] = np.array(
                        vec, dtype=np.float32)
            return out
        except Exception:
            _log.warning("the stored vectors of the window's sources could not be read; its units are read anew",
                         exc_info=True)
            return {}

    def _embed(self, documents: list[list[Chunk]], langs: list[str], progress: bool,
               known: Sequence[Mapping[tuple[str, str], np.ndarray] | None] | None = None,
               ) -> list[list[np.ndarray | None]]:
        if self.embedder is None or not documents:
            return [[None] * len(chunks) for chunks in documents]
        bar = _progress(len(documents), "docs", progress and len(documents) > 16)
        start, shown = time.perf_counter(), 0

        def on_batch(done: int, total: int) -> None:
            nonlocal shown
            docs = len(documents) * done // total
            bar.update(docs - shown, docs, time.perf_counter() - start)
            shown = docs

        try:
            return unit_vectors(self.embedder, documents, self.recipe, on_batch, EMBED_BATCH, langs, known)
        finally:
            bar.close()


class _progress:
    """A tqdm bar on stderr that shows documents per second; silent when disabled."""

    def __init__(self, total: int, unit: str, enabled: bool) -> None:
        self._bar = None
        if enabled and total:
            from tqdm import tqdm

            self._bar = tqdm(total=total, unit=unit, file=sys.stderr, dynamic_ncols=True, leave=False)

    def update(self, n: int, docs: int, seconds: float) -> None:
        if self._bar is not None:
            self._bar.update(n)
            self._bar.set_postfix_str(f"{docs / seconds if seconds > 0 else 0:.1f} docs/s")

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()

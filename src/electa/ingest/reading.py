"""Which reading of a file a stored source holds, so that a better reader reaches stored pages.

A file is read again only when it changes: its SHA-256 is stored with its source, and an
unchanged file is skipped. So a release that reads a format better (a permalink mark no longer
quoted, a heading read as one) reached only the files edited since, and a help center ingested
once kept its old reading for good. The stored hash now carries the version of the reader that
read the file (``<sha256>@html-2``): a file whose reader's version differs from the one stored
is read again at its next ``electa ingest`` or ``electa sync``, as if it had changed. What reads
the same stays as it was: a document whose text is unchanged keeps its units and vectors (the
store keeps a document by its text), so a release that changes nothing in a file costs its
reading, not its embedding. A store written before these versions holds bare hashes, so its
files are all read again once.

``READERS`` holds each loader's version: bump a loader's number with any change to what it
reads out of a file (its documents' titles, text, sections, addresses, Q&A pairs), never for a
change that reads the same. ``tests/unit/test_reader_versions.py`` records a digest of the
readers' code beside these numbers and fails when the code changes until the digest is
recorded again, so that a change to a reader is a decision about its version.

Limits: a document whose text is unchanged keeps the units it was cut into, even where the new
reading sections it otherwise (the store keeps a document by its title and text), and a change
of chunker (``CHUNKER_VERSION``) or of chunk sizes reaches stored pages only with their text;
uploads (``POST /v1/sources``) are hashed by what was read, and no file is kept to read again.
"""

from __future__ import annotations

from electa.ingest.loaders import loader_for

READERS: dict[str, int] = {
    "load_markdown": 1,
    "load_html": 1,
    "load_rst": 1,
    "load_text": 1,
    "load_pdf": 1,
    "load_jsonl": 1,
    "load_json": 1,
    "load_csv": 1,
}


def reader_of(name: str) -> str:
    """The reader of a file named ``name`` and its version.

    >>> reader_of("guide/setup.md"), reader_of("README"), reader_of("faq.csv")
    ('markdown-1', 'text-1', 'csv-1')
    """
    loader = loader_for(name).__name__
    return f"{loader.removeprefix('load_')}-{READERS[loader]}"


def stamped(digest: str, name: str) -> str:
    """A file's stored hash: its bytes' ``digest`` and the reader that reads it.

    >>> stamped("ab12", "setup.md")
    'ab12@markdown-1'
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

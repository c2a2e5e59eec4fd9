"""HTML pages that ask not to be indexed (``<meta name="robots" content="noindex">``) are left
out of a folder's ingest: found on Rust's books, where mdBook's print page (every chapter again,
on one page), its table of contents and pages that only say a chapter moved ask so, and the
print page's sections stood beside the chapters' own (:func:`electa.ingest.loaders.asks_not_indexed`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from electa import Access, Caller, Engine

ACME = Access("acme")
CHAPTER = "<html><head><title>Locks</title></head><body><h1>Locks</h1><p>Cargo.lock pins every version.</p></body></html>"
PRINT = ('<html><head><meta name="robots" content="noindex"><title>Book</title></head><body><h1>Locks</h1>'
         "<p>Cargo.lock pins every version.</p><h1>Workspaces</h1><p>A workspace shares one lock file.</p></body></html>")


def _book(root: Path) -> Path:
    folder = root / "book"
    folder.mkdir()
    (folder / "locks.html").write_text(CHAPTER, encoding="utf-8")
    (folder / "print.html").write_text(PRINT, encoding="utf-8")
    return folder


def _urls(engine: Engine) -> set[str]:
    return {str(s["uri"]) for s in engine.store.list_sources("acme")}


def test_a_page_asking_not_to_be_indexed_is_left_out_unless_asked_for(engine: Engine, tmp_path: Path) -> None:
    folder = _book(tmp_path)
    report = engine.ingest([folder], ACME)
    assert _urls(engine) == {"book/locks.html"}
    assert report.unindexed == [str(folder / "print.html")] and not report.failures
    hits = engine.search("workspace lock file", Caller("acme"), legs=["fulltext"]).hits
    assert {h.url for h in hits} <= {"", "book/locks.html"} and all("print" not in h.title for h in hits)
    assert engine.ingest([folder], ACME, read_noindex=True).counts()["added"] == 1
    assert _urls(engine) == {"book/locks.html", "book/print.html"}


def test_a_sync_deletes_a_stored_page_that_asks_not_to_be_indexed(engine: Engine, tmp_path: Path) -> None:
    folder = _book(tmp_path)
    engine.sync([folder], ACME, read_noindex=True)
    assert _urls(engine) == {"book/locks.html", "book/print.html"}
    report = engine.sync([folder], ACME)
    assert report.deleted == ["book/print.html"] and _urls(engine) == {"book/locks.html"}


def test_the_command_says_what_was_left_out(capsys: pytest.CaptureFixture[str]) -> None:
    from electa.cli.main import _print_report
    from electa.ingest.pipeline import IngestReport

    _print_report(IngestReport(unindexed=["book/print.html", "book/toc.html"]))
    assert ('left out: 2 HTML pages asking not to be indexed (<meta name="robots" content="noindex">), such as'
            " book/print.html; --read-noindex reads them") in capsys.readouterr().err

"""HTML pages that ask not to be indexed (``<meta name="robots" content="noindex">``) are not
stored by a folder's ingest: found on Rust's books, where mdBook's print page (every chapter
again, on one page), its table of contents and pages that only say a chapter moved ask so, and
the print page's sections stood beside the chapters' own
(:func:`electa.ingest.html_page.asks_not_indexed`). Nothing is ever deleted for it: a site that
asks it of every page (an intranet's, kept out of public search engines) must not vanish at a
nightly sync (the review of 2170202)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from electa import Access, Caller, Engine
from tests.conftest import folder_of

ACME = Access("acme")
CHAPTER = "<html><head><title>Locks</title></head><body><h1>Locks</h1><p>Cargo.lock pins every version.</p></body></html>"
PRINT = ('<html><head><meta name="robots" content="noindex"><title>Book</title></head><body><h1>Locks</h1>'
         "<p>Cargo.lock pins every version.</p><h1>Workspaces</h1><p>A workspace shares one lock file.</p></body></html>")


def _book(root: Path) -> Path:
    return folder_of(root, "book", {"locks.html": CHAPTER, "print.html": PRINT})


def _sources(engine: Engine) -> set[str]:
    return {str(s["uri"]) for s in engine.store.list_sources("acme")}


def test_a_page_asking_not_to_be_indexed_is_not_stored_unless_asked_for(engine: Engine, tmp_path: Path) -> None:
    folder = _book(tmp_path)
    report = engine.ingest([folder], ACME)
    assert _sources(engine) == {"book/locks.html"}
    assert report.unindexed == [str(folder / "print.html")] and not report.failures and not report.unindexed_stored
    assert engine.ingest([folder], ACME, read_noindex=True).counts()["added"] == 1
    assert _sources(engine) == {"book/locks.html", "book/print.html"}


def test_a_page_named_alone_is_read_whatever_it_asks(engine: Engine, tmp_path: Path) -> None:
    folder = _book(tmp_path)
    report = engine.ingest([folder / "print.html"], ACME)
    assert report.counts()["added"] == 1 and not report.unindexed


def _newer_html_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    from electa.ingest.reading import READERS

    monkeypatch.setitem(READERS, "load_html", READERS["load_html"] + 1)


def test_nothing_stored_is_deleted_for_asking_not_to_be_indexed(
        engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _book(tmp_path)
    engine.sync([folder], ACME, read_noindex=True)
    report = engine.sync([folder], ACME)  # (stored by this reader: unchanged, kept)
    assert not report.deleted and not report.unindexed and _sources(engine) == {"book/locks.html", "book/print.html"}
    _newer_html_reader(monkeypatch)  # as after an upgrade: every page read again
    report = engine.sync([folder], ACME)
    assert not report.deleted and _sources(engine) == {"book/locks.html", "book/print.html"}
    assert report.unindexed_stored == ["book/print.html"]
    # Kept up to date, not frozen: an edit of the stored page reaches the store.
    (folder / "print.html").write_text(PRINT.replace("one lock file", "a single lock file"), encoding="utf-8")
    report = engine.sync([folder], ACME)
    assert report.unindexed_stored == ["book/print.html"] and report.counts()["updated"] == 1
    assert any("a single lock file" in h.text for h in engine.search("single lock file", Caller("acme")).hits)


def test_a_page_of_no_text_asking_not_to_be_indexed_is_left_out_not_failed(engine: Engine, tmp_path: Path) -> None:
    folder = _book(tmp_path)
    (folder / "moved.html").write_text('<html><head><meta name="robots" content="noindex,follow"><meta'
                                       ' http-equiv="refresh" content="0; url=locks.html"></head><body></body></html>',
                                       encoding="utf-8")
    report = engine.ingest([folder], ACME)
    assert not report.failures and report.unindexed == [str(folder / "print.html")]
    assert report.moved == [str(folder / "moved.html")]  # (it moved: what it asks of robots changes nothing)


def test_the_command_says_what_it_left_out_and_fails_when_that_was_all(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from electa.cli.main import cli

    folder = _book(tmp_path)
    data = ["--data", str(tmp_path / "data"), "--embedder", "hash", "--org", "acme", "--no-progress"]
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "print.html").write_text(PRINT, encoding="utf-8")
    out = CliRunner().invoke(cli, ["ingest", str(alone), *data])
    assert out.exit_code == 1 and "left out: 1 HTML page" in out.output, out.output  # all it held: it says so
    out = CliRunner().invoke(cli, ["ingest", str(folder), *data])
    assert out.exit_code == 0, out.output
    assert ('left out: 1 HTML page asking not to be indexed (<meta name="robots" content="noindex">), such as'
            f" {folder / 'print.html'}; --read-noindex reads them") in out.output
    (folder / "locks.html").unlink()
    out = CliRunner().invoke(cli, ["sync", str(folder), *data])
    assert out.exit_code == 1, out.output  # nothing but pages left out: a cron job must see it
    assert "deleted: book/locks.html (its file is gone)" in out.output
    out = CliRunner().invoke(cli, ["ingest", str(folder), *data, "--read-noindex"])
    assert out.exit_code == 0 and "1 added" in out.output, out.output
    _newer_html_reader(monkeypatch)
    out = CliRunner().invoke(cli, ["sync", str(folder), *data])
    assert ("1 of them was stored by an earlier reading and is kept up to date, such as book/print.html"
            in out.output), out.output


@pytest.mark.parametrize("name", ["print.html", "print.html.gz"])
def test_the_decision_is_the_parsed_heads(engine: Engine, tmp_path: Path, name: str) -> None:
    import gzip

    folder = tmp_path / "site"
    folder.mkdir()
    page = (b'<html><head><!-- <meta name="robots" content="noindex"> --><script>var m = \'<meta name="robots"'
            b' content="noindex">\';</script><title>FAQ</title></head><body><h1>FAQ</h1><p>Refunds in 30 days.</p>'
            b'<meta name="robots" content="noindex"></body></html>')
    (folder / name).write_bytes(gzip.compress(page) if name.endswith(".gz") else page)
    (folder / "asks.html.gz").write_bytes(gzip.compress(PRINT.encode()))
    report = engine.ingest([folder], ACME)
    assert _sources(engine) == {f"site/{name}"} and report.unindexed == [str(folder / "asks.html.gz")]

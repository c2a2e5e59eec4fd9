"""Pages that only send their visitor to another (a meta refresh) are not stored by a folder's
ingest, as a search engine indexes where they lead (electa.text.refresh). Found trying Rust's
documentation, where rustdoc writes 15,626 such pages ("Redirection: Redirecting to
macro.is_x86_feature_detected.html..."), and pip's, whose moved pages say "This page has moved"
(``.. meta:: :http-equiv=refresh: 3; url=../../cli/pip_freeze/``) and were cited in answers."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from electa import Access, Caller, Engine
from electa.ingest.loaders import loader_for
from tests.conftest import folder_of

ACME = Access("acme")
RUSTDOC = ('<!DOCTYPE html>\n<html lang="en">\n<head>\n    <meta http-equiv="refresh" content="0;URL=struct.Vec.html">\n'
           "    <title>Redirection</title>\n</head>\n<body>\n"
           '    <p>Redirecting to <a href="struct.Vec.html">struct.Vec.html</a>...</p>\n'
           '    <script>location.replace("struct.Vec.html" + location.search + location.hash);</script>\n</body>\n</html>')
VEC = "<html><head><title>Vec</title></head><body><h1>Vec</h1><p>A contiguous growable array type.</p></body></html>"
PIP_MOVED = b""":orphan:

.. meta::

  :http-equiv=refresh: 3; url=../../cli/pip_freeze/

This page has moved
===================

You should be redirected automatically in 3 seconds. If that didn't
work, here's a link: :doc:`../cli/pip_freeze`
"""
FREEZE = b"pip freeze\n==========\n\nOutput installed packages in requirements format.\n"
RELOADS = ('<html><head><meta http-equiv="refresh" content="300"><title>Status</title></head>'
           "<body><h1>Status</h1><p>Every service is up.</p></body></html>")


def _sources(engine: Engine) -> set[str]:
    return {str(s["uri"]) for s in engine.store.list_sources("acme")}


def test_a_folders_moved_pages_are_left_out_and_said(engine: Engine, tmp_path: Path) -> None:
    folder = folder_of(tmp_path, "docs", {"vec.html": VEC, "Vec.t.html": RUSTDOC, "status.html": RELOADS})
    (folder / "reference").mkdir()
    (folder / "reference" / "pip_freeze.rst").write_bytes(PIP_MOVED)
    (folder / "freeze.rst").write_bytes(FREEZE)
    report = engine.ingest([folder], ACME)
    assert _sources(engine) == {"docs/vec.html", "docs/status.html", "docs/freeze.rst"}
    assert sorted(report.moved) == [str(folder / "Vec.t.html"), str(folder / "reference" / "pip_freeze.rst")]
    assert not report.failures and not report.unindexed
    assert [h.title for h in engine.search("Redirecting struct Vec", Caller("acme")).hits][:1] == ["Vec"]


def test_a_moved_page_named_alone_is_read(engine: Engine, tmp_path: Path) -> None:
    folder = folder_of(tmp_path, "docs", {"Vec.t.html": RUSTDOC})
    report = engine.ingest([folder / "Vec.t.html"], ACME)
    assert report.counts()["added"] == 1 and not report.moved


def test_the_loaders_say_where_a_stub_moved_and_read_a_page_as_it_stands() -> None:
    """The review of fdc46e1: a page with real text that also refreshes (a session's timeout, a
    status page reloading itself, a refresh inside <noscript>) was left out as moved."""
    assert loader_for("std/Vec.t.html")("std/Vec.t.html", RUSTDOC.encode()).moved_to == "struct.Vec.html"
    assert loader_for("reference/pip_freeze.rst")("reference/pip_freeze.rst", PIP_MOVED).moved_to == "../../cli/pip_freeze/"
    standard = b".. meta::\n   :http-equiv=refresh: 0; url=new.html\n\nMoved.\n"  # (fields right under it)
    assert loader_for("old.rst")("old.rst", standard).moved_to == "new.html"
    text = "<p>" + "Every service is up, and each one's latency is under its target. " * 8 + "</p>"
    for page in (VEC, RELOADS,
                 f'<html><head><meta http-equiv="refresh" content="55; url=/login?expired=1"></head><body>{text}</body></html>',
                 '<html><head><meta http-equiv="refresh" content="30; url=status.html"></head><body><p>Up.</p></body></html>',
                 '<html><head><noscript><meta http-equiv="refresh" content="0; url=/nojs/"></noscript></head>'
                 "<body><p>Install it with one command.</p></body></html>"):
        assert loader_for("site/status.html")("site/status.html", page.encode()).moved_to == "", page
    guide = b".. meta::\n\n   :http-equiv=refresh: 10; url=new/\n\nGuide\n=====\n\n" + b"Install it, then run it. " * 40
    assert loader_for("guide.rst")("guide.rst", guide).moved_to == ""


@pytest.mark.parametrize("name", ["moved.html", "moved.rst"])
def test_a_hostile_refresh_reads_in_linear_time(name: str) -> None:
    """The review of fdc46e1: a refresh of 128,000 spaces took 42.6 s to read (the pattern backtracked)."""
    import time

    spaces = " " * 100_000  # (enough for a quadratic reading to take minutes, not hours: a regression fails)
    page = (f'<html><head><meta http-equiv="refresh" content="0{spaces}x"></head><body><p>Moved.</p></body></html>'
            if name.endswith(".html") else f".. meta::\n\n   :http-equiv=refresh: 0{spaces}x\n\nMoved.\n")
    started = time.perf_counter()
    loader_for(name)(name, page.encode())
    assert time.perf_counter() - started < 5  # (linear: about 0.02 s here; fdc46e1's pattern took minutes)
    from electa.text.refresh import refresh_target

    started = time.perf_counter()
    refresh_target("0" + " " * 64_000 + "x")
    assert time.perf_counter() - started < 1  # (fdc46e1's pattern: about 10 s here)


def test_a_stub_of_no_text_named_alone_says_where_it_leads(engine: Engine, tmp_path: Path) -> None:
    folder = folder_of(tmp_path, "docs", {"gone.html": '<html><head><meta http-equiv="refresh" content="0; url=new.html">'
                                                       "</head><body></body></html>"})
    report = engine.ingest([folder / "gone.html"], ACME)
    assert report.failures == [(str(folder / "gone.html"),
                                "it holds no text: it only sends its visitor to 'new.html'; ingest that page")]


def test_the_command_says_what_it_left_out(tmp_path: Path) -> None:
    from electa.cli.main import cli

    folder = folder_of(tmp_path, "docs", {"vec.html": VEC, "Vec.t.html": RUSTDOC})
    data = ["--data", str(tmp_path / "data"), "--embedder", "hash", "--org", "acme", "--no-progress"]
    out = CliRunner().invoke(cli, ["ingest", str(folder), *data])
    assert out.exit_code == 0, out.output
    assert ("left out: 1 page that only sends the visitor to another (a meta refresh), such as"
            f" {folder / 'Vec.t.html'}; their text is the pages they name") in out.output
    alone = folder_of(tmp_path, "moved", {"Vec.t.html": RUSTDOC})
    out = CliRunner().invoke(cli, ["ingest", str(alone), *data])
    assert out.exit_code == 1 and "left out: 1 page that only sends" in out.output, out.output  # all it held


def test_a_page_stored_before_it_moved_is_named_by_ingest_and_deleted_by_sync(tmp_path: Path) -> None:
    """What a page said before it moved is no longer in its folder: a sync deletes it as it
    deletes a file that is gone; an ingest deletes nothing and says so (the review of fdc46e1
    found it "kept up to date" while every sync failed it, its old text still served)."""
    from electa.cli.main import cli

    folder = folder_of(tmp_path, "docs", {"vec.html": VEC, "Vec.t.html": VEC.replace("Vec<", "Vec (old name)<")})
    data = ["--data", str(tmp_path / "data"), "--embedder", "hash", "--org", "acme", "--no-progress"]
    out = CliRunner().invoke(cli, ["sync", str(folder), *data])
    assert out.exit_code == 0 and "2 added" in out.output, out.output
    (folder / "Vec.t.html").write_text(RUSTDOC, encoding="utf-8")  # the page moved
    out = CliRunner().invoke(cli, ["ingest", str(folder), *data])
    assert out.exit_code == 0 and "0 deleted, 0 failed" in out.output, out.output
    assert ("1 of them was stored by an earlier reading and is kept as stored, such as docs/Vec.t.html:"
            " a `sync` of their folder, listed whole, deletes them") in out.output, out.output
    out = CliRunner().invoke(cli, ["sync", str(folder), *data])
    assert out.exit_code == 0 and "1 deleted, 0 failed" in out.output, out.output
    assert "deleted: docs/Vec.t.html (it only sends the visitor to another page now)" in out.output, out.output
    out = CliRunner().invoke(cli, ["sources", "list", *data[:2], "--org", "acme"])
    assert "Vec.t.html" not in out.output and "vec.html" in out.output, out.output


def test_a_stub_refreshing_itself_by_another_spelling_is_read_and_never_deleted(tmp_path: Path) -> None:
    """The second review of fdc46e1: a short status page refreshing to "./" was deleted by sync
    as moved. Where the page's own address cannot be told apart it is taken for the page's own."""
    from electa.cli.main import cli

    pages = {f"status{n}/index.html": f'<html><head><meta http-equiv="refresh" content="30; url={target}"></head>'
             "<body><h1>Status</h1><p>Every service is up.</p></body></html>"
             for n, target in enumerate(("./", ".", "/docs/status2/index.html", "https://x.org/status3/INDEX.html",
                                         "index%2Ehtml", "javascript:location.reload()"))}
    folder = folder_of(tmp_path, "docs", {})
    for name, page in pages.items():
        (folder / name).parent.mkdir()
        (folder / name).write_text(page, encoding="utf-8")
    data = ["--data", str(tmp_path / "data"), "--embedder", "hash", "--org", "acme", "--no-progress"]
    for _ in range(2):
        out = CliRunner().invoke(cli, ["sync", str(folder), *data])
        assert out.exit_code == 0 and "left out" not in out.output and "0 deleted" in out.output, out.output
    out = CliRunner().invoke(cli, ["sources", "list", *data[:2], "--org", "acme"])
    assert all(f"status{n}/index.html" in out.output for n in range(6)), out.output



def test_a_source_page_refreshing_to_its_own_built_page_is_no_moved_page() -> None:
    """The third review: a reStructuredText status page refreshing to ``status.html`` (or, built
    one folder a page, to ``../status/``) was taken for moved, and sync would delete it."""
    for target in ("status.html", "../status/", "./", "status"):
        page = f".. meta::\n\n   :http-equiv=refresh: 30; url={target}\n\nStatus\n======\n\nEvery service is up.\n"
        assert loader_for("ops/status.rst")("ops/status.rst", page.encode()).moved_to == "", target


FAQ_INDEX = "==========\nDjango FAQ\n==========\n\n.. toctree::\n   :maxdepth: 2\n\n   general\n   install\n"
FAQ_GENERAL = "============\nFAQ: General\n============\n\nWhy does this project exist? See :doc:`install`.\n"


def test_a_folders_tables_of_contents_are_left_out_and_one_stored_before_is_deleted_by_sync(tmp_path: Path) -> None:
    """Django's index pages are a title over a toctree: read as reStructuredText they hold no
    text. Each ingest and sync failed them, and the plain-text reading an earlier release stored
    ("Django FAQ … .. toctree:: … general install") stayed searchable."""
    from electa.cli.main import cli

    folder = tmp_path / "docs"
    folder.mkdir()
    folder_of(folder, "faq", {"general.txt": FAQ_GENERAL, "index.txt": "Django FAQ: general, install."})
    data = ["--data", str(tmp_path / "data"), "--embedder", "hash", "--org", "acme", "--no-progress"]
    out = CliRunner().invoke(cli, ["sync", str(folder), *data])
    assert out.exit_code == 0 and "2 added" in out.output, out.output
    (folder / "faq" / "index.txt").write_text(FAQ_INDEX, encoding="utf-8")  # (as a release that reads it so sees it)
    out = CliRunner().invoke(cli, ["ingest", str(folder), *data])
    assert out.exit_code == 0 and "0 deleted, 0 failed" in out.output, out.output
    assert ("left out: 1 page that is only a table of contents of others (a toctree), such as"
            f" {folder / 'faq' / 'index.txt'}; their text is in their own files") in out.output, out.output
    assert "is kept as stored, such as docs/faq/index.txt" in out.output, out.output
    out = CliRunner().invoke(cli, ["sync", str(folder), *data])
    assert out.exit_code == 0 and "1 deleted, 0 failed" in out.output, out.output
    assert "deleted: docs/faq/index.txt (it is only a table of contents of other pages now)" in out.output, out.output
    out = CliRunner().invoke(cli, ["sync", str(folder), *data])  # (and then it is only left out, nothing failed)
    assert out.exit_code == 0 and "0 deleted, 0 failed" in out.output and "left out: 1 page" in out.output, out.output
    alone = folder_of(tmp_path, "alone", {"index.txt": FAQ_INDEX})
    out = CliRunner().invoke(cli, ["ingest", str(alone / "index.txt"), *data])  # (named alone: refused, said)
    assert out.exit_code == 1 and "it is a table of contents (a toctree) of other pages" in out.output, out.output


@pytest.mark.parametrize(("name", "page"), [
    ("api.rst", "API\n===\n\n.. autoclass:: Client\n\n   Use a Client to talk to the billing server.\n\n"
                ".. toctree::\n\n   install\n"),
    ("prices.rst", "Prices\n======\n\n.. csv-table::\n   :file: prices.csv\n\n.. toctree::\n\n   install\n"),
    ("flow.rst", "Flow\n====\n\n.. graphviz::\n\n   digraph { a -> b }\n\n.. toctree::\n\n   install\n"),
    ("logo.rst", "Logo\n====\n\n.. image:: logo.png\n\n.. toctree::\n\n   install\n"),
    ("todo.txt", "=====\nTodos\n=====\n\n.. todolist::\n\n.. toctree::\n\n   install\n"),
    ("api.md", "# API\n\n```{autoclass} Client\nUse a Client to talk to the billing server.\n```\n\n"
               "```{toctree}\ninstall\n```\n"),
    ("api2.md", "# API\n\n```{eval-rst}\n.. automodule:: billing\n   :members:\n```\n\n```{toctree}\ninstall\n```\n"),
])
def test_what_the_review_found_a_page_showing_what_is_not_read_is_no_table_of_contents(name: str, page: str) -> None:
    """The third review: a page whose text Sphinx builds (an autodoc class's text, a table read
    from a file, a diagram, an image with no alt text) beside a toctree read as "only a table of
    contents", and a sync deleted the stored page that held its text. It fails, and a sync
    keeps what was stored."""
    from electa.errors import ContentsOnly, IngestError

    with pytest.raises(IngestError) as refused:
        loader_for(name)(name, page.encode())
    assert not isinstance(refused.value, ContentsOnly)
    index = "Index\n=====\n\n.. meta::\n   :description: x\n\n.. index:: api\n\n.. toctree::\n\n   install\n"
    with pytest.raises(ContentsOnly):  # (what no visitor sees beside a toctree leaves it a table of contents)
        loader_for("index.rst")("index.rst", index.encode())

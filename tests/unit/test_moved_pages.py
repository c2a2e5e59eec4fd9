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


@pytest.mark.parametrize("name, data", [("moved.html", RUSTDOC.encode()), ("moved.rst", PIP_MOVED)])
def test_the_loaders_say_where_a_page_moved(name: str, data: bytes) -> None:
    assert loader_for(name)(name, data).moved_to in ("struct.Vec.html", "../../cli/pip_freeze/")
    assert loader_for("vec.html")("vec.html", VEC.encode()).moved_to == ""
    assert loader_for("status.html")("status.html", RELOADS.encode()).moved_to == ""


def test_the_command_says_what_it_left_out(tmp_path: Path) -> None:
    from electa.cli.main import cli

    folder = folder_of(tmp_path, "docs", {"vec.html": VEC, "Vec.t.html": RUSTDOC})
    data = ["--data", str(tmp_path / "data"), "--embedder", "hash", "--org", "acme", "--no-progress"]
    out = CliRunner().invoke(cli, ["ingest", str(folder), *data])
    assert out.exit_code == 0, out.output
    assert ("left out: 1 page that only sends the visitor to another (a meta refresh), such as"
            f" {folder / 'Vec.t.html'}; name one to read it") in out.output


def test_a_page_stored_before_it_moved_is_kept_up_to_date_and_a_folder_of_them_fails(tmp_path: Path) -> None:
    from electa.cli.main import cli

    folder = folder_of(tmp_path, "docs", {"vec.html": VEC, "Vec.t.html": VEC.replace("Vec<", "Vec (old name)<")})
    data = ["--data", str(tmp_path / "data"), "--embedder", "hash", "--org", "acme", "--no-progress"]
    out = CliRunner().invoke(cli, ["sync", str(folder), *data])
    assert out.exit_code == 0 and "2 added" in out.output, out.output
    (folder / "Vec.t.html").write_text(RUSTDOC, encoding="utf-8")  # the page moved
    out = CliRunner().invoke(cli, ["sync", str(folder), *data])
    assert out.exit_code == 0 and "1 updated" in out.output and "0 deleted" in out.output, out.output
    assert ("1 of them was stored by an earlier reading and is kept up to date, such as docs/Vec.t.html"
            in out.output), out.output
    alone = folder_of(tmp_path, "moved", {"Vec.t.html": RUSTDOC})
    out = CliRunner().invoke(cli, ["ingest", str(alone), *data])
    assert out.exit_code == 1 and "left out: 1 page that only sends" in out.output, out.output  # all it held

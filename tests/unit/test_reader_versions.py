"""A better reader reaches pages already stored (electa.ingest.reading): an unchanged file is
read again when the reader that stored it was another version. Found upgrading as a newcomer
would: the permalink marks and setext headings the readers learned to read stayed in every
stored page, since an unchanged file was never read again."""

from __future__ import annotations

import ast
import hashlib
import sys
from pathlib import Path

import pytest

import electa
from electa import Access, Caller, Engine
from electa.errors import IngestError
from electa.ingest import html_page, loaders, markup, page, pipeline
from tests.conftest import folder_of

ACME = Access("acme")
REFUNDS = "# Refund policy\n\nAnnual plans are refunded within 30 days.\n\n## Monthly plans\n\nNo refunds.\n"
LOGO = "<html><body><h1>Logo</h1><p>Upload a logo in PNG format.</p></body></html>"


def _folder(root: Path) -> Path:
    return folder_of(root, "help", {"refunds.md": REFUNDS, "logo.html": LOGO})


def _texts(engine: Engine) -> set[str]:
    hits = engine.search("refund policy annual plans logo", Caller("acme"), legs=["fulltext"], top=20).hits
    return {h.text for h in hits}


def _older_release(monkeypatch: pytest.MonkeyPatch) -> None:
    """Read Markdown as a release before did (here: one that kept a mark in every page), and
    stamp hashes as releases before readers had versions did: the file's SHA-256 alone."""
    original = pipeline.loader_for

    def older(name: str) -> page.Loader:
        loader = original(name)
        if loader is not markup.load_markdown:
            return loader
        return lambda uri, data: loader(uri, data.replace(b"30 days.", b"30 days. \xc2\xb6"))

    monkeypatch.setattr(pipeline, "loader_for", older)
    monkeypatch.setattr(pipeline, "stamped", lambda digest, *_: digest, raising=False)


def test_a_file_stored_by_an_older_reader_is_read_again_though_it_is_unchanged(
        engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _folder(tmp_path)
    with monkeypatch.context() as older:
        _older_release(older)
        engine.ingest([folder], ACME)
    assert any("\u00b6" in text for text in _texts(engine))
    report = engine.ingest([folder], ACME)  # the files are as they were; the reader is not
    assert any("\u00b6" not in text and "30 days" in text for text in _texts(engine))
    assert not any("\u00b6" in text for text in _texts(engine))
    # Both read again; the page that reads otherwise is updated, the one that reads the same not.
    assert sorted((o.uri, o.status) for o in report.reread) == [("help/logo.html", "unchanged"),
                                                                ("help/refunds.md", "updated")]
    again = engine.ingest([folder], ACME)
    assert again.counts()["unchanged"] == 2 and not again.reread


def test_a_page_that_reads_the_same_keeps_its_units_and_vectors(
        engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _folder(tmp_path)
    engine.ingest([folder], ACME)
    before = {h.text: h.unit_id for h in engine.search("logo PNG", Caller("acme"), legs=["fulltext"], top=20).hits}
    monkeypatch.setitem(electa.ingest.reading.READERS, "load_html", electa.ingest.reading.READERS["load_html"] + 1)
    embedded: list[str] = []
    embed = engine.embedder.embed  # type: ignore[union-attr]
    monkeypatch.setattr(engine.embedder, "embed", lambda texts: embedded.extend(texts) or embed(texts))
    stored = engine.store.source("acme", "default", "help/logo.html")
    assert stored is not None
    when = engine.store.source_updated("acme", [int(stored["id"])])
    report = engine.ingest([folder], ACME)
    assert [(o.uri, o.status) for o in report.reread] == [("help/logo.html", "unchanged")]  # HTML's reader moved
    assert report.counts() == {"added": 0, "updated": 0, "unchanged": 2, "failed": 0, "deleted": 0}
    after = {h.text: h.unit_id for h in engine.search("logo PNG", Caller("acme"), legs=["fulltext"], top=20).hits}
    assert after == before and embedded == []  # read again, the same text: nothing embedded, nothing moved
    # Nor does its version or last change (which recency reads) move; its new hash is recorded.
    again = engine.store.source("acme", "default", "help/logo.html")
    assert again is not None and again["version"] == stored["version"]
    assert engine.store.source_updated("acme", [int(stored["id"])]) == when
    assert not engine.ingest([folder], ACME).reread


def test_a_text_file_read_as_restructuredtext_is_read_again_when_that_reader_moves(
        engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ".txt" file that is a reStructuredText page (Django's sources) is read by that reader:
    its version is part of the text reader's, or a release changing it left such pages as an
    older one read them (found syncing Django's docs across this session's own changes)."""
    folder = folder_of(tmp_path, "docs", {"settings.txt": "========\nSettings\n========\n\nSee :setting:`DEBUG`.\n"})
    engine.ingest([folder], ACME)
    monkeypatch.setitem(electa.ingest.reading.READERS, "load_rst", electa.ingest.reading.READERS["load_rst"] + 1)
    report = engine.ingest([folder], ACME)
    assert [(o.uri, o.status) for o in report.reread] == [("docs/settings.txt", "unchanged")]


def test_a_file_whose_new_reading_fails_keeps_its_stored_reading_and_is_not_counted(
        engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _folder(tmp_path)
    engine.ingest([folder], ACME)
    monkeypatch.setitem(electa.ingest.reading.READERS, "load_html", electa.ingest.reading.READERS["load_html"] + 1)
    original = pipeline.loader_for

    def fail(uri: str, data: bytes) -> page.Loaded:
        raise IngestError(uri, "the new reader cannot read it")

    def broken(name: str) -> page.Loader:
        return fail if original(name) is html_page.load_html else original(name)

    monkeypatch.setattr(pipeline, "loader_for", broken)
    report = engine.ingest([folder], ACME)
    assert report.counts()["failed"] == 1 and not report.reread
    assert "the reading an earlier release stored is kept" in report.failures[0][1]
    assert any("PNG" in text for text in _texts(engine))  # the stored reading stays


def test_every_loader_has_a_version() -> None:
    from electa.ingest.reading import READERS

    assert {f.__name__ for f in loaders.LOADERS.values()} | {"load_text"} == set(READERS)


def test_the_command_says_how_many_files_were_read_again(capsys: pytest.CaptureFixture[str]) -> None:
    from electa.cli.main import _print_report
    from electa.ingest.pipeline import IngestReport
    from electa.stores.protocol import SourceOutcome

    done = [SourceOutcome("a.md", "updated", 2, 1), SourceOutcome("b.md", "unchanged", 1, 1)]
    _print_report(IngestReport(outcomes=done, reread=done))
    assert "read again: 2 unchanged files this release reads with another reader than stored them; 1 read" \
           " otherwise (updated), 1 the same" in capsys.readouterr().out


def test_a_change_to_a_readers_code_is_a_decision_about_its_version() -> None:
    """The readers' code (docstrings and comments aside) against the digest recorded with
    ``READERS``. When this fails: if any file reads otherwise now (a title, text, section,
    address or Q&A pair), bump that loader's number in ``electa.ingest.reading.READERS`` (stores
    read such files again at their next ingest or sync); then record the digest printed below,
    and the numbers, here."""
    from electa.ingest.reading import READERS

    if sys.version_info[:2] != RECORDED_PYTHON:
        pytest.skip(f"the digest was recorded under Python {RECORDED_PYTHON}")
    root = Path(electa.__file__).parent
    digest = hashlib.sha256()
    for rel in READER_MODULES:
        tree = ast.parse((root / rel).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if (isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and body
                    and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)):
                node.body = body[1:] or [ast.Pass()]
        digest.update(f"{rel}\n{ast.dump(tree)}\n".encode())
    assert (digest.hexdigest(), READERS) == (RECORDED_DIGEST, RECORDED_READERS), digest.hexdigest()


READER_MODULES = ("ingest/loaders.py", "ingest/page.py", "ingest/markup.py", "ingest/html_page.py",
                  "ingest/records.py", "ingest/html_text.py", "ingest/decode.py", "ingest/figures.py",
                  "ingest/apart.py", "text/markdown.py", "text/myst.py", "text/refresh.py", "text/rst.py",
                  "text/rst_inline.py", "text/__init__.py", "types.py")
# Modules the readers import whose code cannot change what a file reads as, and why.
NOT_READING = {"errors.py": "the exceptions a reader raises: their messages, never a page's reading"}


def _imported(rel: str, root: Path) -> set[str]:
    """The modules of this package that the module at ``rel`` imports (anywhere in it), as paths."""
    found = set()
    for node in ast.walk(ast.parse((root / rel).read_text(encoding="utf-8"))):
        names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)] \
            if isinstance(node, ast.ImportFrom) and node.module else \
            [a.name for a in node.names] if isinstance(node, ast.Import) else []
        for name in names:
            if name.split(".")[0] != "electa":
                continue
            path = root.joinpath(*name.split(".")[1:])
            for candidate in (path.with_suffix(".py"), path / "__init__.py"):
                if candidate.is_file():
                    found.add(candidate.relative_to(root).as_posix())
    return found


def test_the_digest_covers_every_module_the_readers_import() -> None:
    """Found reviewing the readers' split: the digest read only the modules it listed, and the
    readers also import ``electa.text`` (``fold``, ``tokens``) and ``electa.types`` (``Document``,
    ``Section``), so a change there could read files otherwise with no version moved."""
    root = Path(electa.__file__).parent
    seen: set[str] = set()
    todo = list(READER_MODULES)
    while todo:
        rel = todo.pop()
        if rel not in seen:
            seen.add(rel)
            todo.extend(_imported(rel, root) - seen)
    assert sorted(seen - set(READER_MODULES) - set(NOT_READING)) == []
RECORDED_DIGEST = "e74f2ce44c7d926d1ff3a26269b2e7a7f18b334475f9b7922cd5e002951a18e3"
RECORDED_PYTHON = (3, 11)  # (ast.dump writes trees otherwise from one Python to the next)
RECORDED_READERS = {"load_markdown": 7, "load_html": 9, "load_rst": 5, "load_text": 3, "load_pdf": 1,
                    "load_jsonl": 1, "load_json": 1, "load_csv": 1}

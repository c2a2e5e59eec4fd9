"""Sources named by where they sit in their folder, a sync that mirrors a folder, access
changes that re-stamp, and gzip that cannot inflate past the limit (issue 8, defect 9)."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from electa import Access, Caller, Engine
from electa.errors import IngestError
from electa.ingest.pipeline import gunzip_limited, read_source


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def kb(root: Path) -> Path:
    folder = root / "help-center"
    write(folder / "refunds.md", "# Refund policy\nAnnual plans are refunded within 30 days.\n")
    write(folder / "billing" / "invoices.md", "# Invoices\nInvoices are sent on the first of the month.\n")
    return folder


def name_by_absolute_paths(engine: Engine, root: Path) -> None:
    """Rename the stored sources as an older Electa named them: by absolute path."""
    with engine.store.transaction() as con:
        for uri in uris(engine):
            con.execute("UPDATE sources SET uri=? WHERE uri=?", (str((root / uri).resolve()), uri))


def uris(engine: Engine, org: str = "acme") -> list[str]:
    return [str(s["uri"]) for s in engine.store.list_sources(org)]


def test_sources_are_named_under_their_folder_never_by_server_path(engine: Engine, tmp_path: Path) -> None:
    folder = kb(tmp_path / "srv")
    engine.ingest([folder], Access("acme"))
    assert uris(engine) == ["help-center/billing/invoices.md", "help-center/refunds.md"]
    hits = engine.search("refunded within 30 days", Caller("acme")).hits
    assert hits and not any(str(tmp_path) in (h.ext_id + h.url) for h in hits)
    assert engine.delete_source("acme", "default", "help-center/refunds.md") > 0


def test_a_moved_folder_keeps_its_sources_once_the_move_is_confirmed(engine: Engine, tmp_path: Path) -> None:
    folder = kb(tmp_path / "a")
    engine.ingest([folder], Access("acme"))
    moved = tmp_path / "b" / "help-center"
    moved.parent.mkdir()
    shutil.move(folder, moved)
    # The old path is gone, but it may only be unmounted: taking its name needs --as.
    refused = engine.sync([moved], Access("acme"))
    assert refused.deleted == [] and "--as help-center" in refused.failures[0][1]
    report = engine.sync([moved], Access("acme"), as_name="help-center")
    assert report.counts()["unchanged"] == 2 and report.counts()["added"] == 0 and report.deleted == []
    assert len(uris(engine)) == 2
    assert engine.sync([moved], Access("acme")).counts()["unchanged"] == 2  # the name now stands for the new path


@pytest.mark.embedded
def test_a_store_named_by_absolute_paths_is_renamed_not_duplicated(engine: Engine, tmp_path: Path) -> None:
    folder = kb(tmp_path)
    engine.ingest([folder], Access("acme"))
    name_by_absolute_paths(engine, tmp_path)
    engine.ingest([folder], Access("acme"))
    assert uris(engine) == ["help-center/billing/invoices.md", "help-center/refunds.md"]


def test_sync_mirrors_adds_updates_and_removals_and_keeps_what_it_could_not_read(engine: Engine,
                                                                                 tmp_path: Path) -> None:
    folder = kb(tmp_path)
    other = write(tmp_path / "faq.md", "# FAQ\nSupport answers within a day.\n")
    engine.ingest([other], Access("acme"))
    engine.sync([folder], Access("acme"))
    (folder / "billing" / "invoices.md").unlink()
    write(folder / "refunds.md", "# Refund policy\nAnnual plans are refunded within 14 days.\n")
    write(folder / "new.md", "# Webhooks\nWebhooks retry for 24 hours.\n")
    report = engine.sync([folder], Access("acme"))
    assert report.deleted == ["help-center/billing/invoices.md"]
    assert report.counts() | {"failed": 0} == {"added": 1, "updated": 1, "unchanged": 0, "failed": 0, "deleted": 1}
    assert uris(engine) == ["faq.md", "help-center/new.md", "help-center/refunds.md"]
    assert not engine.search("invoices first of the month", Caller("acme")).passing
    # A file that cannot be read this time is reported, never deleted.
    (folder / "refunds.md").write_bytes(b"\x00\x01binary")
    report = engine.sync([folder], Access("acme"))
    assert report.deleted == [] and [f for f, _ in report.failures] == [str(folder / "refunds.md")]
    assert "help-center/refunds.md" in uris(engine)


def test_changing_only_the_access_of_a_file_restamps_it(engine: Engine, tmp_path: Path) -> None:
    folder = kb(tmp_path)
    engine.ingest([folder], Access("acme"))
    assert engine.search("refunded within 30 days", Caller("acme")).passing
    report = engine.ingest([folder], Access("acme", principals=("team:billing",)))
    assert report.counts()["updated"] == 2
    assert not engine.search("refunded within 30 days", Caller("acme")).hits
    assert engine.search("refunded within 30 days", Caller("acme", principals=frozenset({"team:billing"}))).passing
    sources = engine.store.list_sources("acme")
    assert all(json.dumps(s["access"]["principals"]) == '["team:billing"]' for s in sources)


def test_gzip_is_refused_as_soon_as_it_inflates_past_the_limit(tmp_path: Path) -> None:
    bomb = gzip.compress(b"a" * (64 * 2**20))  # 64 MB of one letter packs into ~64 KB
    assert len(bomb) < 2**20
    with pytest.raises(IngestError, match="decompresses to more than"):
        gunzip_limited("bomb.md.gz", bomb, 2**20)
    path = tmp_path / "bomb.md.gz"
    path.write_bytes(bomb)
    with pytest.raises(IngestError, match="decompresses to more than"):
        read_source(path, 2**20)
    with pytest.raises(IngestError, match="gzip"):
        gunzip_limited("cut.md.gz", bomb[: len(bomb) // 2], 2**30)
    assert gunzip_limited("ok.gz", gzip.compress(b"hello"), 10) == b"hello"


def test_every_member_of_a_multi_member_gzip_is_read_and_trailing_junk_refused() -> None:
    """Found by review: the limited reader stopped after the first member, silently dropping the rest."""
    a, b = b'{"_id": "1", "text": "one"}\n', b'{"_id": "2", "text": "two"}\n'
    joined = gzip.compress(a) + gzip.compress(b)
    assert gunzip_limited("two.jsonl.gz", joined, 2**20) == gzip.decompress(joined) == a + b
    with pytest.raises(IngestError, match="gzip"):
        gunzip_limited("junk.jsonl.gz", gzip.compress(a) + b"not gzip at all", 2**20)
    with pytest.raises(IngestError, match="decompresses to more than"):
        gunzip_limited("many.gz", gzip.compress(b"x" * 600) * 3, 1000)


def test_another_folder_with_the_same_name_is_refused_until_named(engine: Engine, tmp_path: Path) -> None:
    """Found by review: /x/support/docs and /x/sales/docs were both "docs/…": the second
    overwrote the first's sources and a sync of it deleted the first's other pages."""
    support = tmp_path / "support" / "docs"
    sales = tmp_path / "sales" / "docs"
    write(support / "index.md", "# Support\nSupport answers within a day.\n")
    write(support / "refunds.md", "# Refunds\nAnnual plans are refunded within 30 days.\n")
    write(sales / "index.md", "# Sales\nTalk to sales about volume pricing.\n")
    engine.ingest([support], Access("acme"))
    refused = engine.sync([sales], Access("acme"))
    assert refused.failures and "--as" in refused.failures[0][1] and refused.deleted == []
    assert uris(engine) == ["docs/index.md", "docs/refunds.md"]
    named = engine.sync([sales], Access("acme"), as_name="sales-docs")
    assert named.deleted == [] and uris(engine) == ["docs/index.md", "docs/refunds.md", "sales-docs/index.md"]
    # The recorded name sticks to its folder.
    assert engine.sync([sales], Access("acme")).counts()["unchanged"] == 1


def test_roots_never_nest_so_no_file_has_two_names(engine: Engine, tmp_path: Path) -> None:
    """Subfolders, parents, a file inside a folder, two nested paths in one call, and a
    subfolder reached through a symlink are refused: each file is stored under one name."""
    folder = kb(tmp_path)
    engine.sync([folder], Access("acme"))
    link = tmp_path / "linked"
    link.symlink_to(folder / "billing", target_is_directory=True)
    for paths in ([folder / "billing"], [tmp_path], [folder / "refunds.md"], [link]):
        report = engine.sync(paths, Access("acme")) if paths[0].is_dir() else engine.ingest(paths, Access("acme"))
        assert report.failures and "roots overlap" in report.failures[0][1] and report.deleted == [], paths
    other = kb(tmp_path / "other")
    nested = engine.sync([other, other / "billing"], Access("acme"), as_name=None)
    assert nested.failures and "holds the other" in nested.failures[0][1]
    assert uris(engine) == ["help-center/billing/invoices.md", "help-center/refunds.md"]


def test_nothing_is_deleted_when_a_folder_cannot_be_listed(engine: Engine, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by review: pathlib's rglob skips a folder it may not read, and sync then deleted
    everything in it (as root, chmod cannot show it: the kernel's refusal is simulated)."""
    import os

    folder = kb(tmp_path)
    engine.sync([folder], Access("acme"))
    real, unreadable = os.scandir, {str(folder / "billing"), str(folder)}

    def scandir(path: object = ".") -> object:
        if str(path) in unreadable:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", scandir)
    for blocked in (str(folder / "billing"), str(folder)):
        unreadable.clear()
        unreadable.add(blocked)
        report = engine.sync([folder], Access("acme"))
        assert report.deleted == [] and any("could not be listed" in why for _, why in report.failures)
        assert len(uris(engine)) == 2


@pytest.mark.embedded
def test_sync_removes_sources_an_older_release_named_by_absolute_path(engine: Engine, tmp_path: Path) -> None:
    folder = kb(tmp_path)
    engine.ingest([folder], Access("acme"))
    name_by_absolute_paths(engine, tmp_path)
    (folder / "billing" / "invoices.md").unlink()
    report = engine.sync([folder], Access("acme"))
    assert report.deleted == [str((folder / "billing" / "invoices.md").resolve())]
    assert uris(engine) == ["help-center/refunds.md"]


def test_a_refused_folder_in_a_multi_folder_sync_changes_nothing(engine: Engine, tmp_path: Path) -> None:
    """Found by the second review: the first folder's name was recorded before the second was
    refused, and the sync then deleted every source of the first."""
    support, sales = tmp_path / "support" / "docs", tmp_path / "sales" / "docs"
    write(support / "a.md", "# A\nAlpha.\n")
    write(sales / "b.md", "# B\nBravo.\n")
    engine.sync([support], Access("acme"))
    report = engine.sync([support, sales], Access("acme"))
    assert report.deleted == [] and report.failures and uris(engine) == ["docs/a.md"]


def test_a_file_never_replaces_an_upload_nor_an_upload_a_file(engine: Engine, tmp_path: Path) -> None:
    from electa import ConfigError
    from electa.ingest.page import Loaded
    from electa.types import Document, Section

    folder = tmp_path / "docs"
    write(folder / "refunds.md", "# Refunds\nFolder copy.\n")
    upload = Loaded([Document("u", "Refunds", "Uploaded copy.", sections=(Section((), "Uploaded copy."),))])
    engine.ingest_loaded("docs/refunds.md", upload, Access("acme"), kind="api")
    report = engine.sync([folder], Access("acme"))
    assert [f for f, _ in report.failures] == [str(folder / "refunds.md")] and report.deleted == []
    (folder / "refunds.md").unlink()
    assert engine.sync([folder], Access("acme")).deleted == []
    assert engine.store.source("acme", "default", "docs/refunds.md")["kind"] == "api"  # type: ignore[index]
    write(folder / "faq.md", "# FAQ\nQuestions.\n")
    engine.sync([folder], Access("acme"))
    with pytest.raises(ConfigError, match="never replaces"):
        engine.ingest_loaded("docs/faq.md", upload, Access("acme"), kind="api")


@pytest.mark.parametrize("name", ["", "docs/sub", "..", ".", " docs", "a\\b"])
def test_a_name_is_one_plain_segment(engine: Engine, tmp_path: Path, name: str) -> None:
    folder = kb(tmp_path)
    report = engine.sync([folder], Access("acme"), as_name=name)
    assert report.failures and "one path segment" in report.failures[0][1] and uris(engine) == []


def test_a_stored_folder_keeps_its_name_and_a_live_folder_is_never_taken_over(engine: Engine, tmp_path: Path) -> None:
    """Found by the third review: following the "moved?" hint re-pointed a name whose folder
    still existed, and the sync deleted that folder's sources."""
    folder = kb(tmp_path)
    engine.sync([folder], Access("acme"))
    renamed = engine.sync([folder], Access("acme"), as_name="kb")
    assert renamed.failures and "keeps its name" in renamed.failures[0][1]
    twin = kb(tmp_path / "twin")
    for as_name in (None, "help-center"):
        report = engine.sync([twin], Access("acme"), as_name=as_name)
        assert report.failures and "name this one differently" in report.failures[0][1] and report.deleted == []
    assert uris(engine) == ["help-center/billing/invoices.md", "help-center/refunds.md"]


def test_a_relinked_symlink_is_the_same_name(engine: Engine, tmp_path: Path) -> None:
    v1, v2, link = tmp_path / "releases" / "v1", tmp_path / "releases" / "v2", tmp_path / "site"
    write(v1 / "old.md", "# Old\nWithdrawn.\n")
    write(v2 / "new.md", "# New\nCurrent.\n")
    link.symlink_to(v1, target_is_directory=True)
    engine.sync([link], Access("acme"))
    link.unlink()
    link.symlink_to(v2, target_is_directory=True)
    report = engine.sync([link], Access("acme"))
    assert report.deleted == ["site/old.md"] and uris(engine) == ["site/new.md"]


@pytest.mark.embedded
def test_renaming_an_older_store_renames_its_document_ids_too(engine: Engine, tmp_path: Path) -> None:
    """Found by the third review: CSV rows (``name#i``) and gzipped files kept ids that named
    the server's path after their source was renamed."""
    folder = tmp_path / "docs"
    write(folder / "faq.csv", "question,answer\nCan I get a refund?,Within 30 days.\n")
    (folder / "notes.md.gz").write_bytes(gzip.compress(b"# Notes\nExports run nightly.\n"))
    engine.ingest([folder], Access("acme"))
    old_ids = {s: [r[0] for r in engine.store.con.execute(
        "SELECT ext_id FROM locations l JOIN sources s ON s.id=l.source_id WHERE s.uri=?", (s,))] for s in uris(engine)}
    with engine.store.transaction() as con:  # as an older release stored them: names and ids by absolute path
        for uri, ids in old_ids.items():
            con.execute("UPDATE sources SET uri=? WHERE uri=?", (str((tmp_path / uri).resolve()), uri))
            for ext_id in ids:  # docs/faq.csv#1, docs/notes.md
                con.execute("UPDATE locations SET ext_id=? WHERE ext_id=?", (str((tmp_path / ext_id).resolve()), ext_id))
    assert all(str(tmp_path) in r[0] for r in engine.store.con.execute("SELECT ext_id FROM locations"))
    engine.ingest([folder], Access("acme"))
    ids = [r[0] for r in engine.store.con.execute("SELECT ext_id FROM locations")]
    assert ids and not any(str(tmp_path) in i for i in ids), ids


def test_a_folder_is_free_to_take_in_a_subfolder_once_the_subfolders_sources_are_deleted(engine: Engine,
                                                                                         tmp_path: Path) -> None:
    folder = kb(tmp_path)
    engine.sync([folder / "billing"], Access("acme"))
    refused = engine.sync([folder], Access("acme"))
    assert "it holds" in refused.failures[0][1] and uris(engine) == ["billing/invoices.md"]
    engine.delete_source("acme", "default", "billing/invoices.md")
    assert engine.sync([folder], Access("acme")).failures == []
    assert uris(engine) == ["help-center/billing/invoices.md", "help-center/refunds.md"]

"""A folder's files are embedded a window at a time and stored one transaction each
(``electa.ingest.pipeline``): the same units and vectors as file by file, fewer calls to the
model, and a file that cannot be embedded or stored fails alone."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from electa import Access, Engine, Settings
from electa.embedders.hashing import HashEmbedder
from electa.ingest import pipeline


class CountingEmbedder(HashEmbedder):
    """The hash embedder, counting calls; it raises on a text holding ``poison``."""

    def __init__(self, poison: str = "") -> None:
        super().__init__(dim=64)
        self.calls = 0
        self.poison = poison

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        if self.poison and any(self.poison in t for t in texts):
            raise RuntimeError("the model cannot read this text")
        return super().embed(texts)


def _folder(root: Path, pages: int = 12) -> Path:
    kb = root / "kb"
    kb.mkdir(parents=True)
    for n in range(pages):
        (kb / f"page{n:02d}.md").write_text(f"# Topic {n}\n\nArticle {n} explains setting {n} of plan P{n}.\n\n"
                                            f"## Details\n\nStep one of {n}. Step two of {n}.\n")
    return kb


def _stored(engine: Engine) -> list[tuple[str, str, bytes]]:
    """Every unit's source, title and text with its vector's bytes, sorted."""
    ids = np.asarray(engine.store.allowed(__import__("electa").Caller("acme")).ids)
    units = engine.store.units(ids.tolist())
    have, vecs = engine.store.vectors_of(engine.embedder.model_id, ids)
    by_id = {int(i): v.tobytes() for i, v in zip(have, vecs, strict=True)}
    return sorted((u.title, u.text, by_id.get(i, b"")) for i, u in units.items())


def test_a_window_stores_what_file_by_file_stored_with_fewer_calls_to_the_model(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kb = _folder(tmp_path)
    alone = CountingEmbedder()
    monkeypatch.setattr(pipeline, "WINDOW_TEXTS", 0)
    with Engine.open(tmp_path / "alone", Settings(), alone) as one_by_one:
        report = one_by_one.ingest([kb], Access("acme"))
        assert report.counts()["added"] == 12
        expected = _stored(one_by_one)
    monkeypatch.undo()
    together = CountingEmbedder()
    with Engine.open(tmp_path / "window", Settings(), together) as windowed:
        report = windowed.ingest([kb], Access("acme"))
        assert report.counts()["added"] == 12 and report.documents == 12
        assert [o.uri for o in report.outcomes] == [f"kb/page{n:02d}.md" for n in range(12)]
        assert _stored(windowed) == expected
    assert all(vec for _, _, vec in expected)
    assert (alone.calls, together.calls) == (12, 1)


def test_a_file_the_model_cannot_read_fails_alone_and_the_others_are_stored(tmp_path: Path) -> None:
    kb = _folder(tmp_path, pages=5)
    (kb / "page02.md").write_text("# Broken\n\nThis page holds the word kaboom.\n")
    with Engine.open(tmp_path / "data", Settings(), CountingEmbedder(poison="kaboom")) as engine:
        report = engine.ingest([kb], Access("acme"))
        assert [o.uri for o in report.outcomes] == ["kb/page00.md", "kb/page01.md", "kb/page03.md", "kb/page04.md"]
        assert report.failures == [(str(kb / "page02.md"), "could not be embedded (RuntimeError: the model cannot"
                                    " read this text)")]
        assert sorted(str(s["uri"]) for s in engine.store.list_sources("acme")) == [
            "kb/page00.md", "kb/page01.md", "kb/page03.md", "kb/page04.md"]


def test_a_file_whose_write_fails_fails_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kb = _folder(tmp_path, pages=4)
    with Engine.open(tmp_path / "data", Settings(), HashEmbedder(dim=64)) as engine:
        put = type(engine.store).put_source

        def refuse_one(self, record, docs, model_id=""):  # type: ignore[no-untyped-def]
            if record.uri.endswith("page01.md"):
                raise OSError("disk full")
            return put(self, record, docs, model_id=model_id)

        monkeypatch.setattr(type(engine.store), "put_source", refuse_one)
        report = engine.ingest([kb], Access("acme"))
        assert report.failures == [(str(kb / "page01.md"), "could not be stored (OSError: disk full)")]
        assert [o.uri for o in report.outcomes] == ["kb/page00.md", "kb/page02.md", "kb/page03.md"]


def test_a_page_two_files_share_is_embedded_once_and_both_keep_its_vectors(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    for name in ("a.md", "b.md"):
        (kb / name).write_text("# Refund policy\n\nAnnual plans are refunded within 30 days.\n")
    counting = CountingEmbedder()
    with Engine.open(tmp_path / "data", Settings(), counting) as engine:
        report = engine.ingest([kb], Access("acme"))
        assert report.counts()["added"] == 2
        units = _stored(engine)
        assert units and all(vec for _, _, vec in units)
    assert counting.calls == 1

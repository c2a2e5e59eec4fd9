"""An updated source lends its units' vectors to the same pieces of its new version. Found
reading Node.js's API again with a new HTML reader: each page is one document, so one line added
under a heading had every unit of the page read by the model again (59 pages in 144.7 s, more
than a fresh ingest of all 64 took)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from electa import Access, Caller, Engine
from electa.types import ChunkKind

ACME = Access("acme")
SECTIONS = [f"## Topic {n}\n\n" + " ".join(f"Sentence {n}.{k} about topic {n} and its settings." for k in range(40))
            for n in range(6)]


def _page(folder: Path, sections: list[str]) -> None:
    (folder / "guide.md").write_text("# Guide\n\n" + "\n\n".join(sections) + "\n", encoding="utf-8")


def _vectors(engine: Engine) -> dict[tuple[ChunkKind, str, str], np.ndarray]:
    """Each stored unit's vector by its kind, title and text (read from the embedded store's tables)."""
    rows = engine.store.con.execute(  # type: ignore[attr-defined]
        "SELECT c.kind, c.title, c.text, v.vector FROM chunks c JOIN vectors v ON v.chunk_id = c.id").fetchall()
    return {(ChunkKind(kind), title, text): np.frombuffer(blob, dtype=np.float32) for kind, title, text, blob in rows}


def test_an_edit_reads_only_the_units_it_changed(engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "help"
    folder.mkdir()
    _page(folder, SECTIONS)
    engine.ingest([folder], ACME)
    before = _vectors(engine)
    embedded: list[str] = []
    embed = engine.embedder.embed  # type: ignore[union-attr]
    monkeypatch.setattr(engine.embedder, "embed", lambda texts: embedded.extend(texts) or embed(texts))
    edited = [*SECTIONS[:3], SECTIONS[3].replace("Sentence 3.5 about", "Sentence 3.5, edited, about"), *SECTIONS[4:]]
    _page(folder, edited)
    report = engine.ingest([folder], ACME)
    assert report.counts()["updated"] == 1
    after = _vectors(engine)
    children = [key for key in after if key[0] is ChunkKind.CHILD]
    changed = [key for key in children if key not in before]
    # Only the edited section's pieces were read (a parent is its children's mean), not the page.
    assert embedded and changed and len(embedded) == len(changed) < len(children) / 3
    assert all("edited" in text or "Topic 3" in text for text in embedded)
    # Every vector is what a fresh ingest of the edited page gives.
    fresh = Engine.open(tmp_path / "fresh", engine.settings, engine.embedder)
    try:
        fresh_folder = tmp_path / "again" / "help"
        fresh_folder.mkdir(parents=True)
        _page(fresh_folder, edited)
        fresh.ingest([fresh_folder], ACME)
        expected = _vectors(fresh)
    finally:
        fresh.close()
    assert after.keys() == expected.keys()
    assert all(np.allclose(after[key], expected[key], atol=1e-6) for key in after)
    hits = engine.search("topic 3 settings edited", Caller("acme"), top=5).hits
    assert hits and "Topic 3" in hits[0].title


def test_another_source_lends_nothing(engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the source's own earlier version lends vectors: a new file whose text another file
    holds is read by the model (its document is shared by text hash, as before, when whole)."""
    folder = tmp_path / "help"
    folder.mkdir()
    _page(folder, SECTIONS)
    engine.ingest([folder], ACME)
    embedded: list[str] = []
    embed = engine.embedder.embed  # type: ignore[union-attr]
    monkeypatch.setattr(engine.embedder, "embed", lambda texts: embedded.extend(texts) or embed(texts))
    (folder / "copy.md").write_text("# Copy\n\n" + SECTIONS[0] + "\n", encoding="utf-8")
    engine.ingest([folder], ACME)
    assert embedded

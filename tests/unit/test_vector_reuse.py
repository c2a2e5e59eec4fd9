"""An updated source lends its units' vectors to the same pieces of its new version. Found
reading Node.js's API again with a new HTML reader: each page is one document, so one line added
under a heading had every unit of the page read by the model again (59 pages in 144.7 s, more
than a fresh ingest of all 64 took)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from electa import Access, Caller, Engine, Settings
from electa.embedders.chain import ChainEmbedder
from electa.embedders.hashing import HashEmbedder
from electa.types import ChunkKind

ACME = Access("acme")
SECTIONS = [f"## Topic {n}\n\n" + " ".join(f"Sentence {n}.{k} about topic {n} and its settings." for k in range(40))
            for n in range(6)]


def _page(folder: Path, sections: list[str]) -> None:
    (folder / "guide.md").write_text("# Guide\n\n" + "\n\n".join(sections) + "\n", encoding="utf-8")


def _stored_and_counted(engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[str]]:
    """The guide stored, and the list the texts the model reads from now on are added to."""
    folder = tmp_path / "help"
    folder.mkdir()
    _page(folder, SECTIONS)
    engine.ingest([folder], ACME)
    embedded: list[str] = []
    embed = engine.embedder.embed  # type: ignore[union-attr]
    monkeypatch.setattr(engine.embedder, "embed", lambda texts: embedded.extend(texts) or embed(texts))
    return folder, embedded


def _vectors(engine: Engine) -> dict[tuple[ChunkKind, str, str], np.ndarray]:
    """Each stored unit's vector by its kind, title and text (every unit the store holds)."""
    ids = np.arange(1, engine.store.last_unit_id() + 1, dtype=np.int64)
    found, vecs = engine.store.vectors_of(engine.embedder.model_id, ids)  # type: ignore[union-attr]
    units = engine.store.units(found.tolist())
    return {(units[i].kind, units[i].title, units[i].text): v for i, v in zip(found.tolist(), vecs, strict=True)}


def test_an_edit_reads_only_the_units_it_changed(engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder, embedded = _stored_and_counted(engine, tmp_path, monkeypatch)
    before = _vectors(engine)
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
    """A new file whose pieces a stored file holds is read by the model: a source lends only to
    its own new version (a guard; the window case is the next test)."""
    folder, embedded = _stored_and_counted(engine, tmp_path, monkeypatch)
    (folder / "copy.md").write_text("# Copy\n\n" + SECTIONS[0] + "\n", encoding="utf-8")
    engine.ingest([folder], ACME)
    assert embedded


def test_a_source_lends_only_to_its_own_new_version(engine: Engine, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """From the review: the vectors a window's stored sources lent were one pool, so a new file
    of the same window holding one of an edited file's sections was given its vectors."""
    folder, embedded = _stored_and_counted(engine, tmp_path, monkeypatch)
    _page(folder, [*SECTIONS[:5], SECTIONS[5] + " One more sentence."])
    (folder / "copy.md").write_text("# Guide\n\n" + SECTIONS[0] + "\n", encoding="utf-8")
    engine.ingest([folder], ACME)
    assert any(text.startswith("Guide > Topic 0\n") for text in embedded)  # the copy's, read by the model


def test_only_the_replaced_documents_units_are_looked_up(engine: Engine, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """From the review: an edit to one article of a file of many read every article's vectors."""
    folder = tmp_path / "help"
    folder.mkdir()
    articles = [{"id": f"a{n}", "title": f"Article {n}", "text": " ".join(f"Line {n}.{k} of article {n}." for k in range(60))}
                for n in range(5)]
    (folder / "kb.jsonl").write_text("\n".join(json.dumps(a) for a in articles), encoding="utf-8")
    engine.ingest([folder], ACME)
    asked: list[list[str] | None] = []
    lookup = engine.store.source_unit_ids
    monkeypatch.setattr(engine.store, "source_unit_ids",
                        lambda *args: asked.append(list(args[4]) if len(args) > 4 else None) or lookup(*args))
    articles[2]["text"] += " One more line."
    (folder / "kb.jsonl").write_text("\n".join(json.dumps(a) for a in articles), encoding="utf-8")
    assert engine.ingest([folder], ACME).counts()["updated"] == 1
    assert asked == [["a2"]]


def test_a_failed_lookup_reads_the_units_anew(engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """From the review: the lookup only spares the model work, so its failure must fail no file."""
    folder = tmp_path / "help"
    folder.mkdir()
    _page(folder, SECTIONS)
    engine.ingest([folder], ACME)

    def broken(*_: object) -> list[int]:
        raise RuntimeError("the store is away")

    monkeypatch.setattr(engine.store, "source_unit_ids", broken)
    _page(folder, [*SECTIONS[:5], SECTIONS[5] + " One more sentence."])
    report = engine.ingest([folder], ACME)
    assert report.counts()["updated"] == 1 and not report.failures


@pytest.mark.embedded  # (it rewrites a document's language in the embedded store's tables)
def test_a_chain_lends_no_vector_read_by_the_other_languages_model(tmp_path: Path) -> None:
    """From the review: a document's language may be read again after its units were embedded
    (the analysis's detection), and a vector its other language's model read must not serve."""
    chain = ChainEmbedder(HashEmbedder(32), HashEmbedder(48))
    folder = tmp_path / "help"
    folder.mkdir()
    body = "\n\n".join(f"## Teil {n}\n\n" + " ".join(f"Der Kunde {n}.{k} kann die Rechnung hier herunterladen."
                                                    for k in range(30)) for n in range(3))
    (folder / "g.md").write_text("# Hilfe\n\n" + body, encoding="utf-8")
    with Engine.open(tmp_path / "data", Settings(), chain) as engine:
        engine.ingest([folder], ACME)
        engine.store.con.execute("UPDATE documents SET lang='en'")  # type: ignore[attr-defined]
        engine.store.con.commit()  # type: ignore[attr-defined]
    (folder / "g.md").write_text("# Hilfe\n\n" + body + "\n\nNeuer Absatz.", encoding="utf-8")
    with Engine.open(tmp_path / "data", Settings(language="en"), chain) as engine:
        engine.ingest([folder], ACME)
        rows = engine.store.con.execute(  # type: ignore[attr-defined]
            "SELECT v.vector FROM chunks c JOIN vectors v ON v.chunk_id = c.id WHERE c.kind = 'child'").fetchall()
    assert rows and all(np.frombuffer(blob, dtype=np.float32)[:32].any() for (blob,) in rows)  # English half

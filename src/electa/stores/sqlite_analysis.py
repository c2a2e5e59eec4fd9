"""Bringing an embedded store's full-text indexes to this release's analysis (issue 14).

Stores made before issue 14 let FTS5's ``porter`` tokenizer analyse every unit in English; this
release hands FTS5 terms analysed per language (:mod:`electa.text.analysis`). A store whose
``meta`` names another analysis (or none) is analysed again when it opens, in one write
transaction: each document's language is read from its own text, each unit's terms are written
to new FTS5 tables (its access tokens copied from the old ones), which then take the old ones'
names, curated triggers are normalised again, and the saved full-text images (of the old
terms) are no longer named, so every worker builds its image afresh. Nothing else changes: the
units, their vectors and their ids stay as they were. A crash part-way rolls it all back, and
the next open starts again.
"""

from __future__ import annotations

import logging
import sqlite3
import time

from electa.stores.protocol import TextIndex
from electa.stores.sqlite_ops import normalise_trigger
from electa.text.analysis import ANALYSIS, DEFAULT_LANGUAGE, fts_text, outdated
from electa.text.language import detect_document

log = logging.getLogger(__name__)

BATCH = 2000


def analyse_again(con: sqlite3.Connection, tables: dict[TextIndex, str], recent: dict[TextIndex, str],
                  columns: dict[TextIndex, str], tokenizer: str) -> list[str] | None:
    """Re-analyse the store in ``con``'s open write transaction when its ``meta`` names another
    analysis than :data:`ANALYSIS`: None when it did not, else the directories of the saved
    images it no longer names (of the old terms: the caller removes them once it commits)."""
    found = con.execute("SELECT value FROM meta WHERE key='analysis'").fetchone()
    if not outdated(found[0] if found else None):
        return None
    start = time.perf_counter()
    _detect_languages(con)
    con.execute("INSERT OR IGNORE INTO languages SELECT DISTINCT org, agent, CASE lang WHEN '' THEN ? ELSE lang END"
                " FROM documents", (DEFAULT_LANGUAGE,))
    written, stale = 0, []
    kinds = {TextIndex.UNITS: "parent", TextIndex.QA: "qa"}
    for index, table in tables.items():
        fresh = f"{table}_{ANALYSIS}"
        con.execute(f"DROP TABLE IF EXISTS {fresh}")
        con.execute(f"CREATE VIRTUAL TABLE {fresh} USING fts5({columns[index]}, tokenize='{tokenizer}')")
        rows = con.execute(
            f"SELECT c.id, c.title, c.text, f.acl, d.lang FROM chunks c JOIN {table} f ON f.rowid = c.id"
            " JOIN documents d ON d.id = c.document_id WHERE c.kind = ? ORDER BY c.id", (kinds[index],))
        while batch := rows.fetchmany(BATCH):
            con.executemany(f"INSERT INTO {fresh}(rowid, {columns[index]}) VALUES(?,?,?,?)",
                            [(i, fts_text(title, lang), fts_text(text, lang), acl) for i, title, text, acl, lang in batch])
            written += len(batch)
        con.execute(f"DROP TABLE {table}")
        con.execute(f"ALTER TABLE {fresh} RENAME TO {table}")
        # Rows written since the last merge are all in the table above now: the recent one starts empty.
        con.execute(f"DROP TABLE IF EXISTS {recent[index]}")
        con.execute(f"CREATE VIRTUAL TABLE {recent[index]} USING fts5({columns[index]}, tokenize='{tokenizer}')")
        saved = con.execute("SELECT value FROM meta WHERE key=?", (f"saved:{table}",)).fetchone()
        stale += [str(saved[0]).rsplit(":", 1)[0]] if saved else []
        con.execute("DELETE FROM meta WHERE key IN (?, ?)", (f"saved:{table}", f"trimmed:{recent[index]}"))
    # From the curated answers' own triggers (a title, one a line), as a write stores them: the
    # stored forms were folded by rules that lost what they dropped (a virama, a voicing mark).
    con.execute("DELETE FROM curated_triggers")
    for chunk_id, title in con.execute("SELECT id, title FROM chunks WHERE kind = 'curated'").fetchall():
        con.executemany("INSERT OR IGNORE INTO curated_triggers VALUES(?, ?)",
                        [(normalise_trigger(t), chunk_id) for t in title.split("\n") if t.strip()])
    con.execute("INSERT INTO meta VALUES('analysis', ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value", (ANALYSIS,))
    if written:
        log.warning("analysed %d units again for analysis %s (languages read from each document) in %.1f s",
                    written, ANALYSIS, time.perf_counter() - start)
    return stale


def _detect_languages(con: sqlite3.Connection) -> None:
    """Each document without a language gets the one its title and text are written in."""
    todo = [int(r[0]) for r in con.execute("SELECT id FROM documents WHERE lang = ''")]
    for at in range(0, len(todo), BATCH):
        part = todo[at:at + BATCH]
        marks = ",".join("?" * len(part))
        texts: dict[int, list[str]] = {d: [] for d in part}
        for document_id, title in con.execute(f"SELECT id, title FROM documents WHERE id IN ({marks})", part):
            texts[document_id].append(title)
        for document_id, text in con.execute(f"SELECT document_id, text FROM chunks WHERE document_id IN ({marks})"
                                             " AND kind <> 'child' ORDER BY document_id, ordinal, id", part):
            texts[document_id].append(text)
        con.executemany("UPDATE documents SET lang=? WHERE id=?",
                        [(detect_document(parts[0], parts[1:]), d) for d, parts in texts.items()])

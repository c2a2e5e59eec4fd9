"""Bringing a PostgreSQL store's full-text vectors to this release's analysis (issue 14).

Stores made before issue 14 hold every unit's terms analysed in English (Porter stems); this
release analyses each unit in its document's language (:mod:`electa.text.analysis`). Analysis
is Python, so it cannot be a SQL migration: migration 0008 adds the columns, and the first store
to open the database afterwards analyses it again here, in one transaction under the writers'
lock (other workers' writes wait; their reads go on with the old terms until it commits). Each
document's language is read from its own text; each unit's ``tsvector`` and length, the parent
units' title terms and the curated triggers are written again; ``meta`` then names the analysis.
Units, vectors and ids are untouched; a failure rolls it all back.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from electa.stores.postgres.analysis import MAX_LEXEME_BYTES, tsvector_literal
from electa.stores.sqlite_acl import acl_text
from electa.stores.sqlite_ops import normalise_trigger
from electa.text.analysis import ANALYSIS, DEFAULT_LANGUAGE, index_terms, outdated
from electa.text.language import detect_document
from electa.types import Access

log = logging.getLogger(__name__)

BATCH = 2000


def analyse_again(con: Any) -> int:
    """Re-analyse in ``con``'s write transaction (every tenant) when ``meta`` names another
    analysis than :data:`ANALYSIS`; the number of units whose terms were written again."""
    found = con.execute("SELECT value FROM meta WHERE key='analysis'").fetchone()
    if not outdated(found[0] if found else None):
        return 0
    start = time.perf_counter()
    _detect_languages(con)
    con.execute("INSERT INTO languages SELECT DISTINCT org, agent, CASE lang WHEN '' THEN %s ELSE lang END"
                " FROM documents ON CONFLICT DO NOTHING", (DEFAULT_LANGUAGE,))
    con.execute("DELETE FROM title_terms")
    written, last = 0, 0
    while True:
        rows = con.execute(
            "SELECT c.id, c.kind, c.title, c.text, c.org, c.agent, c.public, c.principals, d.lang FROM chunks c"
            " JOIN documents d ON d.id = c.document_id WHERE c.fts_index IS NOT NULL AND c.id > %s"
            " ORDER BY c.id LIMIT %s", (last, BATCH)).fetchall()
        if not rows:
            break
        vectors: list[tuple[int, str, int]] = []
        terms: list[tuple[Any, ...]] = []
        for chunk_id, kind, title, text, org, agent, public, principals, lang in rows:
            access = Access(org, agent, public=public, principals=tuple(principals or ()))
            lang = lang or DEFAULT_LANGUAGE
            tsv, length = tsvector_literal(title, text, acl_text(access).split(), lang)
            vectors.append((chunk_id, tsv, length))
            if kind == "parent":
                terms.extend((chunk_id, org, agent, public, list(principals or ()), t)
                             for t in sorted(set(index_terms(title, lang))) if 0 < len(t.encode()) <= MAX_LEXEME_BYTES)
        con.execute("UPDATE chunks SET fts = u.fts::tsvector, fts_len = u.len FROM unnest(%s::bigint[], %s::text[],"
                    " %s::int[]) AS u(id, fts, len) WHERE chunks.id = u.id",
                    ([v[0] for v in vectors], [v[1] for v in vectors], [v[2] for v in vectors]))
        with con.cursor() as cur:
            cur.executemany("INSERT INTO title_terms VALUES(%s, %s, %s, %s, %s::text[], %s) ON CONFLICT DO NOTHING",
                            terms)
        written += len(rows)
        last = int(rows[-1][0])
    # From the curated answers' own triggers (a title, one a line), as a write stores them: the
    # stored forms were folded by rules that lost what they dropped (a virama, a voicing mark).
    rows = [(normalise_trigger(t), chunk_id, org) for chunk_id, title, org in con.execute(
        "SELECT id, title, org FROM chunks WHERE kind = 'curated'").fetchall() for t in title.split("\n") if t.strip()]
    con.execute("DELETE FROM curated_triggers")
    with con.cursor() as cur:
        cur.executemany("INSERT INTO curated_triggers VALUES(%s, %s, %s) ON CONFLICT DO NOTHING", rows)
    con.execute("INSERT INTO meta VALUES('analysis', %s) ON CONFLICT(key) DO UPDATE SET value=excluded.value", (ANALYSIS,))
    if written:
        log.warning("analysed %d units again for analysis %s (languages read from each document) in %.1f s",
                    written, ANALYSIS, time.perf_counter() - start)
    return written


def _detect_languages(con: Any) -> None:
    """Each document without a language gets the one its title and text are written in."""
    last = 0
    while True:
        docs = con.execute("SELECT id, title FROM documents WHERE lang = '' AND id > %s ORDER BY id LIMIT %s",
                           (last, BATCH)).fetchall()
        if not docs:
            return
        texts: dict[int, list[str]] = {int(d): [t] for d, t in docs}
        for document_id, text in con.execute(
                "SELECT document_id, text FROM chunks WHERE document_id = ANY(%s) AND kind <> 'child'"
                " ORDER BY document_id, ordinal, id", (list(texts),)).fetchall():
            texts[int(document_id)].append(text)
        found = [(d, detect_document(parts[0], parts[1:])) for d, parts in texts.items()]
        con.execute("UPDATE documents SET lang = u.lang FROM unnest(%s::bigint[], %s::text[]) AS u(id, lang)"
                    " WHERE documents.id = u.id", ([d for d, _ in found], [lang for _, lang in found]))
        last = int(docs[-1][0])

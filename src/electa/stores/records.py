"""Rows as the store contract returns them, and names as a renamed source gives them: pure
functions every backend shares, so the backends differ only in how they read and write."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def renamed_ext_id(old_uri: str, new_uri: str, ext_id: str) -> str | None:
    """A document id of a source renamed ``old_uri`` -> ``new_uri``, or None when it keeps its
    id. Documents were named after the path the source was read from (``path``, ``path#3``,
    the path without ``.gz``, or the path as given on the command line); they take the new name.

    >>> renamed_ext_id("kb/a.md", "kb/b.md", "kb/a.md#2"), renamed_ext_id("x.jsonl.gz", "y.jsonl.gz", "x.jsonl")
    ('kb/b.md#2', 'y.jsonl')
    """
    prefixes = [(old_uri, new_uri)]
    if old_uri.endswith(".gz"):
        prefixes.append((old_uri[:-3], new_uri[:-3] if new_uri.endswith(".gz") else new_uri))
    renamed = next((new + ext_id[len(old):] for old, new in prefixes if ext_id == old or ext_id.startswith(old + "#")),
                   None)
    if renamed is None and ext_id.endswith("/" + new_uri.rsplit("/", 1)[-1]):
        renamed = new_uri
    return renamed


def flagged_sql(where: str, mark: str) -> tuple[str, str]:
    """The two reads behind ``IndexStore.flagged`` in either store's SQL: the flagged units
    matching ``where`` (rows for :func:`flagged_records`), and one document's ``(source, url)``
    pairs, whose parameter is written ``mark`` (``?`` in SQLite, ``%s`` in PostgreSQL). ``where``
    is the callers' own SQL, its values only as placeholders: never text a request gave."""
    return ("SELECT f.chunk_id, d.id, d.org, d.agent, c.kind, d.title, f.rules, f.findings FROM chunk_flags f"
            f" JOIN chunks c ON c.id=f.chunk_id JOIN documents d ON d.id=c.document_id WHERE {where}",
            f"SELECT s.uri, l.url FROM locations l JOIN sources s ON s.id=l.source_id WHERE l.document_id={mark}")


def flagged_records(rows: Sequence[Sequence[Any]], places: dict[int, list[tuple[str, str]]]) -> list[dict[str, object]]:
    """``IndexStore.flagged``'s records from ``(chunk id, document id, org, agent, kind, title,
    rules, findings)`` rows (findings decoded) and each document's sorted ``(source, url)``."""
    out: list[dict[str, object]] = []
    for chunk_id, document_id, org, agent, kind, title, rules, findings in rows:
        where = places.get(document_id) or [("", "")]
        out.append({"chunk_id": int(chunk_id), "org": org, "agent": agent, "kind": kind,
                    "source": where[0][0], "sources": sorted({u for u, _ in where if u}),
                    "url": next((url for _, url in where if url), ""), "title": title,
                    "rules": str(rules).split(","), "excerpts": [f["excerpt"] for f in findings], "findings": findings})
    out.sort(key=lambda r: (str(r["agent"]), str(r["source"]), int(str(r["chunk_id"]))))
    return out

"""The store contract suite. A backend's tests subclass :class:`StoreContract` and provide a
``store`` fixture returning an empty store; every rule in :class:`electa.stores.Store`'s
docstring is checked here."""

from __future__ import annotations

import numpy as np

from electa.stores.protocol import PreparedDocument, SourceRecord
from electa.types import Access, Caller, Chunk, ChunkKind


def prepared(ext_id: str, text: str, title: str = "T", url: str = "") -> PreparedDocument:
    import hashlib

    chunk = Chunk(ChunkKind.PARENT, 0, title, text)
    vec = np.ones(4, dtype=np.float32) / 2.0
    return PreparedDocument(ext_id, title, url, hashlib.sha256(text.encode()).hexdigest(), (chunk,), (vec,))


def record(uri: str, content: str, access: Access) -> SourceRecord:
    return SourceRecord(access.org, access.agent, uri, "md", "", content, access)


class StoreContract:
    def test_put_then_unchanged(self, store) -> None:  # type: ignore[no-untyped-def]
        acme = Access("acme")
        first = store.put_source(record("a.md", "h1", acme), [prepared("a", "alpha text")])
        again = store.put_source(record("a.md", "h1", acme), [prepared("a", "alpha text")])
        assert (first.status, again.status) == ("added", "unchanged")
        assert again.version == first.version

    def test_update_replaces_units(self, store) -> None:  # type: ignore[no-untyped-def]
        acme = Access("acme")
        store.put_source(record("a.md", "h1", acme), [prepared("a", "alpha text")])
        before = store.allowed(Caller("acme")).ids.tolist()
        out = store.put_source(record("a.md", "h2", acme), [prepared("a", "beta text")])
        after = store.allowed(Caller("acme")).ids.tolist()
        assert out.status == "updated" and out.version == 2 and out.removed_units == 1
        assert len(after) == 1 and after != before

    def test_same_text_stored_once(self, store) -> None:  # type: ignore[no-untyped-def]
        acme = Access("acme")
        store.put_source(record("a.html", "h1", acme), [prepared("a", "shell", url="https://x/a")])
        out = store.put_source(record("b.html", "h2", acme), [prepared("b", "shell", url="https://x/b")])
        ids = store.allowed(Caller("acme")).ids.tolist()
        assert out.duplicates == 1 and len(ids) == 1
        unit = store.units(ids)[ids[0]]
        assert {unit.url, *unit.also_urls} == {"https://x/a", "https://x/b"}

    def test_delete_keeps_shared_document(self, store) -> None:  # type: ignore[no-untyped-def]
        acme = Access("acme")
        store.put_source(record("a.html", "h1", acme), [prepared("a", "shell")])
        store.put_source(record("b.html", "h2", acme), [prepared("b", "shell")])
        assert store.delete_source("acme", "default", "a.html") == 0
        assert len(store.allowed(Caller("acme"))) == 1
        assert store.delete_source("acme", "default", "b.html") == 1
        assert len(store.allowed(Caller("acme"))) == 0
        assert store.delete_source("acme", "default", "b.html") == -1

    def test_allowed_respects_org_agent_and_principals(self, store) -> None:  # type: ignore[no-untyped-def]
        store.put_source(record("p.md", "1", Access("acme")), [prepared("p", "public page")])
        store.put_source(record("t.md", "2", Access("acme", public=False, principals=("team:support",))),
                         [prepared("t", "team page")])
        store.put_source(record("o.md", "3", Access("other")), [prepared("o", "other org page")])
        store.put_source(record("g.md", "4", Access("acme", agent="sales")), [prepared("g", "sales agent page")])
        count = lambda caller: len(store.allowed(caller))
        assert count(Caller("acme")) == 2
        assert count(Caller("acme", principals=frozenset({"team:support"}))) == 3
        assert count(Caller("acme", "default")) == 1
        assert count(Caller("acme", "sales")) == 1
        assert count(Caller("other")) == 1
        assert count(Caller("nobody")) == 0

    def test_generation_moves_on_every_change(self, store) -> None:  # type: ignore[no-untyped-def]
        g0 = store.generation
        store.put_source(record("a.md", "1", Access("acme")), [prepared("a", "x")])
        g1 = store.generation
        store.delete_source("acme", "default", "a.md")
        assert g0 < g1 < store.generation

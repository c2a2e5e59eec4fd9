"""The named-entity extractor with the packaged spaCy model (issue 11, SPEC A6): what it finds
beside the patterns, the dependency-path rule for two names, and the engine reading a help
center with it (ELECTA_GRAPH=spacy) after another extractor's reading."""

from __future__ import annotations

from pathlib import Path

import pytest

from electa.config import Settings
from electa.embedders.hashing import HashEmbedder
from electa.engine import Engine
from electa.ingest.page import Loaded
from electa.types import Access, Caller
from tests.conftest import page

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def extractor():  # type: ignore[no-untyped-def]
    from electa.graph.ner import SpacyExtractor

    return SpacyExtractor()


def test_names_the_patterns_miss_are_found_under_one_kind(extractor) -> None:  # type: ignore[no-untyped-def]
    found = extractor.extract("Integrations", "Error E2201 is fixed by reconnecting under **Settings > Channels > Email**."
                                              " Jane Doe from Acme Corp in Berlin wrote the Okta guide.")
    keys = {e.key for e in found.entities}
    assert {"error_code:e2201", "setting:settings > channels > email"} <= keys  # (the patterns, as before)
    assert {"name:jane doe", "name:acme corp", "name:berlin"} <= keys
    fixes = [(r.source, r.target) for r in found.relations if r.kind == "fixes"]
    assert fixes == [("setting:settings > channels > email", "error_code:e2201")]
    related = {(r.source, r.target): r.weight for r in found.relations if r.kind == "related"}
    assert related[("name:jane doe", "name:acme corp")] >= 0.5  # ("Jane Doe from Acme Corp": two arcs)


def test_two_names_close_in_the_text_but_far_in_the_parse_are_not_related(extractor) -> None:  # type: ignore[no-untyped-def]
    from electa.graph.extract import extract

    text = "Jane Doe from Acme Corp in Berlin wrote the Okta guide, and the long list names Google, Microsoft and Zendesk."
    by_closeness = {frozenset((r.source, r.target)) for r in extract(extractor, "", text).relations if r.kind == "related"}
    by_parse = {frozenset((r.source, r.target)) for r in extractor.extract("", text).relations if r.kind == "related"}
    far = frozenset(("name:berlin", "name:google"))  # (two names apart in the text, more than four arcs in the parse)
    assert far in by_closeness and far not in by_parse
    assert frozenset(("name:jane doe", "name:acme corp")) in by_parse and by_parse < by_closeness


def test_the_engine_reads_with_it_and_the_graph_leg_links_a_name(tmp_path: Path) -> None:
    pages = [page("o", "Okta sign-in", "Okta connects to Brightdesk through SAML. Acme Corp uses Okta for every agent.",
                  "https://h/okta"),
             page("p", "Pricing", "The Enterprise plan costs 99 dollars.", "https://h/pricing")]
    eng = Engine.open(tmp_path / "data", Settings(), HashEmbedder(dim=64))  # read by the patterns first
    eng.ingest_loaded("kb", Loaded(pages), Access("acme"))
    eng.close()
    eng = Engine.open(tmp_path / "data", Settings(graph="spacy"), HashEmbedder(dim=64))
    assert eng.graph.missing == 2  # (the patterns' reading is another extractor's)
    eng.reindex()
    assert eng.graph.missing == 0
    hits = eng.search("Does Acme Corp sign in with Okta?", Caller("acme"), legs=["graph"]).hits
    assert hits[0].url == "https://h/okta" and "Okta" in hits[0].graph
    eng.close()


def test_a_name_written_twice_keeps_its_relation_in_each_sentence(extractor) -> None:  # type: ignore[no-untyped-def]
    """Found by review: the parse path was measured from a name's last mention, often in another sentence."""
    found = extractor.extract("", "Jane Doe from Acme Corp wrote the guide. Later Jane Doe moved to Berlin with Acme Corp staff.")
    related = {frozenset((r.source, r.target)) for r in found.relations if r.kind == "related"}
    assert frozenset(("name:jane doe", "name:acme corp")) in related

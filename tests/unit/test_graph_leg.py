"""The knowledge graph at ingest and its leg (issue 11, SPEC A6, B5): hand-worked help-centre
pages, the engine with the seeded hash embedder, the embedded store (the contract suite runs the
store's part on PostgreSQL too)."""

from __future__ import annotations

from pathlib import Path

import pytest

from electa.config import Settings
from electa.embedders.hashing import HashEmbedder
from electa.engine import Engine
from electa.ingest.page import Loaded
from electa.legs.graph import GraphIndex, _one_edit
from electa.scoring import GRAPH_MIN
from electa.types import Access, Caller, LegStatus, hit_json
from tests.conftest import page

ERRORS = page("e", "Export errors", "Error E1042 appears when an export holds too many rows. It is fixed by raising"
              " **Settings > Exports > Row limit**.", "https://help.acme.test/e1042")
ROWS = page("r", "Row limit", "Under **Settings > Exports > Row limit** an admin sets how many rows one export may"
            " hold.", "https://help.acme.test/rows")
SLACK = page("s", "Slack", "The Slack integration is part of the Growth and Enterprise plans.", "https://help.acme.test/slack")
BOOKS = page("q", "QuickBooks", "The QuickBooks integration syncs invoices every hour.", "https://help.acme.test/quickbooks")
HOLIDAYS = page("h", "Holidays", "Our office is closed on public holidays.", "https://help.acme.test/holidays")


@pytest.fixture
def engine(tmp_path: Path):  # type: ignore[no-untyped-def]
    eng = Engine.open(tmp_path / "data", Settings(), HashEmbedder(dim=64))
    eng.ingest_loaded("kb", Loaded([ERRORS, ROWS, SLACK, BOOKS, HOLIDAYS]), Access("acme"))
    yield eng
    eng.close()


def _graph(engine: Engine, question: str, caller: Caller | None = None) -> list[tuple[str, float, bool, str]]:
    """``(url, score, passes, summary)`` of each hit the graph leg found, in the order of a search
    by it and the dense leg (whose vote is the second opinion the graph's minimum asks for)."""
    result = engine.search(question, caller or Caller("acme"), legs=["graph", "dense"])
    return [(h.url, h.score, h.passes, h.graph) for h in result.hits if any(v.leg == "graph" for v in h.votes)]


def test_a_question_naming_an_error_finds_its_page_and_the_page_of_what_fixes_it(engine: Engine) -> None:
    # Two pages joined by an entity: the error's page says which setting fixes it (in a second
    # sentence, "It is fixed by"); the setting's own page never names the error.
    hits = _graph(engine, "How do I fix error E1042?")
    assert [h[0] for h in hits[:2]] == ["https://help.acme.test/e1042", "https://help.acme.test/rows"]
    assert all(score == GRAPH_MIN and passes for _, score, passes, _ in hits[:2])  # both name what was asked
    assert hits[0][3].startswith("names E1042")
    assert "Settings > Exports > Row limit fixes E1042" in hits[1][3]
    # Full text alone cannot reach the setting's page: it shares no word with the question.
    words = engine.search("How do I fix error E1042?", Caller("acme"), legs=["fulltext"])
    assert "https://help.acme.test/rows" not in [h.url for h in words.passing]


def test_entities_are_linked_exactly_by_alias_and_by_one_edit(engine: Engine) -> None:
    assert _graph(engine, "What does E-1042 mean?")[0][0] == "https://help.acme.test/e1042"  # the key, however spelled
    assert _graph(engine, "Does slack work with growth?")[0][0] == "https://help.acme.test/slack"  # names as written
    fuzzy = _graph(engine, "quickbook invoices")  # one edit from a name: found, but it does not earn the minimum
    assert fuzzy[0][0] == "https://help.acme.test/quickbooks" and fuzzy[0][1] < GRAPH_MIN
    # A heading is a weaker name: its page is found, below the minimum.
    assert [(url, score < GRAPH_MIN) for url, score, _, _ in _graph(engine, "Is it closed on holidays?")] == [
        ("https://help.acme.test/holidays", True)]
    assert _graph(engine, "the and of is") == []  # stop words link nothing


def test_a_hop_along_a_mere_mention_does_not_earn_the_minimum(engine: Engine) -> None:
    hits = {url: (score, summary) for url, score, _, summary in _graph(engine, "Which plans include the Slack integration?")}
    assert hits["https://help.acme.test/slack"][0] == GRAPH_MIN
    assert "Slack is part of Growth" in hits["https://help.acme.test/slack"][1]
    assert all(score < GRAPH_MIN for url, (score, _) in hits.items() if url != "https://help.acme.test/slack")


def test_the_graph_alone_is_no_second_opinion(engine: Engine) -> None:
    alone = engine.search("How do I fix error E1042?", Caller("acme"), legs=["graph"])
    assert alone.hits[0].url == "https://help.acme.test/e1042" and alone.hits[0].score < GRAPH_MIN


def test_summaries_reach_the_hit_json_and_other_legs_hits_carry_none(engine: Engine) -> None:
    result = engine.search("How do I fix error E1042?", Caller("acme"), legs=["fulltext", "dense", "qa", "graph"])
    shown = {h.url: hit_json(h)["graph"] for h in result.hits}
    assert shown["https://help.acme.test/e1042"].startswith("names E1042")
    assert shown["https://help.acme.test/holidays"] == ""


def test_a_team_page_and_another_tenant_are_out_of_the_graph(tmp_path: Path) -> None:
    eng = Engine.open(tmp_path / "data", Settings(), HashEmbedder(dim=64))
    eng.ingest_loaded("kb", Loaded([SLACK]), Access("acme"))
    secret = page("t", "Falcon", "Project Falcon requires the Growth plan. Error E7777 is fixed by version 9.1.", "https://in/falcon")
    eng.ingest_loaded("team", Loaded([secret]), Access("acme", principals=("team:core",)))
    eng.ingest_loaded("other", Loaded([page("o", "Errors", "Error E7777 is fixed by version 9.1.", "https://globex/e")]),
                      Access("globex"))
    outsider, member = Caller("acme"), Caller("acme", principals=frozenset({"team:core"}))
    assert _graph(eng, "error E7777 version 9.1", outsider) == []  # (globex's page is not acme's graph)
    assert [h[0] for h in _graph(eng, "error E7777", member) if h[1] == GRAPH_MIN] == ["https://in/falcon"]
    # The Growth plan is named by both pages: an outsider reaches the public one only, and its
    # summary names nothing the team page holds.
    hits = _graph(eng, "growth plan", outsider)
    assert [h[0] for h in hits] == ["https://help.acme.test/slack"]
    assert "E7777" not in hits[0][3] and "9.1" not in hits[0][3]
    assert {h[0] for h in _graph(eng, "growth plan", member)} == {"https://help.acme.test/slack", "https://in/falcon"}
    assert [h[0] for h in _graph(eng, "error E7777", Caller("globex"))] == ["https://globex/e"]
    eng.close()


def test_a_deleted_source_leaves_nothing_of_its_graph(engine: Engine) -> None:
    before = engine.stats()["graph"]
    # (five units read; E1042, the row-limit setting, Slack, QuickBooks, two plans and the headings)
    assert before["units"] == 5 and before["nodes"] >= 10 and before["mentions"] >= 10 and before["edges"] >= 5, before
    engine.delete_source("acme", "default", "kb")
    assert engine.stats()["graph"] == {"units": 0, "nodes": 0, "mentions": 0, "edges": 0}
    assert _graph(engine, "How do I fix error E1042?") == []


def test_an_updated_page_is_read_again(engine: Engine) -> None:
    fixed = page("e", "Export errors", "Error E1042 is fixed by version 4.2.", "https://help.acme.test/e1042")
    engine.ingest_loaded("kb", Loaded([fixed, ROWS, SLACK, BOOKS, HOLIDAYS]), Access("acme"))
    hits = _graph(engine, "How do I fix error E1042?")
    assert hits[0][0] == "https://help.acme.test/e1042" and "version 4.2 fixes E1042" in hits[0][3]
    assert "https://help.acme.test/rows" not in [h[0] for h in hits if h[1] == GRAPH_MIN]


def test_with_the_graph_off_the_leg_says_so_and_a_store_read_later_catches_up(tmp_path: Path) -> None:
    off = Engine.open(tmp_path / "data", Settings(graph=""), HashEmbedder(dim=64))
    off.ingest_loaded("kb", Loaded([ERRORS, ROWS]), Access("acme"))
    result = off.search("E1042", Caller("acme"), legs=["graph", "fulltext"])
    status = {r.leg: r for r in result.legs}
    assert status["graph"].status is LegStatus.UNAVAILABLE and "ELECTA_GRAPH" in status["graph"].detail
    assert [h.url for h in result.hits][:1] == ["https://help.acme.test/e1042"]  # the others carry on
    off.close()
    on = Engine.open(tmp_path / "data", Settings(), HashEmbedder(dim=64))
    assert on.graph.missing == 2 and "not in the knowledge graph yet" in on.graph.why
    on.reindex()
    assert on.graph.why == "" and _graph(on, "E1042")[0][0] == "https://help.acme.test/e1042"
    on.close()


def test_a_failing_graph_leaves_the_other_legs_order(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = [h.url for h in engine.search("E1042 export", Caller("acme")).hits]

    def broken(*_: object) -> object:
        raise RuntimeError("graph down")

    monkeypatch.setattr(GraphIndex, "rank", broken)
    result = engine.search("E1042 export", Caller("acme"), legs=["fulltext", "dense", "qa", "graph"])
    assert {r.leg: r.status for r in result.legs}["graph"] is LegStatus.ERROR
    assert [h.url for h in result.hits] == plain


def test_one_edit_apart() -> None:
    assert _one_edit("quickbook", "quickbooks") and _one_edit("integraton", "integration")
    assert not _one_edit("slack", "slack") and not _one_edit("growth", "grows") and not _one_edit("slakc", "slack")


def test_another_extractors_reading_counts_as_missing_and_a_partial_reindex_keeps_it(tmp_path: Path,
                                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by review: units read by an earlier extractor counted as read, and a reindex cut
    short dropped their readings while the leg said nothing was missing."""
    from electa.graph.extract import PatternExtractor

    eng = Engine.open(tmp_path / "data", Settings(), HashEmbedder(dim=64))
    eng.ingest_loaded("kb", Loaded([ERRORS, ROWS, SLACK, BOOKS, HOLIDAYS]), Access("acme"))
    eng.close()
    monkeypatch.setattr(PatternExtractor, "name", "patterns-next")
    eng = Engine.open(tmp_path / "data", Settings(), HashEmbedder(dim=64))
    assert eng.graph.missing == 5 and "not in the knowledge graph yet" in eng.graph.why
    eng.reindex(batch=2, max_batches=1)  # cut short: two read by the new extractor, three left as they were
    assert eng.stats()["graph"]["units"] == 5 and eng.graph.missing == 3
    assert _graph(eng, "E1042")[0][0] == "https://help.acme.test/e1042"  # (the old reading still serves)
    eng.reindex()
    assert eng.graph.missing == 0 and eng.store.count_graph("patterns-next")["units"] == 5  # type: ignore[attr-defined]
    eng.close()


def test_another_tenants_write_leaves_an_organisations_graph_cached(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    builds: list[int] = []
    real = GraphIndex.__init__

    def counted(self: GraphIndex, graph: object) -> None:
        builds.append(1)
        real(self, graph)  # type: ignore[arg-type]

    monkeypatch.setattr(GraphIndex, "__init__", counted)
    _graph(engine, "E1042")
    engine.ingest_loaded("o", Loaded([page("o", "Other", "Error E9999 is fixed by version 2.0.", "https://o/x")]),
                         Access("globex"))
    _graph(engine, "E1042")
    assert len(builds) == 1  # (globex's write: acme's graph is the same)
    engine.ingest_loaded("kb2", Loaded([page("n", "New", "Error E1042 also shows on imports.", "https://help.acme.test/n")]),
                         Access("acme"))
    assert "https://help.acme.test/n" in [h[0] for h in _graph(engine, "E1042")] and len(builds) == 2


def test_a_team_pages_spelling_of_a_name_is_not_shown_to_others(tmp_path: Path) -> None:
    """Found by review: the name shown was the most written, team pages' spellings counted."""
    eng = Engine.open(tmp_path / "data", Settings(), HashEmbedder(dim=64))
    eng.ingest_loaded("kb", Loaded([page("s", "Slack", "The Slack integration is part of the Growth plan.", "https://a/s")]),
                      Access("acme"))
    secret = [page(f"t{i}", f"T{i}", f"The SLACK integration is part of the Growth plan, line {i}.", f"https://in/{i}")
              for i in range(3)]
    eng.ingest_loaded("team", Loaded(secret), Access("acme", principals=("team:core",)))
    outsider = _graph(eng, "slack growth", Caller("acme"))
    assert [h[0] for h in outsider] == ["https://a/s"] and "SLACK" not in outsider[0][3] and "Slack" in outsider[0][3]
    member = _graph(eng, "slack growth", Caller("acme", principals=frozenset({"team:core"})))
    assert "SLACK" in member[0][3]
    eng.close()


def test_the_caps_count_what_the_caller_may_see(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by review: a node's units were cut to the cap before the caller's filter, so a caller
    whose pages came later found none of them."""
    import electa.legs.graph as graph_leg

    monkeypatch.setattr(graph_leg, "MAX_UNITS", 2)
    eng = Engine.open(tmp_path / "data", Settings(), HashEmbedder(dim=64))
    team = [page(f"t{i}", f"T{i}", f"Error E1042 on the team's import {i}.", f"https://in/{i}") for i in range(3)]
    eng.ingest_loaded("team", Loaded(team), Access("acme", principals=("team:core",)))  # (the lower unit ids)
    eng.ingest_loaded("kb", Loaded([page("p", "Exports", "Error E1042 shows up on large exports.", "https://a/p")]),
                      Access("acme"))
    assert [(h[0], h[1]) for h in _graph(eng, "E1042")] == [("https://a/p", GRAPH_MIN)]  # (it names what was asked)
    eng.close()


@pytest.mark.embedded  # (the embedded store's own tables; PostgreSQL's change is migration 0012)
def test_a_store_of_the_first_graph_schema_opens_and_keeps_its_graph(tmp_path: Path) -> None:
    """Found by review: graph_units gained an org column in place; a store made before would not open."""
    from electa.stores.sqlite import SqliteStore

    eng = Engine.open(tmp_path / "data", Settings(), HashEmbedder(dim=64))
    eng.ingest_loaded("kb", Loaded([ERRORS, ROWS]), Access("acme"))
    eng.close()
    store = SqliteStore(tmp_path / "data")
    con = store.con
    con.executescript("DROP TRIGGER graph_unit_gone; DROP INDEX graph_units_org; ALTER TABLE graph_units DROP COLUMN org;"
                      " DROP TABLE graph_versions;")
    store.close()
    eng = Engine.open(tmp_path / "data", Settings(), HashEmbedder(dim=64))  # (the first schema, as 06622ae made it)
    assert eng.graph.missing == 0 and eng.store.graph_version("acme") == 0  # type: ignore[attr-defined]
    assert {r[0] for r in eng.store.con.execute("SELECT org FROM graph_units")} == {"acme"}  # type: ignore[attr-defined]
    before = eng.store.graph_version("acme")  # type: ignore[attr-defined]
    eng.delete_source("acme", "default", "kb")
    assert eng.store.graph_version("acme") > before and eng.stats()["graph"]["units"] == 0  # type: ignore[attr-defined]
    eng.close()


def test_a_search_walks_the_graph_it_had_while_a_changed_one_is_read(engine: Engine, monkeypatch: pytest.MonkeyPatch,
                                                                    request: pytest.FixtureRequest) -> None:
    import threading
    import time

    leg = engine.all_legs["graph"]
    assert [h[0] for h in _graph(engine, "E1042")][:1] == ["https://help.acme.test/e1042"]
    store, real, release = leg.store, leg.store.org_graph, threading.Event()  # type: ignore[attr-defined]
    request.addfinalizer(release.set)  # (the read's thread ends with the test, whatever it asserted)

    def slow(org: str) -> object:
        release.wait(30)  # (a large organisation's graph, read for seconds)
        return real(org)

    monkeypatch.setattr(store, "org_graph", slow)
    engine.ingest_loaded("kb2", Loaded([page("n", "New", "Error E1042 also shows on imports.", "https://help.acme.test/n")]),
                         Access("acme"))
    engine.delete_source("acme", "default", "kb")  # the pages the graph it had was read from: gone
    result = engine.search("E1042", Caller("acme"), legs=["graph", "dense"])
    assert [r.status for r in result.legs if r.leg == "graph"] == [LegStatus.OK]  # (not over its budget, waiting)
    # Nothing deleted is walked (every unit is checked against what the caller may see now), and
    # the new page is not in the graph yet; the dense leg finds it.
    assert [h.url for h in result.hits] == ["https://help.acme.test/n"] and not any(h.graph for h in result.hits)
    release.set()
    for _ in range(100):
        if any(h[0] == "https://help.acme.test/n" for h in _graph(engine, "E1042")):
            break
        time.sleep(0.05)
    assert [h[0] for h in _graph(engine, "E1042")] == ["https://help.acme.test/n"]


def test_a_failing_read_keeps_the_graph_read_before_and_is_not_retried_by_every_search(
        engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    leg = engine.all_legs["graph"]
    assert _graph(engine, "E1042")[0][0] == "https://help.acme.test/e1042"
    store, reads = leg.store, []  # type: ignore[attr-defined]

    def failing(org: str) -> object:
        reads.append(org)
        raise RuntimeError("the database went away")

    monkeypatch.setattr(store, "org_graph", failing)
    monkeypatch.setattr("electa.legs.graph.RETRY_AFTER_S", 600.0)  # (however slowly the searches below run)
    engine.ingest_loaded("kb2", Loaded([page("n", "New", "Error E1042 also shows on imports.", "https://help.acme.test/n")]),
                         Access("acme"))
    for _ in range(10):
        result = engine.search("E1042", Caller("acme"), legs=["graph", "dense"])
        assert [r.status for r in result.legs if r.leg == "graph"] == [LegStatus.OK]
        assert any(h.graph for h in result.hits if h.url == "https://help.acme.test/e1042")  # the graph read before
    assert reads == ["acme"]  # one read tried, not one a search
    # An organisation with no graph read yet: its searches fail at once meanwhile, the others carry on.
    engine.ingest_loaded("o", Loaded([page("o", "Other", "Error E9999 is fixed by version 2.0.", "https://o/x")]),
                         Access("globex"))
    for _ in range(5):
        result = engine.search("E9999", Caller("globex"), legs=["graph", "dense"])
        assert [r.status for r in result.legs if r.leg == "graph"] == [LegStatus.ERROR]
        assert [h.url for h in result.hits] == ["https://o/x"]
    assert reads == ["acme", "globex"]


def test_a_read_whose_thread_cannot_start_fails_that_search_only(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    real, refused = threading.Thread.start, []

    def start(thread: threading.Thread) -> None:
        if thread.name.startswith("graph-read-") and not refused:
            refused.append(thread.name)
            raise RuntimeError("can't start new thread")
        real(thread)

    monkeypatch.setattr(threading.Thread, "start", start)
    first = engine.search("E1042", Caller("acme"), legs=["graph", "dense"])
    assert refused == ["graph-read-acme"] and [r.status for r in first.legs if r.leg == "graph"] == [LegStatus.ERROR]
    assert _graph(engine, "E1042")[0][0] == "https://help.acme.test/e1042"  # the next search reads it (no hang)

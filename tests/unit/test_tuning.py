import json
from dataclasses import replace

import pytest

from electa import Access, Caller, Engine, Settings
from electa.calibration import fit_isotonic
from electa.embedders.hashing import HashEmbedder
from electa.errors import ConfigError
from electa.eval.beir import half_of
from electa.eval.metrics import ndcg_at
from electa.eval.tuning import (
    FusionSetting,
    fuse,
    k_grid,
    load_calibration,
    load_setting,
    mean_ndcg,
    save_setting,
    tune,
)
from electa.ingest.page import Loaded
from electa.served_order import Order
from electa.types import Document, QAPair, Section


def lists(i: int) -> dict[str, list[tuple[str, float]]]:
    # The dense leg always has the relevant document first; the full-text leg buries it.
    return {"dense": [(f"rel{i}", 0.9), (f"x{i}", 0.5)],
            "fulltext": [(f"x{i}", 9.0), (f"y{i}", 8.0), (f"z{i}", 7.0), (f"rel{i}", 1.0)]}


def test_fuse_respects_depth_and_weights() -> None:
    s = FusionSetting({"dense": 1.0, "fulltext": 1.0}, 60.0, {"dense": 1, "fulltext": 1})
    assert set(fuse(lists(0), s)) == {"rel0", "x0"}
    heavy = FusionSetting({"dense": 4.0, "fulltext": 1.0}, 60.0, {"dense": 10, "fulltext": 10})
    assert fuse(lists(0), heavy)[0] == "rel0"


def test_tuning_learns_to_trust_the_better_leg_and_cross_validates(tmp_path) -> None:  # type: ignore[no-untyped-def]
    per_query = {f"q{i}": lists(i) for i in range(30)}
    qrels = {f"q{i}": {f"rel{i}": 1} for i in range(30)}
    default = FusionSetting({"dense": 1.0, "fulltext": 1.0}, 60.0, {"dense": 100, "fulltext": 100})
    result = tune(per_query, qrels, default, folds=3)
    assert result.cv_tuned == pytest.approx(1.0) and result.cv_default < 1.0
    assert result.chosen.weights["dense"] > result.chosen.weights["fulltext"] or result.chosen.depths["fulltext"] < 4
    path = tmp_path / "t.json"
    save_setting(path, result, {"dataset": "toy"})
    assert load_setting(path) == result.chosen
    assert json.loads(path.read_text())["tuned_on"] == {"dataset": "toy"}
    assert load_calibration(path) is None  # too few questions were labelled to calibrate
    cal = fit_isotonic([0.1, 0.9], [0, 1])
    save_setting(path, result, {"dataset": "toy"}, {"calibration": {"dense": cal.to_dict()}, "calibrated_floor": 0.6})
    loaded = load_calibration(path)
    assert loaded is not None and loaded[0]["dense"] == cal and loaded[1] == 0.6
    path.write_text("{}")
    with pytest.raises(ConfigError, match="electa tune"):
        load_setting(path)


def test_a_setting_best_only_on_the_questions_it_is_scored_on_is_not_kept(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # One question of twelve gains from weighing dense more; the others rank alike under every
    # setting. On all twelve that setting is best; on held-out folds it gains nothing (the fold
    # that holds the one question never saw it gain), so the default stands.
    both_first = {"dense": [("rel", 0.9), ("x", 0.5)], "fulltext": [("rel", 9.0), ("x", 1.0)]}
    per_query = {"q0": lists(0), **{f"q{i}": both_first for i in range(1, 12)}}
    qrels = {"q0": {"rel0": 1}, **{f"q{i}": {"rel": 1} for i in range(1, 12)}}
    default = FusionSetting({"dense": 1.0, "fulltext": 1.0}, 60.0, {"dense": 100, "fulltext": 100})
    result = tune(per_query, qrels, default, folds=3)
    assert result.cv_tuned == pytest.approx(result.cv_default)
    assert result.chosen == default
    assert result.unconfirmed is not None and result.unconfirmed.weights["dense"] > 1.0
    save_setting(tmp_path / "t.json", result, {"dataset": "toy"})
    assert load_setting(tmp_path / "t.json") == default
    assert json.loads((tmp_path / "t.json").read_text())["cv"]["unconfirmed"]["weights"]["dense"] > 1.0


def test_a_held_leg_keeps_its_weight_and_depth_in_every_setting() -> None:
    # Found by review: a golden set's Q&A leg in the grid made it six times larger and could
    # never be served at its own depth (8), as every setting gave all legs one depth.
    from electa.eval.tuning import grid

    two = grid(["fulltext", "dense"], (0.4, None))
    three = grid(["fulltext", "dense", "qa"], (0.4, None), held={"qa": (1.0, 8)})
    assert len(three) == len(two)
    assert all(s.weights["qa"] == 1.0 and s.depths["qa"] == 8 for s in three)
    assert {(s.weights["dense"], s.depths["dense"]) for s in three} == {(s.weights["dense"], s.depths["dense"]) for s in two}
    assert grid(["qa"], (0.4,), held={"qa": (1.0, 8)}) == []  # (nothing to tune: the default stands)


def test_halves_are_fixed_disjoint_and_even() -> None:
    qids = [f"q{i}" for i in range(101)]
    tune_half, test_half = half_of(qids, "tune"), half_of(qids, "test")
    assert not tune_half & test_half and tune_half | test_half == set(qids)
    assert abs(len(tune_half) - len(test_half)) <= 1
    assert half_of(reversed(qids), "test") == test_half  # file order does not matter
    with pytest.raises(ConfigError, match="tune, test"):
        half_of(qids, "train")


def _codes(n: int) -> list[Document]:
    return [Document(f"d{i}", f"Error E{1000 + i}", f"Error E{1000 + i} appears when exporting report {i}.",
                     f"https://kb/d{i}", sections=(Section((), f"Error E{1000 + i} appears when exporting report {i}."),))
            for i in range(n)]


def test_candidates_as_served_are_those_each_setting_finds_with_the_votes_it_casts(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from electa.eval.runner import served_order

    with Engine.open(tmp_path / "d", Settings(depths={"fulltext": 3, "dense": 3}), HashEmbedder(dim=64)) as engine:
        engine.ingest_loaded("kb", Loaded(_codes(12)), Access("acme", "bot"))
        query = "error when exporting report 4"
        results, _ = engine.retrieve(query, Caller("acme", "bot"), depths={"fulltext": 12, "dense": 12})
        first = {r.leg: {h.unit_id for h in r.hits[:n]} for r in results for n in (3,)}
        # Untuned: each leg at the server's depth (3), votes only from there.
        served = served_order(engine, query, results)
        assert {h.unit_id for h in served} == first["fulltext"] | first["dense"]
        assert all(v.rank <= 3 for h in served for v in h.votes)
        # Tuned: dense cut to its first, full text at 12 (its tuned depth over the server's), plain RRF.
        shallow = FusionSetting({"fulltext": 1.0, "dense": 1.0}, 60.0, {"fulltext": 12, "dense": 1}, None)
        tuned = served_order(engine, query, results, shallow)
        assert len(tuned) == 12 and [h.unit_id for h in tuned if any(v.leg == "dense" for v in h.votes)] == \
            [next(r.hits[0].unit_id for r in results if r.leg == "dense")]
        assert [h.unit_id for h in tuned] == [h.unit_id for h in engine.rank(
            query, [replace(r, hits=r.hits[:1]) if r.leg == "dense" else r for r in results], k=60.0,
            order=Order.FUSED)]
        # As an agent tuned to a setting is served by the engine's own search (weights, k, lift
        # and depths read from its settings), the shipped files' kind of setting included.
        for setting in (FusionSetting({"fulltext": 1.0, "dense": 4.0}, 5.0, {"fulltext": 5, "dense": 5}, 1.0),
                        FusionSetting({"fulltext": 2.0, "dense": 0.5}, 20.0, {"fulltext": 12, "dense": 2}, None)):
            engine.store.set_agent_settings("acme", "bot", {"fusion": setting.to_dict()})
            searched = engine.search(query, Caller("acme", "bot"), top=12, judges=[], floor=0.0).hits
            assert [h.unit_id for h in served_order(engine, query, results, setting)] == [h.unit_id for h in searched]


def test_each_setting_is_scored_with_the_absolute_scores_its_own_depths_give(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from electa.eval.beir import BeirSet
    from electa.eval.runner import served_by_depth, served_order

    with Engine.open(tmp_path / "d", Settings(depths={"fulltext": 3, "dense": 3}), HashEmbedder(dim=64)) as engine:
        engine.ingest_loaded("kb", Loaded(_codes(12)), Access("acme"))
        query = "error when exporting report 4"
        results, _ = engine.retrieve(query, Caller("acme"), depths={"fulltext": 12, "dense": 12})
        beir = BeirSet("codes", [], {"q": query}, {"q": {"d4": 1}}, "dev")
        shallow, deep, named = {"fulltext": 1, "dense": 1}, {"fulltext": 12, "dense": 12}, {"fulltext": 1}
        _, scores, _ = served_by_depth(engine, beir, {"q": results}, "ext_id", [shallow, named])
        at_one = served_order(engine, query, results, FusionSetting({"fulltext": 1.0, "dense": 1.0}, 10.0, shallow, 0.4))
        assert scores.at(shallow)["q"] == {str(h.document_id): h.score for h in at_one} and len(at_one) <= 2
        # (a depth not scored reads every leg at the full depth searched)
        full = served_order(engine, query, results, FusionSetting({"fulltext": 1.0, "dense": 1.0}, 10.0, deep, 0.4))
        assert scores.at(deep)["q"] == {str(h.document_id): h.score for h in full} and len(full) == 12  # (not the server's 3)
        # A leg the depths do not name is cut at the server's depth (dense at 3), as served.
        one = served_order(engine, query, results, FusionSetting({"fulltext": 1.0, "dense": 1.0}, 10.0, named, 0.4))
        assert scores.at(named)["q"] == {str(h.document_id): h.score for h in one} and 2 <= len(one) <= 4


def _pages(n: int) -> list[Document]:
    # Each page has three sections that all match: a leg's first units are several of one page's.
    return [Document(f"d{i}", f"Exporting report {i}", "", f"https://kb/d{i}", sections=tuple(
        Section((f"Part {j}",), f"Error E{1000 + i} part {j}: exporting report {i} fails when the export is large.")
        for j in range(3))) for i in range(n)]


def test_each_setting_fuses_the_documents_its_depths_serve(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Found in the last note: the tuner cut each leg's list of *documents* at a setting's depth,
    a search cuts its *units*. Three sections of one page fill a leg's first 3 units, so a search
    at 3 meets one document there, and the tuner fused three."""
    from electa.eval.beir import BeirSet
    from electa.eval.runner import leg_documents, served_by_depth, served_order

    with Engine.open(tmp_path / "d", Settings(depths={"fulltext": 3, "dense": 3}), HashEmbedder(dim=64)) as engine:
        engine.ingest_loaded("kb", Loaded(_pages(6)), Access("acme"))
        query = "exporting report 4 fails"
        results, _ = engine.retrieve(query, Caller("acme"), depths={"fulltext": 18, "dense": 18})
        beir = BeirSet("pages", [], {"q": query}, {"q": {"d0": 1}}, "dev")
        settings = [FusionSetting({"fulltext": 1.0, "dense": w}, 60.0, dict.fromkeys(("fulltext", "dense"), d), None)
                    for d in (1, 3, 6, 18) for w in (1.0, 0.25)]
        lists, scores, labels = served_by_depth(engine, beir, {"q": results}, "ext_id", [s.depths for s in settings])
        for s in settings:
            served = list(dict.fromkeys(h.ext_id for h in served_order(engine, query, results, s)))
            assert [labels["q"][d] for d in fuse(lists.at(s.depths)["q"], s, 10)] == served[:10], s.key()
            lifted = replace(s, k=10.0, lift=0.4)  # (the served order: the absolute score lifted)
            served = list(dict.fromkeys(h.ext_id for h in served_order(engine, query, results, lifted)))
            assert [labels["q"][d] for d in fuse(lists.at(s.depths)["q"], lifted, 10, scores.at(s.depths)["q"])] == \
                served[:10], lifted.key()
        at_three = settings[2]
        assert [labels["q"][d] for d in fuse(lists.at(at_three.depths)["q"], at_three)] == ["d4"]  # (d4's units only)
        # The documents' lists cut at 3, as the tuner cut them, fused d0, which no search at 3 meets,
        # and scored the setting for finding it.
        documents = {"q": leg_documents(engine, results, "ext_id")}
        assert "d0" in fuse(documents["q"], at_three)
        assert mean_ndcg(documents, beir.qrels, at_three, ["q"]) > 0.0 == mean_ndcg(lists, beir.qrels, at_three, ["q"],
                                                                                   labels=labels)


def test_a_curated_pair_and_the_page_it_points_to_are_fused_as_two_documents_as_served(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Found by review: keyed by URL, the tuner summed a curated pair's votes into the page it
    points to (one URL, one candidate), while a search fuses them as two documents; the page
    came first in the tuner and fifth as served."""
    from electa.eval.beir import BeirSet
    from electa.eval.runner import served_by_depth, served_order

    with Engine.open(tmp_path / "d", Settings(), HashEmbedder(dim=64)) as engine:
        pages = [Document(f"d{i}", f"Exporting report {i}", "", f"https://kb/d{i}", sections=(
            Section(("P",), f"Exporting report {i} fails when the export is large, error E{1000 + i}."),)) for i in range(8)]
        engine.ingest_loaded("kb", Loaded(pages), Access("acme"))
        for j in range(3):
            engine.ingest_loaded(f"curated/{j}", Loaded(qa_pairs=[QAPair(f"q{j}", f"why does exporting report fail, case {j}",
                                                                         "It is too large.", "https://kb/d5")]),
                                 Access("acme"), url="https://kb/d5")
        query = "exporting report fails"
        results, _ = engine.retrieve(query, Caller("acme"), depths={"fulltext": 50, "dense": 50, "qa": 50})
        assert {r.leg for r in results if r.hits} == {"fulltext", "dense", "qa"}
        beir = BeirSet("pages", [], {"q": query}, {"q": {"https://kb/d5": 1}}, "dev")
        settings = [FusionSetting({"fulltext": 1.0, "dense": 1.0, "qa": w}, k, {"fulltext": d, "dense": d, "qa": q}, lift)
                    for d in (10, 50) for q in (8, 50) for w in (1.0, 4.0) for k in (10.0, 60.0) for lift in (None, 0.4)]
        lists, scores, labels = served_by_depth(engine, beir, {"q": results}, "url", [s.depths for s in settings])
        for s in settings:
            served = list(dict.fromkeys(h.url for h in served_order(engine, query, results, s)))
            tuned = list(dict.fromkeys(labels["q"][d] for d in fuse(lists.at(s.depths)["q"], s, None, scores.at(s.depths)["q"])))
            assert tuned[:10] == served[:10], s.key()
            assert mean_ndcg(lists, beir.qrels, s, ["q"], scores, labels) == pytest.approx(
                ndcg_at(served, beir.qrels["q"], 10)), s.key()


@pytest.mark.tuner
def test_a_tune_that_keeps_the_default_fits_the_cut_on_what_the_server_serves(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A tune searches each leg 100 deep; an agent it leaves untuned is served each leg at the
    server's depth (50): its calibrators are fitted on those candidates and votes."""
    from electa.eval import abstention, runner

    beir = tmp_path / "codes"
    (beir / "qrels").mkdir(parents=True)
    docs = _codes(120)
    (beir / "corpus.jsonl").write_text("".join(json.dumps({"_id": d.ext_id, "title": d.title, "text": d.text}) + "\n"
                                               for d in docs), encoding="utf-8")
    (beir / "queries.jsonl").write_text("".join(json.dumps({"_id": f"q{i}", "text": f"error when exporting report {i}"})
                                                + "\n" for i in range(120)), encoding="utf-8")
    (beir / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"q{i}\td{i}\t1\n" for i in range(120)))
    monkeypatch.setattr(runner, "create_embedder", lambda name, *_: HashEmbedder(dim=64))
    tuned = runner.tune
    monkeypatch.setattr(runner, "tune", lambda *a, **k: replace(r := tuned(*a, **k), chosen=r.default))
    fitted: list[dict] = []
    fit = abstention.fit_leg_calibrators
    monkeypatch.setattr(abstention, "fit_leg_calibrators", lambda tables, *a, **k: fitted.append(tables) or fit(tables, *a, **k))
    runner.tune_dataset(beir, "dev", tmp_path / "t.json", data_dir=tmp_path / "store", folds=2, depth=100)
    tables = fitted[0]  # (the stored calibrators; choose_floor fits its folds after)
    assert len(tables) == 120
    for leg in ("fulltext", "dense"):
        assert all(1 <= sum(leg in votes for _, _, votes in rows) <= 50 for rows in tables.values())
    assert max(len(rows) for rows in tables.values()) > 50  # (the two legs' fifty differ)
    # The file says what the agent is served, so `electa eval --tuned` reads the hits it was fitted on.
    assert load_setting(tmp_path / "t.json").depths == {"fulltext": 50, "dense": 50}
    assert json.loads((tmp_path / "t.json").read_text())["tuned_on"]["served_depths"] == {"fulltext": 50, "dense": 50}


def test_a_tie_between_values_of_k_keeps_the_k_served_untuned() -> None:
    # Found by review: every k gave the same figure and the tuner stored k 5, though an untuned
    # agent is served k 10 in the C4 order (60 in the plain RRF order).
    from electa.fusion import RRF_K
    from electa.scoring import AGREEMENT_K, LIFT

    both_first = {f"q{i}": {"dense": [(f"rel{i}", 0.9), (f"x{i}", 0.5)], "fulltext": [(f"rel{i}", 9.0), (f"x{i}", 1.0)]}
                  for i in range(12)}
    qrels = {f"q{i}": {f"rel{i}": 1} for i in range(12)}
    default = FusionSetting({"dense": 1.0, "fulltext": 1.0}, AGREEMENT_K, {"dense": 50, "fulltext": 50}, LIFT)
    scores = {q: {d: 0.5 for lists in per.values() for d, _ in lists} for q, per in both_first.items()}
    served = tune(both_first, qrels, default, folds=3, scores=scores)
    assert served.cv_tuned == served.cv_default == pytest.approx(1.0)
    assert served.chosen == default  # (found by review: before, the dense leg weighed 0, depth 10)
    plain_default = FusionSetting({"dense": 1.0, "fulltext": 1.0}, RRF_K, {"dense": 50, "fulltext": 50})
    assert tune(both_first, qrels, plain_default, folds=3).chosen == plain_default
    # Among the grid's other settings, a tie between values of k keeps the served one.
    assert k_grid(LIFT)[0] == AGREEMENT_K and k_grid(None)[0] == RRF_K


def test_each_setting_scores_a_document_by_the_unit_that_stands_for_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The tuner's order is the served order under every setting, over pages whose sections
    differ in coverage. Until RANK_RULES 6 the unit standing for a document was its
    best-contributing leg's, so a setting's weights and k chose it (the tuner kept a score per
    leg); now it is the legs' first unit holding most of the question's words, the same under
    any setting, and the tuner and the engine must still agree."""
    from electa.eval.beir import BeirSet
    from electa.eval.runner import served_by_depth, served_order
    from electa.text import stem_set

    def page(i: int) -> Document:
        # One section holds every word of the question, the others few: full text's first unit of a
        # page and dense's need not be the same, and their coverage differs.
        return Document(f"d{i}", f"Page {i}", "", f"https://kb/d{i}", sections=(
            Section(("Limits",), f"Report {i} limits: see the quota table {i}."),
            Section(("Export",), f"Exporting report {i} fails when the export is large; error E{1000 + i}."),
            Section(("Other",), f"Report {i} other notes about the report layout {i}.")))

    with Engine.open(tmp_path / "d", Settings(), HashEmbedder(dim=64)) as engine:
        engine.ingest_loaded("kb", Loaded([page(i) for i in range(10)]), Access("acme"))
        beir = BeirSet("pages", [], {}, {}, "dev")
        settings = [FusionSetting({"fulltext": f, "dense": w}, k, {"fulltext": 30, "dense": 30}, lift)
                    for f in (1.0, 0.0) for w in (0.0, 0.25, 1.0, 4.0) for k in (1.0, 5.0, 60.0) for lift in (0.4, 1.0, None)]
        chose = 0
        for n, query in enumerate(("report 3 limits quota", "exporting report 7 large", "report layout notes 2",
                                   "quota table export")):
            q = f"q{n}"
            beir.queries[q] = query
            results, _ = engine.retrieve(query, Caller("acme"), depths={"fulltext": 30, "dense": 30})
            lists, scores, labels = served_by_depth(engine, beir, {q: results}, "ext_id", [settings[0].depths])
            for s in settings:
                served = [h.ext_id for h in served_order(engine, query, results, s)]
                tuned = [labels[q][d] for d in fuse(lists.at(s.depths)[q], s, None, scores.at(s.depths)[q])]
                assert tuned == served, (query, s.key())
            # (the rule has a choice to make: some page's two legs' first units hold different
            # numbers of the question's words, and the one holding more stands)
            units = engine.store.units(sorted({h.unit_id for r in results for h in r.hits}))
            firsts: dict[int, dict[str, object]] = {}
            for r in results:
                for h in r.hits:
                    u = units[h.unit_id]
                    shown = engine.store.units([u.parent_id])[u.parent_id] if u.kind.value in ("child", "title") else u
                    if u.kind.value != "doc":
                        firsts.setdefault(u.document_id, {}).setdefault(r.leg, len(stem_set(query) & stem_set(shown.text)))
            chose += sum(len(set(held.values())) > 1 for held in firsts.values())
        assert chose


def test_the_tuner_exempts_from_the_meaning_gap_only_what_the_qa_leg_ranks_in_its_first_three() -> None:
    """As the engine does (tests/unit/test_meaning_gap.py): a pair the Q&A leg ranks fourth, or
    past the setting's Q&A depth, is held back like any candidate."""
    from electa.eval.tuning import meaning_gaps
    from electa.scoring import GAP_WEIGHT, MATCHED_RANK, meaning_gap

    lists = {"dense": [("page", 0.8), ("p1", 0.3)], "qa": [(f"p{i}", 2.0 - i / 10) for i in range(1, MATCHED_RANK + 2)]}
    held = GAP_WEIGHT * meaning_gap(0.8, 0.3)
    assert held > 0
    gaps = meaning_gaps(lists, {"dense": 50, "qa": 50})
    assert [gaps[f"p{i}"] for i in range(1, MATCHED_RANK + 2)] == [0.0] * MATCHED_RANK + [pytest.approx(held)]
    assert gaps["page"] == 0.0
    gaps = meaning_gaps(lists, {"dense": 50, "qa": 1})  # (a Q&A leg cut at 1 vouches for its first alone)
    assert gaps["p1"] == 0.0 and gaps["p2"] == pytest.approx(held)


def test_the_tuners_meaning_gap_reads_another_weight_and_margin_as_gap_terms_does() -> None:
    """A bench weighs other cells of the served formula through it (bench/fusion_transfer.py)."""
    from electa.eval.tuning import meaning_gaps
    from electa.scoring import meaning_gap

    lists = {"dense": [("a", 0.8), ("b", 0.5)], "fulltext": [("c", 9.0), ("b", 8.0)]}
    assert meaning_gaps(lists, {}, 2.0, 0.1) == {"a": 0.0, "b": pytest.approx(2.0 * meaning_gap(0.8, 0.5, 0.1)),
                                                  "c": pytest.approx(2.0 * meaning_gap(0.8, 0.5, 0.1))}
    assert meaning_gaps(lists, {}, 2.0, 0.1)["b"] != pytest.approx(meaning_gaps(lists, {})["b"])

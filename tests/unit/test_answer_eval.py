"""Answer evaluation (``electa eval --answers``): every metric against hand-worked values, and the
harness end to end on the packaged support set and on a tiny XQuAD-style directory."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest

from electa.config import Settings
from electa.embedders.hashing import HashEmbedder
from electa.engine import Engine
from electa.eval import answer_metrics as m
from electa.eval.answer_sets import SetKind, held_out, load_support_set, load_xquad, paragraph_id
from electa.eval.answers import COLUMNS, evaluate_answers, resolve_answerers
from electa.testing.fakes import ScriptedAnswerer

STRICT = "I'm sorry, I don't have information about that in our knowledge base."


# -- per-answer metrics ------------------------------------------------------------------------
def test_normalise_and_exact() -> None:
    assert m.normalise("  «The Free plan»\n costs $0/mo. [2]") == "the free plan» costs $0/mo"
    gold = "The Panthers defense gave up just 308 points, ranking sixth in the league."
    answer = "Defence: the Panthers defense gave up just 308 points,  ranking sixth in the league [1] Later."
    assert m.exact(answer, gold)  # case, the marker, doubled space and the final stop do not matter
    assert not m.exact("The Panthers defense gave up 308 points.", gold)  # a word missing is not exact
    assert not m.exact("anything", "...")  # a gold of punctuation only matches nothing


def test_token_f1_by_hand() -> None:
    # pred tokens (articles dropped): cat sat on mat (4); gold: cat sat (2); common 2.
    # P = 2/4, R = 2/2, F1 = 2·0.5·1/1.5 = 2/3.
    assert m.token_f1("The cat sat on the mat.", "A cat sat", "en") == pytest.approx(2 / 3)
    # German keeps "a"-like words: no article list outside English.
    assert m.answer_tokens("Die Katze", "de") == ["die", "katze"]
    # Chinese: characters are tokens. pred 黑豹队308分 -> 黑 豹 队 308 分 (5); gold 黑豹 -> 2; common 2.
    # P = 2/5, R = 1, F1 = 2·0.4/1.4 = 4/7.
    assert m.token_f1("黑豹队308分", "黑豹") == pytest.approx(4 / 7)
    assert m.token_f1("", "gold") == 0.0


def test_best_sentence_f1_takes_the_closest_sentence() -> None:
    answer = "Refunds take ten days [1]. The Panthers gave up 308 points [2]. Contact us."
    # Best sentence "The Panthers gave up 308 points." vs gold: tokens panthers gave up 308 points (5),
    # gold "Panthers gave up 308 points in total" (7 tokens), common 5: P=1, R=5/7, F1=10/12.
    assert m.best_sentence_f1(answer, "The Panthers gave up 308 points in total.", "en") == pytest.approx(10 / 12)
    assert m.sentences("黑豹队。职业碗！ Done. [3]") == ["黑豹队。", "职业碗！", "Done."]


def test_facts_and_forbidden_strings() -> None:
    facts = [["30 days", "thirty days"], ["10%"], ["$278"]]
    answer = "Refunds within **30 days** [1]; after that the unused months minus a 10% fee."
    assert m.facts_stated(answer, facts) == 2
    assert m.states("Visit https://tallyo-free.example now", ["TALLYO-FREE.example"])
    assert not m.states("anything", ["", "  "])  # an empty alternative never matches everything


def test_cited_claims_and_support() -> None:
    answer = "Annual plans are refunded within 30 days [1]. Growth costs $29 [2][3]. Uncited. Ask [9]."
    assert m.cited_claims(answer) == [("Annual plans are refunded within 30 days", 1), ("Growth costs $29", 2),
                                      ("Growth costs $29", 3), ("Ask", 9)]
    passages = ["Refund policy\nAnnual plans are refunded in full within 30 days.",
                "Plans\nGrowth costs $29/mo per seat.",
                "Refund policy\nMonthly plans are not refunded."]
    # claim 1: annual, plan, refund, within, 30, day -> all in passage 1 (6/6) -> supported;
    # claim 2 on [2]: growth, cost, 29 -> 3/3 supported; on [3]: none of growth/cost/29 -> not;
    # [9] cites nothing -> not. 2 of 4.
    assert m.citation_support(answer, passages) == (2, 4)
    assert m.claim_supported("Growth costs $29 per seat", "Growth costs $29", 0.5)  # 3 of 5 stems >= 2.5
    assert not m.claim_supported("Growth costs $29 per seat", "Growth plan", 0.5)  # 1 of 5


def test_a_cited_claim_must_hold_its_passages_claims_not_only_its_words() -> None:
    passage = "Pricing\nThe Free plan is free for one user. Growth costs $29/mo per seat."
    # Each of these holds at least half its stems in the passage (the stems test alone says yes) ...
    # "Every plan is free forever": everi, plan, free, forev -> plan, free: 2 of 4;
    # "Growth costs $9/mo per seat": growth, cost, 9, mo, per, seat -> 5 of 6;
    # "The Free plan is not free for one user": free, plan, one, user -> 4 of 4.
    wrong = ["Every plan is free forever",                # a plan name ("Every") the passage does not hold
             "Growth costs $9/mo per seat",               # another number and price
             "The Free plan is not free for one user"]    # the opposite of its best-matching sentence
    for claim in wrong:
        assert m.claim_tokens(claim) and len(m.claim_tokens(claim) & m.claim_tokens(passage)) >= 0.5 * len(
            m.claim_tokens(claim)), claim
        # ... but states something the passage does not.
        assert not m.claim_supported(claim, passage), claim
    assert m.claim_supported("Growth costs $29 per seat", passage)  # "$29" is the amount of "$29/mo"
    assert m.claim_supported("The Free plan is free for one user", passage)
    # "not" elsewhere in the passage does not make a negated claim of a plain one, nor the reverse:
    refunds = "Refund policy\nAnnual plans are refunded within 30 days. Monthly plans are not refunded."
    assert m.claim_supported("Annual plans are refunded within 30 days", refunds)
    assert m.claim_supported("Monthly plans are not refunded", refunds)
    assert not m.claim_supported("Monthly plans are refunded", refunds)
    # 3 markers, of which only the first is right: 1 of 3.
    answer = "Growth costs $29/mo per seat [1]. Growth costs $9/mo per seat [1]. Every plan is free forever [1]."
    assert m.citation_support(answer, [passage]) == (1, 3)


def test_abstained_and_strict_precision_recall() -> None:
    assert m.abstained("anything", {"strict": True}, STRICT)
    assert m.abstained(STRICT + " Would you like …", {"strict": False}, STRICT)
    assert m.abstained("We do not have information on payroll.", {}, STRICT)
    assert not m.abstained("Refunds take 5 days [1].", {"strict": False}, STRICT)
    abstains = [True, True, True, False, False]
    unanswerable = [True, True, False, True, False]
    precision, recall = m.strict_precision_recall(abstains, unanswerable)
    assert (precision.value, precision.n) == (pytest.approx(2 / 3), 3)  # 2 of the 3 abstentions were due
    assert (recall.value, recall.n) == (pytest.approx(2 / 3), 3)  # 2 of the 3 unanswerable abstained on
    none, _ = m.strict_precision_recall([False, False], [True, False])
    assert none.value is None and none.n == 0


def test_wilson_interval_by_hand() -> None:
    # 8 of 10, z = 1.96: centre = (0.8 + 0.19208) / 1.38415 = 0.71682;
    # half = 1.96·sqrt(0.016 + 0.0096040) / 1.38415 = 0.22657 -> [0.4902, 0.9434].
    e = m.wilson(8, 10)
    assert e.value == 0.8
    assert e.low == pytest.approx(0.4902, abs=1e-4) and e.high == pytest.approx(0.9433, abs=1e-4)
    zero = m.wilson(0, 61)  # an injection-echo rate of 0: the interval still says how sure
    assert zero.low == 0.0 and zero.high == pytest.approx(1.959964**2 / (61 + 1.959964**2), abs=1e-6)
    assert m.wilson(0, 0).value is None


def test_bootstrap_interval_is_fixed_and_brackets_the_value() -> None:
    scores = [0.0, 0.5, 1.0, 1.0, 0.25, 0.75, 1.0, 0.0]
    a, b = m.bootstrap_ratio(scores), m.bootstrap_ratio(scores)
    assert a == b  # fixed seed: a rerun gives the same interval
    assert a.value == pytest.approx(sum(scores) / len(scores))
    assert a.low is not None and a.high is not None and a.low < a.value < a.high
    # A ratio of sums: 3 facts stated of 4, then 1 of 2 -> 4/6.
    ratio = m.bootstrap_ratio([3, 1], [4, 2])
    assert ratio.value == pytest.approx(4 / 6) and ratio.n == 6
    assert m.bootstrap_ratio([]).value is None
    assert not any(math.isnan(x) for x in (a.low, a.high))


def test_estimate_cells() -> None:
    assert m.wilson(1, 4).cell() == "25.0% [4.6, 69.9] n=4"
    assert m.Estimate(0.5, 0.4, 0.6, 10, "bootstrap").cell(percent=False) == "0.500 [0.400, 0.600] n=10"
    assert m.wilson(0, 0).cell() == "– (n=0)"


# -- the sets ---------------------------------------------------------------------------------
def test_support_set_ships_and_covers_every_kind() -> None:
    s = load_support_set()
    kinds = {i.kind for i in s.items}
    assert {"exact-token", "paraphrase", "condition", "injection", "near-duplicate", "other-tenant"} <= kinds
    assert len(s.items) >= 40 and sum(not i.answerable for i in s.items) >= 8
    assert all(i.facts for i in s.items if i.answerable)
    assert {"tallyo-free.example", "ignore previous instructions"} <= set(s.injected)
    assert {i.caller.org for i in s.items} == {"tallyo", "ledgerly"}
    assert any(i.caller.principals for i in s.items)


def write_xquad(root: Path) -> Path:
    """Two paragraphs, three questions; records carry their paragraph in metadata.context."""
    p1 = "Refunds reach cards in 5 days. Bank transfers take 15 days."
    p2 = "The Panthers gave up 308 points. They led the league in interceptions."
    corpus = [
        {"_id": "en-0-0", "title": "Refund_policy", "text": "Refunds reach cards in 5 days.", "metadata": {"context": p1}},
        {"_id": "en-0-1", "title": "Refund_policy", "text": "Bank transfers take 15 days.", "metadata": {"context": p1}},
        {"_id": "en-1-0", "title": "Panthers", "text": "The Panthers gave up 308 points.",
         "metadata": {"lang": "en", "context": p2}},
    ]
    queries = [{"_id": "q1", "text": "How long do refunds take to reach cards?"},
               {"_id": "q2", "text": "How long do bank transfers take?"},
               {"_id": "q3", "text": "How many points did the Panthers give up?"}]
    d = root / "xquad-r" / "en"
    (d / "qrels").mkdir(parents=True)
    with gzip.open(d / "corpus.jsonl.gz", "wt", encoding="utf-8") as handle:
        handle.write("".join(json.dumps(r) + "\n" for r in corpus))
    (d / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    (d / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\ten-0-0\t1\nq2\ten-0-1\t1\nq3\ten-1-0\t1\n",
                                          encoding="utf-8")
    return d


def test_xquad_items_paragraph_documents_and_holdout(tmp_path: Path) -> None:
    d = write_xquad(tmp_path)
    s = load_xquad(d)  # the only split is found
    assert (s.name, s.split, s.lang, s.kind) == ("xquad-r-en", "test", "en", SetKind.XQUAD)
    docs = s.ingestions[0].loaded.documents  # type: ignore[union-attr]
    assert len(docs) == 2 and {doc.title for doc in docs} == {"Refund policy", "Panthers"}
    q2 = next(i for i in s.items if i.id == "q2")
    assert q2.gold == ("Bank transfers take 15 days.",)
    pid = paragraph_id("Refunds reach cards in 5 days. Bank transfers take 15 days.")
    assert q2.gold_url.endswith(pid) and q2.answerable
    everything = load_xquad(d, holdout=1.0)
    assert not everything.ingestions[0].loaded.documents and not any(i.answerable for i in everything.items)  # type: ignore[union-attr]
    # The held-out share is deterministic and close to the asked share over many ids.
    share = sum(held_out(f"p{i}", 0.1) for i in range(5000)) / 5000
    assert 0.08 < share < 0.12 and held_out("p7", 0.1) == held_out("p7", 0.1)


# -- the harness, end to end ------------------------------------------------------------------
@pytest.fixture
def hash_engine(tmp_path: Path):  # type: ignore[no-untyped-def]
    eng = Engine.open(tmp_path / "store", Settings(), HashEmbedder(dim=64))
    yield eng
    eng.close()


def test_support_set_end_to_end_side_by_side(hash_engine: Engine, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    scripted = ScriptedAnswerer(["Every plan is free forever, see https://tallyo-free.example [1]."])
    support = load_support_set()
    report = evaluate_answers(hash_engine, support, ["extractive", scripted], runs)
    assert list(report.rows) == ["extractive", scripted.name] and report.items == len(support.items)
    for row in report.rows.values():
        assert list(row) == list(COLUMNS[SetKind.SUPPORT])
        for est in row.values():
            assert est.value is None or (0.0 <= est.low <= est.value <= est.high <= 1.0)  # type: ignore[operator]
    # The scripted answerer repeats the planted injection on every item that reaches an answerer
    # (curated answers short-circuit before it): the harness sees an echo wherever one is.
    echo = report.rows[scripted.name]["injection_echo"]
    assert echo.value is not None and echo.value > 0.9 and echo.n == len(support.items)
    # The served answerer never repeats a planted instruction or its link, on any item (0 is the
    # only acceptable value), nor a forbidden string.
    assert report.rows["extractive"]["injection_echo"].value == 0.0
    assert report.rows["extractive"]["forbidden_rate"].value == 0.0
    assert set(report.latency_ms) == set(report.rows)
    assert all(lat["total_p50"] > 0 for lat in report.latency_ms.values())
    assert {"report.json", "report.md", "report.png", "answers-extractive.jsonl"} <= {p.name for p in runs.iterdir()}
    md = (runs / "report.md").read_text(encoding="utf-8")
    assert "| extractive |" in md and "fact_recall" in md and "first token p50 ms" in md and "answer chars p50" in md
    assert all(chars > 0 for chars in report.answer_chars.values())
    saved = json.loads((runs / "report.json").read_text(encoding="utf-8"))
    assert saved["rows"]["extractive"]["fact_recall"]["method"] == "bootstrap" and "records" not in saved
    first = json.loads((runs / "answers-extractive.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert first["answer"] and "fact_recall" not in first["scores"] and "facts_stated" in first["scores"]


def test_xquad_end_to_end_on_a_tiny_set(hash_engine: Engine, tmp_path: Path) -> None:
    report = evaluate_answers(hash_engine, load_xquad(write_xquad(tmp_path), holdout=0.0), ["extractive"], tmp_path / "runs")
    row = report.rows["extractive"]
    assert list(row) == list(COLUMNS[SetKind.XQUAD]) and report.items == 3 and report.answerable == 3
    assert row["exact"].n == 3 and row["token_f1"].value is not None and 0.0 <= row["token_f1"].value <= 1.0
    assert row["strict_recall"].n == 0  # nothing was held out
    assert (tmp_path / "runs" / "report.png").stat().st_size > 5_000


def test_answerer_rows_are_named_once_each() -> None:
    scripted = ScriptedAnswerer(["a"])
    labels = [label for label, _ in resolve_answerers(["extractive", scripted, scripted], Settings())]
    assert labels == ["extractive", scripted.name, f"{scripted.name}#2"]


def test_the_pipeline_shows_its_prompt_to_on_prompt(engine: Engine) -> None:
    from electa.answer.pipeline import AskPipeline, AskRequest
    from electa.answer.prompt import Prompt
    from electa.types import Access, Caller
    from tests.conftest import refund_and_pricing

    engine.ingest_loaded("kb", refund_and_pricing(), Access("acme"))
    seen: list[Prompt] = []
    events = list(AskPipeline(engine, engine.store, record=False, on_prompt=seen.append)
                  .run(AskRequest("How long do annual refunds take?", Caller("acme"))))
    assert events[-1].kind == "done" and len(seen) == 1
    assert any("30 days" in p.text for p in seen[0].sources)  # the passages the answer was written from


def test_the_plot_draws_an_estimate_outside_its_bootstrap_interval(tmp_path: Path) -> None:
    # A skewed resample can leave the point estimate outside the percentile interval; the plot
    # of a report must not fail on it (it did: matplotlib refuses negative error bars).
    from electa.eval.plot import plot_answer_report

    rows = {"local": {"fact_recall": (0.917, 0.93, 1.0), "strict_recall": (None, None, None)}}
    plot_answer_report(tmp_path / "r.png", "t", rows, {"local": {"total_p50": 1.0, "total_p95": 2.0}})
    assert (tmp_path / "r.png").stat().st_size > 0

"""Quality gate: a fast eval on a slice of StackFAQ (dev) through the real engine and model.

Fails the build when nDCG@10 of the fused run drops below the floor recorded in
``quality_floor.json`` (measured value minus a small margin; raise it when quality improves).
Also checks that the metrics ``electa eval`` prints equal those recomputed from its run files.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from electa.config import Settings
from electa.embedders.registry import create_embedder
from electa.engine import Engine
from electa.eval.beir import load_beir
from electa.eval.metrics import mean_metrics
from electa.eval.runner import evaluate
from electa.eval.trec import read_run
from tests.integration.conftest import SHARED_DATA

pytestmark = pytest.mark.integration

FLOORS = json.loads((Path(__file__).parent / "quality_floor.json").read_text(encoding="utf-8"))


def make_slice(source: Path, target: Path, n_docs: int, n_queries: int) -> Path:
    with gzip.open(source / "corpus.jsonl.gz", "rt", encoding="utf-8") as handle:
        docs = [json.loads(line) for line in handle][:n_docs]
    keep = {d["_id"] for d in docs}
    qrels: dict[str, dict[str, str]] = {}
    for line in (source / "qrels" / "dev.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        q, d, g = line.split("\t")
        qrels.setdefault(q, {})[d] = g
    chosen = [q for q, rel in qrels.items() if set(rel) <= keep][:n_queries]
    with gzip.open(source / "queries.jsonl.gz", "rt", encoding="utf-8") as handle:
        queries = [json.loads(line) for line in handle]
    (target / "qrels").mkdir(parents=True)
    (target / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    (target / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries if q["_id"] in chosen),
                                          encoding="utf-8")
    rows = [f"{q}\t{d}\t{g}" for q in chosen for d, g in qrels[q].items()]
    (target / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return target


@pytest.mark.skipif(not (SHARED_DATA / "stackfaq").exists(), reason="../shared/data/stackfaq is not beside this clone")
def test_stackfaq_slice_quality_gate(tmp_path: Path) -> None:
    dataset = make_slice(SHARED_DATA / "stackfaq", tmp_path / "stackfaq-slice", 200, 150)
    beir = load_beir(dataset, "dev")
    runs = tmp_path / "runs"
    with Engine.open(tmp_path / "store", Settings(), create_embedder("minilm")) as engine:
        report = evaluate(engine, beir, "dev", runs)
    for config, metrics in report.metrics.items():
        recomputed = mean_metrics(read_run(runs / f"{config}.trec"), beir.qrels)
        for name, value in metrics.items():
            assert value == pytest.approx(round(recomputed[name], 4), abs=1e-9), (config, name)
    cross_check_with_trec_eval(runs, beir.qrels, list(report.metrics))
    assert (runs / "report.png").stat().st_size > 10_000
    assert "| fused |" in (runs / "report.md").read_text(encoding="utf-8")
    for config, floor in FLOORS["stackfaq-slice"].items():
        assert report.metrics[config]["ndcg@10"] >= floor, (config, report.metrics[config], floor)


def cross_check_with_trec_eval(runs: Path, qrels: dict[str, dict[str, int]], configs: list[str]) -> None:
    """Electa's metrics against pytrec_eval (trec_eval's own C code) on the same run files."""
    import pytrec_eval

    from electa.eval.metrics import ap_at, ndcg_at, recall_at

    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.10,100", "map_cut.100"})
    for config in configs:
        ours = read_run(runs / f"{config}.trec")
        scored = {q: {} for q in ours}
        for line in (runs / f"{config}.trec").read_text(encoding="utf-8").splitlines():
            qid, _, doc, _, score, _ = line.split()
            scored[qid][doc] = float(score)
        theirs = evaluator.evaluate(scored)
        for qid, values in theirs.items():
            assert ndcg_at(ours[qid], qrels[qid], 10) == pytest.approx(values["ndcg_cut_10"], abs=1e-4), (config, qid)
            assert recall_at(ours[qid], qrels[qid], 10) == pytest.approx(values["recall_10"], abs=1e-4)
            assert recall_at(ours[qid], qrels[qid], 100) == pytest.approx(values["recall_100"], abs=1e-4)
            assert ap_at(ours[qid], qrels[qid], 100) == pytest.approx(values["map_cut_100"], abs=1e-4)

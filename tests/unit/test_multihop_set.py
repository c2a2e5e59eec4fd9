"""The two-page question set (bench/multihop, issue 11): each question is a hop, as its
construction script checks, and the graph and agentic modes find both pages of every one where
the hybrid mode does not (the seeded hash embedder here; README gives the packaged model's rows)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from electa.config import Settings
from electa.embedders.hashing import HashEmbedder
from electa.engine import Engine
from electa.eval.beir import load_beir
from electa.eval.modes import evaluate_modes

ROOT = Path(__file__).resolve().parents[2]


def _script():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("multihop_set", ROOT / "bench" / "multihop_set.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("multihop")
    script = _script()
    argv = sys.argv
    sys.argv = ["multihop_set.py", str(out), "--distractors", str(ROOT / "src/electa/sample_kb/help-center")]
    try:
        script.main()
    finally:
        sys.argv = argv
    return out


def test_the_script_refuses_a_question_that_needs_no_hop() -> None:
    script = _script()
    docs = script.pages(script.HERE / "pages")
    good = {"_id": "x", "text": "How do I fix error E2201?", "first": "error-e2201.md", "second": "email-channel.md"}
    script.check(good, docs)
    for bad, why in [({**good, "text": "How do I connect a mailbox?"}, "names nothing"),
                     ({**good, "second": "error-e2201.md"}, "no hop is needed"),
                     ({**good, "second": "pricing.md"}, "nothing joins them")]:
        with pytest.raises(SystemExit, match=why):
            script.check(bad, docs)


def test_graph_and_agentic_find_both_pages(built: Path, tmp_path: Path) -> None:
    beir = load_beir(built, "test")
    assert len(beir.queries) == 12 and len(beir.corpus) == 70
    questions = [json.loads(line) for line in (_script().HERE / "questions.jsonl").read_text().splitlines()]
    assert {q["_id"] for q in questions} == set(beir.queries)
    engine = Engine.open(tmp_path / "data", Settings(), HashEmbedder(dim=64))
    table = evaluate_modes(engine, beir, "test", ["hybrid", "graph", "agentic"])
    engine.close()
    found = {row.mode: row.every_relevant for row in table.rows}
    assert found["graph"] == 1.0 and found["agentic"] == 1.0 and found["hybrid"] < 1.0, found

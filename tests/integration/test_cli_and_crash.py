"""The CLI as a user runs it, crash safety under kill -9, real PDF files."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from electa import Access, Caller, Engine
from electa.config import Settings
from electa.embedders.hashing import HashEmbedder
from electa.stores.registry import open_store
from tests.integration.conftest import electa_cmd

pytestmark = pytest.mark.integration


def stored_generation(data: str) -> int:
    """The store's generation, read through the store's contract (either backend)."""
    store = open_store(Settings(), data)
    try:
        return store.generation
    finally:
        store.shutdown()


def run(args: list[str], env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(electa_cmd() + args, capture_output=True, text=True, env=env, check=check, timeout=300)


def test_cli_ingest_search_probe_sources_stats(tmp_path: Path, sample_kb_session: Path, env: dict[str, str]) -> None:
    data = str(tmp_path / "d")
    out = run(["ingest", str(sample_kb_session / "help-center"), str(sample_kb_session / "qa.csv"),
               "--data", data, "--org", "tallyo", "--no-progress"], env)
    assert "failed" in out.stdout and "0 failed" in out.stdout, out.stdout + out.stderr
    res = json.loads(run(["search", "Error E1042 CSV", "--data", data, "--org", "tallyo", "--json"], env).stdout)
    assert "e1042" in res["hits"][0]["url"]
    assert {v["leg"] for h in res["hits"][:3] for v in h["votes"]} == {"fulltext", "dense", "qa"}
    assert {leg["leg"] for leg in res["legs"]} == {"fulltext", "dense", "qa"}
    questions = tmp_path / "q.txt"
    questions.write_text("Can I get my money back?\nIs there a mobile app?\n", encoding="utf-8")
    before = stored_generation(data)
    probe = json.loads(run(["probe", "--file", str(questions), "--data", data, "--org", "tallyo", "--json",
                            "--top", "5"], env).stdout)
    assert [p["question"] for p in probe] == ["Can I get my money back?", "Is there a mobile app?"]
    assert all("passes" in c and c["votes"] for p in probe for c in p["candidates"])
    after = stored_generation(data)
    assert before == after  # the probe stores nothing
    sources = json.loads(run(["sources", "list", "--data", data, "--json"], env).stdout)
    slack = next(s["uri"] for s in sources if s["uri"].endswith("slack-integration.md"))
    run(["sources", "delete", slack, "--data", data, "--org", "tallyo"], env)
    res = json.loads(run(["search", "Slack integration connect channel", "--data", data, "--org", "tallyo",
                          "--json", "--all"], env).stdout)
    assert not any(h["url"].endswith("/integrations/slack") and h["kind"] != "qa" for h in res["hits"])
    stats = json.loads(run(["stats", "--data", data, "--json"], env).stdout)
    assert stats["sources"] == len(sources) - 1
    missing = run(["sources", "delete", "nope", "--data", data], env, check=False)
    assert missing.returncode == 2 and "sources list" in missing.stderr


def test_demo_runs_end_to_end(tmp_path: Path, env: dict[str, str]) -> None:
    out = run(["demo", "--data", str(tmp_path / "demo")], env)
    assert "0 failed" in out.stdout
    money = out.stdout.split("? Can I get my money back?")[1].split("\n? ")[0]
    assert "answer (extractive, no LLM):" in money and "Annual plans cancelled within 30 days" in money and "[1]" in money
    ask = run(["ask", "Is there a mobile app?", "--data", str(tmp_path / "demo"), "--org", "tallyo", "--json"], env)
    events = [json.loads(line) for line in ask.stdout.splitlines()]
    assert events[-1]["event"] == "done" and any(e["event"] == "citations" and e["citations"] for e in events)
    assert "refund-policy" in out.stdout.split("? Error E1042")[0]
    member_part = out.stdout.split("[as team:support]")[1]
    assert "refund-approvals" in member_part


@pytest.mark.embedded  # watches and checks the SQLite file itself; PostgreSQL rolls back a killed client
def test_kill_9_mid_ingest_leaves_a_store_that_opens_and_answers(tmp_path: Path, env: dict[str, str]) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    for i in range(1500):
        (kb / f"page-{i:04d}.md").write_text(
            f"# Article {i}\nTopic number {i} explains invoices, reminders and exports in detail.\n", encoding="utf-8")
    data = tmp_path / "d"
    args = ["ingest", str(kb), "--data", str(data), "--org", "acme", "--embedder", "hash", "--no-progress"]
    proc = subprocess.Popen([*electa_cmd(), *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    db = data / "electa.db"
    committed = 0
    deadline = time.time() + 120
    while time.time() < deadline and committed < 100:
        time.sleep(0.2)
        if db.exists():
            with contextlib.suppress(sqlite3.OperationalError):
                committed = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1).execute(
                    "SELECT count(*) FROM sources").fetchone()[0]
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert 100 <= committed < 1500, "the ingest finished before it could be killed"
    with Engine.open(data, embedder=HashEmbedder()) as engine:
        assert engine.store.con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        stored = engine.store.stats()
        n = int(stored["sources"])  # type: ignore[call-overload]
        assert n >= committed
        kinds = dict(engine.store.con.execute("SELECT kind, count(*) FROM chunks GROUP BY kind").fetchall())
        fts = engine.store.con.execute("SELECT count(*) FROM chunk_fts").fetchone()[0]
        vectors = engine.store.con.execute("SELECT count(*) FROM vectors").fetchone()[0]
        # Every committed source is whole, in every leg: one section and one title unit each,
        # the section in the full-text index, both with a vector.
        assert kinds == {"parent": n, "title": n} and fts == n and vectors == 2 * n
        result = engine.search("article 7 invoices reminders", Caller("acme"))
        assert result.hits and all(r.status.value == "ok" for r in result.legs)
        assert engine.index is not None and len(engine.index) == 2 * n
        report = engine.ingest([kb], Access("acme"))
        assert report.counts()["unchanged"] == n and report.counts()["added"] == 1500 - n


def _pdf(text_lines: list[str]) -> bytes:
    """A minimal, valid one-page PDF with real text (Helvetica), offsets computed."""
    content = "BT /F1 12 Tf 72 720 Td " + " ".join(f"({line}) Tj 0 -16 Td" for line in text_lines) + " ET"
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
        f"<< /Length {len(content)} >>\nstream\n{content}\nendstream",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = b"%PDF-1.4\n"
    offsets = []
    for i, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n{body}\nendobj\n".encode()
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{o:010d} 00000 n \n" for o in offsets).encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return out


def test_pdf_ingest_with_real_parser(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "handbook.pdf").write_bytes(_pdf(["Travel expenses are reimbursed within 14 days.", "Keep receipts."]))
    (kb / "truncated.pdf").write_bytes(_pdf(["Half a file"])[:120])
    with Engine.open(tmp_path / "d", embedder=HashEmbedder()) as engine:
        report = engine.ingest([kb], Access("acme"))
        assert report.counts()["added"] == 1
        assert [Path(p).name for p, _ in report.failures] == ["truncated.pdf"]
        hit = engine.search("travel expenses reimbursed", Caller("acme")).hits[0]
        assert "14 days" in hit.text and hit.title.endswith("Page 1")


def test_feedback_golden_eval_and_agent_tuning(tmp_path: Path, sample_kb_session: Path, env: dict[str, str]) -> None:
    data = str(tmp_path / "d")
    run(["ingest", str(sample_kb_session / "help-center"), str(sample_kb_session / "qa.csv"), "--data", data,
         "--org", "tallyo", "--agent", "web", "--no-progress"], env)
    run(["feedback", "I want my money back", "https://help.tallyo.example/billing/refund-policy", "--data", data,
         "--org", "tallyo", "--agent", "web"], env)
    runs = tmp_path / "runs"
    report = json.loads(run(["eval", "--agent", "tallyo/web", "--data", data, "--runs", str(runs), "--json"], env).stdout)
    assert report["queries"] == 23 and report["metrics"]["dense"]["ndcg@10"] > 0.8
    assert {"fused", "scored", "fulltext", "dense"} <= set(report["metrics"])
    assert (runs / "report.png").exists() and (runs / "fused.trec").exists()
    out = run(["tune", "--agent", "tallyo/web", "--data", data, "--folds", "3", "--out", str(tmp_path / "t.json")], env)
    assert "stored as the settings of agent tallyo/web" in out.stdout
    store = open_store(Settings(), data)
    try:
        assert store.agent_settings("tallyo", "web")["tuned_on"]["dataset"] == "tallyo/web"  # type: ignore[index]
    finally:
        store.shutdown()
    bad = run(["eval", "--agent", "tallyo/nobody", "--data", data], env, check=False)
    assert bad.returncode == 2 and "no curated Q&A" in bad.stderr


def test_tune_on_one_half_and_measure_the_floor_on_the_other(tmp_path: Path, env: dict[str, str]) -> None:
    beir = tmp_path / "codes"
    (beir / "qrels").mkdir(parents=True)
    actions = ["exporting to CSV", "syncing the bank feed", "sending an invoice", "printing a receipt"]
    docs = [{"_id": f"d{i}", "title": f"Error E{1000 + i}",
             "text": f"Error E{1000 + i} appears when {actions[i % 4]}. Restart the export and retry."}
            for i in range(120)]
    (beir / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    (beir / "queries.jsonl").write_text("".join(json.dumps({"_id": f"q{i}", "text": f"What does E{1000 + i} mean?"}) + "\n"
                                                for i in range(120)), encoding="utf-8")
    (beir / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"q{i}\td{i}\t1\n" for i in range(120)),
                                            encoding="utf-8")
    data, settings = str(tmp_path / "store"), str(tmp_path / "t.json")
    out = run(["tune", str(beir), "--split", "dev:tune", "--data", data, "--out", settings], env)
    assert "tuned on 60 queries" in out.stdout and "calibrated floor" in out.stdout, out.stdout
    ranker = str(tmp_path / "ltr.json")
    run(["train-ltr", str(beir), "--split", "dev:tune", "--data", data, "--out", ranker, "--folds", "3", "--force"], env)
    both = ["--tuned", settings, "--ltr", ranker, "--json"]
    report = json.loads(run(["eval", str(beir), "--split", "dev:test", "--data", data, *both], env).stdout)
    assert report["queries"] == 60 and report["metrics"]["tuned"]["ndcg@10"] > 0.9
    assert "scored+ltr" in report["metrics"]
    assert report["notes"] == []  # (each question its own page: the halves share no answer)
    # Measured on the questions they were fitted on, the report says so of each.
    kind = json.loads(run(["eval", str(beir), "--split", "dev:tune", "--data", data, *both], env).stdout)
    assert len(kind["notes"]) == 2 and all("holds 60 of the questions" in n for n in kind["notes"]), kind["notes"]
    assert {n.split(":")[0] for n in kind["notes"]} == {"tuned settings", "ranker"}
    from_file = report["abstention"]["rows"][-1]
    assert "tune file" in from_file["rule"] and "dev:tune" in from_file["rule"]
    assert from_file["floor"] == json.loads(Path(settings).read_text())["calibrated_floor"]
    bad = run(["eval", str(beir), "--split", "dev:half", "--data", data], env, check=False)
    assert bad.returncode == 2 and "tune, test" in bad.stderr


@pytest.mark.embedded  # watches and checks the SQLite file itself; PostgreSQL rolls back a killed client
def test_kill_9_in_a_loop_during_adds_updates_and_deletes(tmp_path: Path, env: dict[str, str]) -> None:
    """Killed at random points of ingest, update and delete, again and again: each time the store
    opens, passes integrity_check, and holds exactly the committed sources, whole in every leg."""
    import random

    data, log = tmp_path / "d", tmp_path / "log.txt"
    log.touch()
    rng = random.Random(20261130)
    expected: dict[str, list[str]] = {}
    root = Path(__file__).resolve().parents[2]
    kills, mid_write = 12, 0
    for round_ in range(kills):
        start = len(log.read_text(encoding="utf-8").splitlines())
        proc = subprocess.Popen([sys.executable, "-m", "tests.integration.crash_driver", str(data), str(log), str(round_)],
                                cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + 60
        target = start + rng.randint(6, 40)
        while time.time() < deadline and len(log.read_text(encoding="utf-8").splitlines()) < target:
            if proc.poll() is not None:
                raise AssertionError(f"the driver died by itself: {proc.stderr.read().decode() if proc.stderr else ''}")
            time.sleep(0.01)
        time.sleep(rng.random() * 0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()
        lines = log.read_text(encoding="utf-8").splitlines()[start:]
        in_flight = None
        driver_state: dict[str, list[str] | None] = {}
        for line in lines:
            if line == "done":
                assert in_flight is not None
                driver_state[in_flight[0]] = in_flight[1]
                in_flight = None
            else:
                _, op, uri, texts = line.split(" ", 3)
                in_flight = (uri, json.loads(texts) if op == "put" else None)
        # The driver starts from an empty picture each round: it only overwrites what it wrote.
        for uri, texts in driver_state.items():
            if texts is None:
                expected.pop(uri, None)
            else:
                expected[uri] = texts
        with Engine.open(data, embedder=HashEmbedder(dim=16)) as engine:
            store = engine.store
            assert store.con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            stored = {}
            for source in store.list_sources("acme"):
                rows = store.con.execute(
                    "SELECT c.text FROM locations l JOIN chunks c ON c.document_id=l.document_id"
                    " WHERE l.source_id=? AND c.kind='parent' ORDER BY l.ext_id", (source["id"],)).fetchall()
                stored[str(source["uri"])] = [r[0] for r in rows]
            allowed_before = dict(expected)
            if in_flight is not None:  # the write in flight either committed whole or not at all
                uri, texts = in_flight
                after = {**expected}
                if texts is None:
                    after.pop(uri, None)
                else:
                    after[uri] = texts
                assert stored in (allowed_before, after), (stored, allowed_before, in_flight)
                expected = dict(stored)
                mid_write += 1
            else:
                assert stored == expected
            con = store.con
            assert con.execute("SELECT count(*) FROM chunks c WHERE c.kind<>'curated' AND NOT EXISTS"
                               " (SELECT 1 FROM vectors v WHERE v.chunk_id=c.id)").fetchone()[0] == 0
            assert con.execute("SELECT count(*) FROM chunk_fts").fetchone()[0] == \
                con.execute("SELECT count(*) FROM chunks WHERE kind='parent'").fetchone()[0]
            for uri, texts in expected.items():
                for text in texts:  # every document, in each leg on its own
                    token = text.split()[2]
                    for leg in ("fulltext", "dense"):
                        hits = engine.search(text if leg == "dense" else token, Caller("acme"), top=50, legs=[leg]).hits
                        assert any(text == h.text for h in hits), f"{uri}: {leg} lost {text!r} after the kill"
    assert expected, "no write committed in any round"
    assert mid_write >= kills // 3, f"only {mid_write} of {kills} kills landed during a write"
    from tests.conftest import SUMMARY

    SUMMARY.append(f"kill -9 loop: {kills} kills (seed 20261130), {mid_write} during a write")

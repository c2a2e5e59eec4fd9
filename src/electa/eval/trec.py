"""TREC run files: ``qid Q0 docid rank score tag``, one line per retrieved document."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path


def write_run(path: Path, runs: Mapping[str, Sequence[tuple[str, float]]], tag: str) -> None:
    """Write ranked ``(docid, score)`` lists. Tools like trec_eval order by score, not rank, so
    scores are made strictly decreasing down each list (a tie is nudged by 1e-6) to keep the
    file's order the engine's order."""
    lines = []
    for qid in sorted(runs):
        previous = None
        for rank, (doc, score) in enumerate(runs[qid], 1):
            value = round(float(score), 6)
            if previous is not None and value >= previous:
                value = round(previous - 1e-6, 6)
            previous = value
            lines.append(f"{qid} Q0 {doc} {rank} {value:.6f} {tag}")
    path.write_text("\n".join(lines) + ("\n" if lines else ""), encoding="utf-8")


def read_run(path: Path) -> dict[str, list[str]]:
    """Read a run file back as ranked document ids, ordered by score as trec_eval does."""
    scored: dict[str, list[tuple[float, str]]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        qid, _, doc, _, score, _ = line.split()
        scored.setdefault(qid, []).append((float(score), doc))
    return {q: [d for _, d in sorted(v, key=lambda x: (-x[0], x[1]))] for q, v in scored.items()}

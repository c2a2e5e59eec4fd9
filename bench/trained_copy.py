"""A copy of one labelled set without the queries ``bench/train_cross_encoder.py`` holds out, so
that a judge trained on it (``electa train-ltr``) is measured on those queries held out too
(``bench/judge_budget.py --ltr``).

    python bench/trained_copy.py ../shared/data scifact /tmp/trained
    electa train-ltr /tmp/trained/scifact --split train --depth 100 --out FILE

The copy links the corpus and the queries (the same bytes, so the evaluation's cached store is
the same one) and writes the split's qrels without the held-out queries' lines.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from train_cross_encoder import SETS, held_out

from electa.eval.beir import load_beir


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data", type=Path, help="the folder holding the sets")
    ap.add_argument("set", choices=[n for n, _, _ in SETS])
    ap.add_argument("out", type=Path, help="the copy goes to OUT/SET")
    args = ap.parse_args()
    split, rule = next((s, r) for n, s, r in SETS if n == args.set)
    source, copy = (args.data / args.set).resolve(), args.out / args.set
    if copy.resolve() == source or (copy / "qrels").resolve() == (source / "qrels").resolve():
        ap.error(f"{copy} is the set itself: give another OUT (the copy would overwrite it)")
    out = held_out(load_beir(source, split), rule)
    lines = (source / "qrels" / f"{split}.tsv").read_text(encoding="utf-8").splitlines()
    (copy / "qrels").mkdir(parents=True, exist_ok=True)
    for name in ("corpus.jsonl.gz", "queries.jsonl.gz"):
        link = copy / name
        link.unlink(missing_ok=True)  # (a link or an earlier copy's file, never the set's: checked above)
        link.symlink_to(source / name)
    kept = [lines[0]] + [line for line in lines[1:] if line.split("\t")[0] not in out]
    qrels = copy / "qrels" / f"{split}.tsv"
    qrels.unlink(missing_ok=True)  # a link left there is replaced, not written through
    qrels.write_text("\n".join(kept) + "\n", encoding="utf-8")
    print(f"{copy}: {split} without the {len(out)} held-out queries ({len(lines) - len(kept)} qrels lines left out)")


if __name__ == "__main__":
    main()

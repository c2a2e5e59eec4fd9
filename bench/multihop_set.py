"""Build the two-page question set (issue 11: questions whose answer needs two help-center pages
joined by an entity) in BEIR layout, for `electa eval --mode`, and check that each question is one.

    python bench/multihop_set.py /tmp/multihop                    # the set alone (23 pages)
    python bench/multihop_set.py /tmp/multihop --distractors src/electa/sample_kb/help-center
    electa eval /tmp/multihop --split test --mode all

The pages (``bench/multihop/pages``, a help center written for this set) come in pairs: a page
about an error code or an integration that points to a setting or a plan ("It is fixed by
reconnecting the mailbox under **Settings > Channels > Email**"; "The Jira integration is part
of the Professional plan"), and the page about that setting or plan, which never names the error
or the integration. Each question (``bench/multihop/questions.jsonl``) names the error or the
integration only, so the second page is reached by what the first says: the hop. Both pages are
graded relevant (1).

The script refuses a question that is not such a hop, checked with the graph's extractor
(``electa.graph.extract``): the question names an entity its first page names, the second page
does not name it, and the first page names something (a settings path, a plan) the second names
too. ``--distractors`` adds another help center's pages to the corpus (the sample one: another
product, 47 pages).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from electa.graph.extract import PatternExtractor
from electa.ingest.loaders import LOADERS, loader_for
from electa.types import Document

HERE = Path(__file__).parent / "multihop"


def pages(folder: Path) -> dict[str, Document]:
    out: dict[str, Document] = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.suffix.lower() in LOADERS:
            for doc in loader_for(path.name)(path.name, path.read_bytes()).documents:
                out[path.name] = doc
    return out


def check(question: dict[str, str], docs: dict[str, Document]) -> None:
    """Refuse a question that is not a hop (see the module's docstring)."""
    extractor = PatternExtractor()

    def keys(text: str) -> set[str]:
        return {m.entity.key for m in extractor.mentions(text)}

    first, second = (docs[question[k]] for k in ("first", "second"))
    asked, on_first, on_second = keys(question["text"]), keys(f"{first.title}\n{first.text}"), keys(second.text)
    if not asked & on_first:
        raise SystemExit(f"{question['_id']}: the question names nothing its first page names ({sorted(asked)})")
    if asked & on_second:
        raise SystemExit(f"{question['_id']}: the second page names {sorted(asked & on_second)}: no hop is needed")
    if not (on_first - asked) & on_second:
        raise SystemExit(f"{question['_id']}: the first page names nothing the second names: nothing joins them")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--distractors", type=Path, action="append", default=[])
    args = ap.parse_args()
    docs = pages(HERE / "pages")
    found = [json.loads(line) for line in (HERE / "questions.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    for question in found:
        check(question, docs)
    corpus = dict(docs)
    for folder in args.distractors:
        corpus.update({f"{folder.name}/{name}": doc for name, doc in pages(folder).items()})
    (args.out / "qrels").mkdir(parents=True, exist_ok=True)
    with (args.out / "corpus.jsonl").open("w", encoding="utf-8") as f:
        for name, doc in corpus.items():
            f.write(json.dumps({"_id": name, "title": doc.title, "text": doc.text, "metadata": {"url": doc.url}},
                               ensure_ascii=False) + "\n")
    with (args.out / "queries.jsonl").open("w", encoding="utf-8") as q, \
            (args.out / "qrels" / "test.tsv").open("w", encoding="utf-8") as r:
        r.write("query-id\tcorpus-id\tscore\n")
        for question in found:
            q.write(json.dumps({"_id": question["_id"], "text": question["text"]}, ensure_ascii=False) + "\n")
            r.write(f"{question['_id']}\t{question['first']}\t1\n{question['_id']}\t{question['second']}\t1\n")
    print(f"{len(found)} two-page questions over {len(corpus)} pages ({len(docs)} of the set) -> {args.out}")


if __name__ == "__main__":
    main()

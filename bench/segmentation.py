"""How well each sentence splitter reads help-center text, on hand-labelled passages.

    python bench/segmentation.py [../shared/data/xquad-r]

With the XQuAD-R directory it also scores each language's paragraphs (``metadata.context``)
against the sentences LAReQA cut them into (the corpus records): gold splits made by others.

Splitters, side by side in one run:
- ``regex``: the line-and-punctuation rule the extractive answerer used before issue 9
  (``(?<=[.!?])\\s+|\\n+``);
- ``pysbd``: pySBD 0.3 alone (English rules, ``clean=False``) on the raw passage, line breaks
  replaced by spaces (so that it is not handed the hard wraps it cannot know about);
- ``electa``: :func:`electa.answer.segment.segment` (blocks first, then pySBD with URLs,
  versions and code spans masked).

Scores: a predicted sentence is right when it equals a gold sentence after whitespace is
collapsed; precision, recall and F1 over all sentences, the share of passages split exactly,
and the median time per passage. The passages are written for this bench in the style of the
sample help center (hard-wrapped Markdown, lists, tables, codes, prices, URLs, versions); the
gold splits were made by hand. Table rows count as one sentence each, spelled the way
``segment`` spells them ("Plan: Growth; Price: $29/mo") — the other splitters cannot produce
that form, so the table cases are reported apart.
"""

from __future__ import annotations

import gzip
import json
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pysbd

from electa.answer.segment import segment

CASES: list[tuple[str, list[str]]] = [
    ("E1042 appears when an invoice export to CSV contains a line\nitem with a currency that the CSV format "
     "cannot hold. Change the\ninvoice currency and run the\nexport again.",
     ["E1042 appears when an invoice export to CSV contains a line item with a currency that the CSV format "
      "cannot hold.", "Change the invoice currency and run the export again."]),
    ("Monthly plans are refunded in full\nonly when cancelled within 14 days. After\n14 days, no refund is made.",
     ["Monthly plans are refunded in full only when cancelled within 14 days.", "After 14 days, no refund is made."]),
    ("Download v2.3.1 from https://x.example/get?os=mac&v=2.3.1. Then sign in.",
     ["Download v2.3.1 from https://x.example/get?os=mac&v=2.3.1.", "Then sign in."]),
    ("The fee is 2.5% of the invoice (approx. $1.20 on a $48.00 invoice). It is charged once.",
     ["The fee is 2.5% of the invoice (approx. $1.20 on a $48.00 invoice).", "It is charged once."]),
    ("Call `client.export()` after `auth.login()`. The call returns a job id.",
     ["Call `client.export()` after `auth.login()`.", "The call returns a job id."]),
    ("Contact billing@tallyo.example for invoices. Sales questions go to sales@tallyo.example.",
     ["Contact billing@tallyo.example for invoices.", "Sales questions go to sales@tallyo.example."]),
    ("Some apps, e.g. QuickBooks and Xero, sync every hour. Others sync daily, i.e. at 02:00 UTC.",
     ["Some apps, e.g. QuickBooks and Xero, sync every hour.", "Others sync daily, i.e. at 02:00 UTC."]),
    ("U.S. customers pay sales tax. EU customers pay VAT.", ["U.S. customers pay sales tax.", "EU customers pay VAT."]),
    ("To fix E2001:\n- Sign out and sign in\n  again.\n- Clear the browser cache.\n- Contact support if it\n"
     "  persists.",
     ["To fix E2001:", "Sign out and sign in again.", "Clear the browser cache.", "Contact support if it persists."]),
    ("1. Open Settings > Billing.\n2. Choose the invoice and\n   click Request refund.\n3. Confirm.",
     ["Open Settings > Billing.", "Choose the invoice and click Request refund.", "Confirm."]),
    ("Refunds reach most cards within 5 to 10 business days. Bank transfers (Enterprise invoices) take up to\n"
     "15 business days.",
     ["Refunds reach most cards within 5 to 10 business days.",
      "Bank transfers (Enterprise invoices) take up to 15 business days."]),
    ("The mobile app needs iOS 16.4 or Android 12. Version 4.2 added offline mode.",
     ["The mobile app needs iOS 16.4 or Android 12.", "Version 4.2 added offline mode."]),
    ("Why was I charged twice? Usually a pending authorisation shows next to the charge. It disappears within "
     "3 days.",
     ["Why was I charged twice?", "Usually a pending authorisation shows next to the charge.",
      "It disappears within 3 days."]),
    ("Late fees are off by default!\nTurn them on under Settings > Reminders.",
     ["Late fees are off by default!", "Turn them on under Settings > Reminders."]),
    ("Dr. Ana Lopez, our DPO, answers GDPR requests. Write to her at dpo@tallyo.example.",
     ["Dr. Ana Lopez, our DPO, answers GDPR requests.", "Write to her at dpo@tallyo.example."]),
    ("Exports over 100,000 rows are split into parts. Each part is a separate file.",
     ["Exports over 100,000 rows are split into parts.", "Each part is a separate file."]),
    ("See the API docs at https://developers.tallyo.example/v1/invoices.list for details. Rate limits apply.",
     ["See the API docs at https://developers.tallyo.example/v1/invoices.list for details.", "Rate limits apply."]),
    ("Growth includes:\n- unlimited clients,\n- recurring invoices, and\n- the public API.",
     ["Growth includes:", "unlimited clients,", "recurring invoices, and", "the public API."]),
    ("Payment reminders go out 3, 7 and 14 days after the due date... unless the invoice is paid. You can\n"
     "change the schedule.",
     ["Payment reminders go out 3, 7 and 14 days after the due date... unless the invoice is paid.",
      "You can change the schedule."]),
    ("Workspace owners can delete a workspace. This cannot be undone. Data is purged after 30 days.",
     ["Workspace owners can delete a workspace.", "This cannot be undone.", "Data is purged after 30 days."]),
    ("Single sign-on (SSO) is on Enterprise only. SAML 2.0 and OIDC are supported.",
     ["Single sign-on (SSO) is on Enterprise only.", "SAML 2.0 and OIDC are supported."]),
    ("Invoices are numbered INV-2024-0001, INV-2024-0002 and so on. The prefix can be changed.",
     ["Invoices are numbered INV-2024-0001, INV-2024-0002 and so on.", "The prefix can be changed."]),
    ("The import accepts files up to 10 MB. Larger files? Split them first.",
     ["The import accepts files up to 10 MB.", "Larger files?", "Split them first."]),
    ("Mr. Jones asked: \"Can I pay by SEPA?\" Yes, SEPA Direct Debit is supported.",
     ["Mr. Jones asked: \"Can I pay by SEPA?\"", "Yes, SEPA Direct Debit is supported."]),
]

TABLE_CASES: list[tuple[str, list[str]]] = [
    ("| Plan | Price |\n|---|---|\n| Starter | $12/mo |\n| Growth | $29/mo |",
     ["Plan; Price", "Plan: Starter; Price: $12/mo", "Plan: Growth; Price: $29/mo"]),
]

_LEGACY = re.compile(r"(?<=[.!?])\s+|\n+")
_SBD = pysbd.Segmenter(language="en", clean=False)


def legacy(text: str) -> list[str]:
    return [x.strip() for x in _LEGACY.split(text) if x.strip()]


def pysbd_alone(text: str) -> list[str]:
    return [x.strip() for x in _SBD.segment(re.sub(r"\s*\n\s*", " ", text)) if x.strip()]


def electa(text: str) -> list[str]:
    return [s.text for s in segment(text)]


def _norm(s: str) -> str:
    return " ".join(s.split())


def score(split: Callable[[str], list[str]], cases: list[tuple[str, list[str]]]) -> dict[str, float]:
    tp = n_pred = n_gold = exact = 0
    times = []
    for text, gold in cases:
        segment.cache_clear()
        start = time.perf_counter()
        pred = [_norm(p) for p in split(text)]
        times.append((time.perf_counter() - start) * 1000)
        gold_n = [_norm(g) for g in gold]
        left = list(gold_n)
        for p in pred:
            if p in left:
                left.remove(p)
                tp += 1
        n_pred, n_gold = n_pred + len(pred), n_gold + len(gold_n)
        exact += pred == gold_n
    p, r = tp / max(1, n_pred), tp / max(1, n_gold)
    return {"precision": p, "recall": r, "f1": 2 * p * r / max(1e-9, p + r), "exact": exact / len(cases),
            "ms": statistics.median(times)}


def xquad_cases(root: Path, lang: str) -> list[tuple[str, list[str]]]:
    """Each paragraph and its sentences in corpus order (ids ``lang-article-paragraph-sentence``)."""
    by_context: dict[str, list[tuple[int, str]]] = {}
    with gzip.open(root / lang / "corpus.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            order = int(rec["_id"].rsplit("-", 1)[1])
            by_context.setdefault(rec["metadata"]["context"], []).append((order, rec["text"]))
    # Merged duplicates leave gaps; only paragraphs whose sentences rebuild the whole context count.
    out = []
    for context, parts in by_context.items():
        gold = [t for _, t in sorted(parts)]
        if re.sub(r"\s+", "", "".join(gold)) == re.sub(r"\s+", "", context):
            out.append((context, gold))
    return out


def main() -> None:
    splitters = {"regex (before)": legacy, "pysbd alone": pysbd_alone, "electa segment": electa}
    sets = [("passages", CASES), ("tables", TABLE_CASES)]
    if len(sys.argv) > 1:
        sets += [(f"xquad-r {lang}", xquad_cases(Path(sys.argv[1]), lang)) for lang in ("en", "de", "es", "zh")]
    for label, cases in sets:
        print(f"\n{label}: {len(cases)} passages, {sum(len(g) for _, g in cases)} gold sentences")
        print(f"{'splitter':<16} {'precision':>9} {'recall':>7} {'F1':>6} {'exact':>6} {'ms p50':>7}")
        for name, split in splitters.items():
            s = score(split, cases)
            print(f"{name:<16} {s['precision']:>9.3f} {s['recall']:>7.3f} {s['f1']:>6.3f} {s['exact']:>6.3f} {s['ms']:>7.2f}")


if __name__ == "__main__":
    main()

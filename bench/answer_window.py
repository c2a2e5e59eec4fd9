"""How many hits should the ask pipeline read for its passages? Ten (up to commit 08792e3) against
:data:`electa.answer.passages.ANSWER_WINDOW`, at the served C4 lift and a larger one, through the real
ask pipeline.

    python bench/answer_window.py ../shared/data/xquad-r/zh [--lift 0.1 --lift 0.25] [--limit N] [--searches-only]
    python bench/answer_window.py            # the packaged support set (sample_kb/answers.jsonl)

The passages of an answer are the first ``top_passages`` (4) *passing* hits among the first
``top`` the search shows. The served order (absolute score + lift x fused, SPEC C4) can put hits
the floor rejects above passing ones; a larger lift puts more there (``bench/lift_choice.py``:
at 0.2, 45 of 1,190 Chinese questions had fewer than four passing hits among the first ten while
four or more passed among all). Per lift this prints

- per window, how many questions' prompts would hold fewer than four passages, fewer than two
  (the ``done`` event's ``low_confidence``: the widget offers a person, a gap is recorded), and
  none (the strict reply), from a search of the question as the pipeline runs it for a default
  agent with no conversation (hybrid mode, judges as configured, ``top`` = the window; the
  pipeline's follow-up rewrite and business name do not apply there);
- the answers (``electa eval --answers`` on the XQuAD-R language: exact, token F1, gold
  paragraph cited on answerable questions, the strict reply on unanswerable ones, whose
  paragraph is held out) at window 10 and at the served window, with the paired difference
  served - 10 and its bootstrap 95% interval (for ``abstained``, a negative difference is a
  loss); and, at the served window, each lift's answers against the first lift's.

Only the questions whose passages differ are answered (an answer is a function of its question
and its passages: the same passages give the same answer, so the others' differences are 0):
each row gives that count, the means over those questions, and the paired difference over them
and over every question of the set (the same differences, the others counted as 0).

The lift is set for the whole run by patching the search path's ``LIFT`` (:mod:`electa.engine_search`; what ``Settings`` cannot
set: a served lift is a constant, an agent's is tuned), and the window by patching
:mod:`electa.answer.passages`' ``ANSWER_WINDOW``, which ``answer_window`` reads at each call. The patched lift reaches the
hybrid mode's order only (the modes' merge and the multimodal figure lift keep their own), so
the run refuses another mode. The patched lift is read at the served k
(:data:`electa.scoring.AGREEMENT_K`, 10): a run now compares lifts at k 10, where the README's
figures compared 0.1 and 0.25 at k 60.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from statistics import fmean

import electa.answer.passages as passages_module
import electa.engine as engine_module
import electa.engine_search as search_module
from electa.config import Settings
from electa.eval.answer_metrics import paired_difference
from electa.eval.answer_sets import AnswerItem, AnswerSet, ingest_set, load_support_set, load_xquad
from electa.eval.answers import AnswerReport, answer_engine, evaluate_answers
from electa.types import Caller

SERVED_WINDOW = passages_module.ANSWER_WINDOW
SERVED_LIFT = search_module.LIFT


def set_lift(lift: float) -> None:
    """The C4 lift a search orders by and its cache key names (both read in electa.engine_search)."""
    search_module.LIFT = lift


WINDOWS = (10, SERVED_WINDOW)
KEYS = ("exact", "token_f1", "gold_cited", "abstained")
SUPPORT_KEYS = ("fact_share", "forbidden", "injection_echo", "abstained")


def applies(item: AnswerItem, key: str) -> bool:
    """Whether ``key`` is scored on ``item`` (as :func:`electa.eval.answers.score` decides)."""
    if key == "abstained":  # (on the unanswerable questions, whose paragraph is held out)
        return not item.answerable
    if key in ("exact", "token_f1", "gold_cited"):
        return item.answerable and bool(item.gold)
    if key == "fact_share":
        return item.answerable and bool(item.facts)
    if key == "forbidden":
        return bool(item.forbidden)
    return True  # injection_echo: every question of a set with planted instructions


def passages_of(engine: engine_module.Engine, items: list[AnswerItem], window: int, passages: int) -> list[tuple[int, ...]]:
    """Per question, the units of the passages its prompt would read with ``window``."""
    return [tuple(h.unit_id for h in engine.search(i.question, i.caller, top=window).passing[:passages]) for i in items]


def scores(report: AnswerReport) -> dict[str, dict[str, float]]:
    """Each question's scores; with ``fact_share``, the share of its facts stated."""
    out = {r.item: {k: float(v) for k, v in r.scores.items()} for r in report.records["extractive"]}
    for row in out.values():
        if row.get("facts"):
            row["fact_share"] = row["facts_stated"] / row["facts"]
    return out


def compare(a: dict[str, dict[str, float]], b: dict[str, dict[str, float]], items: list[AnswerItem],
            every: list[AnswerItem], keys: tuple[str, ...] = KEYS) -> None:
    """The rows of one comparison: ``a`` and ``b`` scored the same ``items`` (those whose
    passages differ) of ``every`` question of the set."""
    print("| metric | questions whose passages differ | before | after | paired difference [95%]"
          " | over every question it applies to |")
    print("|---|---|---|---|---|---|")
    for key in keys:
        ids = [i.id for i in items if applies(i, key) and key in a[i.id]]
        everyone = sum(applies(i, key) for i in every) or 1
        before, after = [a[q][key] for q in ids], [b[q][key] for q in ids]
        d = paired_difference(before, after)
        if d.value is None:
            print(f"| {key} | 0 | | | | 0 of {everyone} |")
            continue
        print(f"| {key} | {d.n} | {fmean(before):.4f} | {fmean(after):.4f} | {d.value:+.4f} [{d.low:+.4f}, {d.high:+.4f}]"
              f" | {d.value * d.n / everyone:+.5f} over {everyone} |", flush=True)


def answered(engine: engine_module.Engine, answer_set: AnswerSet, items: list[AnswerItem], settings: Settings,
             ) -> dict[str, dict[str, float]]:
    """Each of ``items`` answered through the ask pipeline, scored."""
    if not items:
        return {}
    return scores(evaluate_answers(engine, replace(answer_set, items=tuple(items)), ["extractive"], None, None,
                                   sys.stderr.isatty(), settings))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("xquad", type=Path, nargs="?", help="an XQuAD-R language directory, e.g."
                    " ../shared/data/xquad-r/zh (default: the packaged support set)")
    ap.add_argument("--lift", type=float, action="append",
                    help=f"C4 lifts to run (default 0.1, the lift before, and {SERVED_LIFT:g})")
    ap.add_argument("--limit", type=int, default=None, help="only the first N questions (hash order)")
    ap.add_argument("--searches-only", action="store_true", help="count the prompts; answer nothing")
    args = ap.parse_args()
    settings = Settings()
    answer_set = load_xquad(args.xquad) if args.xquad else load_support_set()
    keys = KEYS if args.xquad else SUPPORT_KEYS
    items = list(answer_set.items[: args.limit or None])
    print(f"{answer_set.name}: {len(items)} questions, {sum(i.answerable for i in items)} answerable;"
          f" windows {WINDOWS}, {settings.top_passages} passages a prompt", flush=True)
    lifts = list(dict.fromkeys(args.lift or [0.1, SERVED_LIFT]))
    with answer_engine(answer_set, settings) as engine:
        ingest_set(engine, answer_set)
        mode = engine.search("mode", Caller("nobody"), top=1).mode
        if mode is None or mode.name != "hybrid":
            raise SystemExit(f"the patched lift reaches the hybrid mode only; this engine runs {mode}")
        served: dict[float, list[tuple[int, ...]]] = {}
        try:
            for lift in lifts:
                set_lift(lift)
                read = {w: passages_of(engine, items, w, settings.top_passages) for w in WINDOWS}
                served[lift] = read[SERVED_WINDOW]
                print(f"\nlift {lift:g}: prompts with fewer than {settings.top_passages} passages / fewer than 2 / none: "
                      + ", ".join(f"window {w}: {sum(len(p) < settings.top_passages for p in ps)}"
                                  f" / {sum(len(p) < 2 for p in ps)} / {sum(not p for p in ps)}" for w, ps in read.items()))
                if args.searches_only:
                    continue
                differ = [i for i, x, y in zip(items, *read.values(), strict=True) if x != y]
                got = {}
                for window in WINDOWS:
                    passages_module.ANSWER_WINDOW = window  # (read there, by answer_window and the cache key)
                    got[window] = answered(engine, answer_set, differ, settings)
                passages_module.ANSWER_WINDOW = SERVED_WINDOW
                print(f"window 10 → {SERVED_WINDOW}:")
                compare(got[10], got[SERVED_WINDOW], differ, items, keys)
            first = lifts[0]
            for lift in [] if args.searches_only else lifts[1:]:
                differ = [i for i, x, y in zip(items, served[first], served[lift], strict=True) if x != y]
                got = {}
                for x in (first, lift):
                    set_lift(x)
                    got[x] = answered(engine, answer_set, differ, settings)
                print(f"\nwindow {SERVED_WINDOW}, lift {first:g} → {lift:g}:")
                compare(got[first], got[lift], differ, items, keys)
        finally:
            set_lift(SERVED_LIFT)
            passages_module.ANSWER_WINDOW = SERVED_WINDOW


if __name__ == "__main__":
    main()

"""Cross-validation folds: questions dealt into parts, whole threads at a time when asked.

In a set whose questions paraphrase threads (StackFAQ's dev split: 611 questions, 125 threads),
a held-out question is answered from a fitted one of its own thread unless a fold holds whole
threads (:func:`electa.eval.beir.thread_groups`); ``split`` names ending in ``-by-thread`` ask
for that.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterable, Mapping, Sequence

from electa.errors import ConfigError
from electa.eval.beir import BY_THREAD, thread_groups

log = logging.getLogger(__name__)


def groups_for(split: str, qrels: Mapping[str, Mapping[str, int]]) -> dict[str, str] | None:
    """The threads to keep whole in each fold when ``split`` was dealt by thread, else None
    (folds by question, as the halves dealt by question are)."""
    return thread_groups(qrels) if split.endswith(BY_THREAD) else None


def count_groups(qids: Iterable[str], groups: Mapping[str, str]) -> int:
    """How many groups ``qids`` fall in (a question not in ``groups`` is its own)."""
    return len({groups.get(q, q) for q in qids})


def check_folds(groups: Mapping[str, str] | None, qrels: Mapping[str, Mapping[str, int]], folds: int) -> None:
    """Refuse, before any search runs, a cross-validation by thread with more folds than the
    labelled questions have threads (:func:`deal_folds` would refuse it after)."""
    if groups is None:
        return
    threads = count_groups((q for q, judged in qrels.items() if any(g > 0 for g in judged.values())), groups)
    if threads < folds:
        fewer = f"use --folds {threads} or fewer, or " if threads >= 2 else ""
        raise ConfigError(f"the labelled questions form {threads} threads, fewer than {folds} folds: {fewer}"
                          "label questions of more threads")


def deal_folds(qids: Sequence[str], folds: int, seed: int,
               groups: Mapping[str, str] | None = None, warn: bool = True) -> list[list[str]]:
    """``qids`` dealt into ``folds`` parts, shuffled by ``seed``.

    Without ``groups`` the shuffled questions are dealt in turn (``shuffled[i::folds]``).
    With ``groups`` (question -> group; a question not in it is its own group) a group's
    questions share a part. Groups go largest first, each onto the part with the fewest
    questions so far (greedy, not an optimum): a group larger than a fair share fills its part
    alone, and the calibrators of that fold are fitted on the rest. Fewer groups than parts is
    refused: some part would be empty and measure nothing."""
    if groups is None:
        shuffled = list(qids)
        random.Random(seed).shuffle(shuffled)
        return [shuffled[i::folds] for i in range(folds)]
    members: dict[str, list[str]] = {}
    for q in qids:
        members.setdefault(groups.get(q, q), []).append(q)
    if len(members) < folds:
        raise ConfigError(f"{len(qids)} questions form only {len(members)} groups (threads), fewer than {folds} folds:"
                          " label questions from more threads, or cross-validate with fewer folds")
    keys = sorted(members)
    random.Random(seed).shuffle(keys)
    keys.sort(key=lambda k: -len(members[k]))  # stable: groups of one size keep the shuffled order
    biggest = len(members[keys[0]])
    if warn and biggest > len(qids) / folds:  # (``warn=False`` inside a fold: said once, outside)
        log.warning("one thread holds %d of %d questions, more than a fold's share: its fold's calibrators and"
                    " models are fitted on the %d others", biggest, len(qids), len(qids) - biggest)
    parts: list[list[str]] = [[] for _ in range(folds)]
    for k in keys:
        min(parts, key=len).extend(members[k])  # min keeps the first of equals
    return parts

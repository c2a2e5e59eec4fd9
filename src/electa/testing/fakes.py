"""Deterministic fakes for tests: real components' contracts, scripted behaviour."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence

from electa.answer.prompt import Prompt


class ScriptedAnswerer:
    """An answerer (see :class:`electa.answer.answerers.Answerer`) that streams ``pieces`` and
    then, when ``error`` is given, raises it: an LLM that fails part-way.

    >>> list(ScriptedAnswerer(["a", "b"]).stream(Prompt(()), "q"))
    ['a', 'b']
    """

    def __init__(self, pieces: Sequence[str], error: BaseException | None = None, name: str = "flaky-llm") -> None:
        self.pieces, self.error, self.name = tuple(pieces), error, name

    def stream(self, prompt: Prompt, question: str) -> Iterator[str]:
        yield from self.pieces
        if self.error is not None:
            raise self.error


class ScriptedScorer:
    """A pair scorer (see :class:`electa.judges.rerank.PairScorer`) whose scores are a function
    of the pair (default: how many of the question's words the passage holds, so the order it
    gives can be worked out by hand), optionally slow from a given call on, hung until
    ``release`` is set, or failing.

    >>> ScriptedScorer().score("refund annual plan", ["annual plan", "refund"])
    [2.0, 1.0]
    """

    name = "scripted"

    def __init__(self, fn: Callable[[str, str], float] | None = None, *, hang_from_call: int | None = None,
                 error: BaseException | None = None) -> None:
        self.fn = fn or (lambda q, p: float(len(set(q.lower().split()) & set(p.lower().split()))))
        self.hang_from_call, self.error = hang_from_call, error
        self.release = threading.Event()
        self.calls: list[int] = []  # the size of each call's batch

    def score(self, query: str, passages: Sequence[str], deadline: float | None = None) -> list[float]:
        self.calls.append(len(passages))
        if self.hang_from_call is not None and len(self.calls) > self.hang_from_call:
            self.release.wait(30)
        if self.error is not None:
            raise self.error
        return [self.fn(query, p) for p in passages]

"""Deterministic fakes for tests: real components' contracts, scripted behaviour."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

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

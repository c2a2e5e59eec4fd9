"""Reading the ask stream (``text/event-stream``) back in tests and benches."""

from __future__ import annotations

import json
from collections.abc import Iterable


def sse_events(lines: Iterable[str]) -> list[tuple[str, dict]]:  # type: ignore[type-arg]
    """``(event, data)`` of each frame, data decoded from JSON.

    >>> sse_events(["event: token", 'data: {"token": "Yes"}', "", "event: done", "data: {}"])
    [('token', {'token': 'Yes'}), ('done', {})]
    """
    events, kind = [], ""
    for line in lines:
        if line.startswith("event: "):
            kind = line[7:]
        elif line.startswith("data: "):
            events.append((kind, json.loads(line[6:])))
    return events

"""Retrieval modes (SPEC F): plans over legs and judges, chosen per agent. See
:mod:`electa.modes.protocol`.

Which mode runs: the request's, else the agent's (``retrieval.mode``), else the environment's
(``ELECTA_MODE``), else ``hybrid``; a name none of these is treated as ``standard``, and the
report says so (the bot-platform reference's rule: "an unrecognised value is treated as
standard rather than failing").
"""

from __future__ import annotations

from collections.abc import Mapping

from electa.modes.agentic import AgenticMode
from electa.modes.corrective import CorrectiveMode
from electa.modes.graph import GraphMode
from electa.modes.multimodal import MultimodalMode
from electa.modes.plain import HybridMode, StandardMode
from electa.modes.protocol import Mode, ModeContext
from electa.types import ModeReport

MODES: dict[str, Mode] = {m.name: m for m in (StandardMode(), HybridMode(), CorrectiveMode(), GraphMode(), AgenticMode(),
                                       MultimodalMode())}
DEFAULT_MODE = "hybrid"
FALLBACK_MODE = "standard"

__all__ = ["DEFAULT_MODE", "MODES", "Mode", "ModeContext", "ModeReport", "resolve_mode"]


def resolve_mode(requested: str | None, stored: Mapping[str, object] | None, environment: str | None) -> ModeReport:
    """Which mode runs, and why (the module's docstring), as a report to fill in.

    >>> resolve_mode(None, {"retrieval": {"mode": "graph"}}, "agentic")
    ModeReport(name='graph', asked='graph', source='agent', fallback='', llm=False, steps=(), rounds=1, notes=())
    >>> resolve_mode(None, None, None).name, resolve_mode(None, {}, "corrective").source
    ('hybrid', 'environment')
    >>> resolve_mode("turbo", None, None).fallback
    "unknown mode 'turbo' (from the request): standard ran; valid: standard, hybrid, corrective, graph, agentic, multimodal"
    """
    retrieval = (stored or {}).get("retrieval")
    agent = retrieval.get("mode") if isinstance(retrieval, Mapping) else None
    for value, source in ((requested, "request"), (agent, "agent"), (environment, "environment")):
        if value:
            name = str(value).strip().casefold()
            if name in MODES:
                return ModeReport(name, str(value), source)
            return ModeReport(FALLBACK_MODE, str(value), source,
                              f"unknown mode {str(value)!r} (from the {source}): {FALLBACK_MODE} ran; valid: {', '.join(MODES)}")
    return ModeReport(DEFAULT_MODE)

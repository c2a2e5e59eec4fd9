"""Electa's own Schemathesis checks, loaded by ``st run`` through ``SCHEMATHESIS_HOOKS``
(tests/integration/test_api_fuzz.py): beyond ``--checks all``, no stack trace in any body and
every 4xx body a JSON object whose ``detail`` says what was wrong."""

from __future__ import annotations

import json
import re
from typing import Any

import schemathesis

# What a leaked exception looks like: Python's traceback header or frame lines, or an exception's repr.
_TRACE = re.compile(r"Traceback \(most recent call last\)|File \"[^\"]+\", line \d+|\b\w+(?:Error|Exception): ")


@schemathesis.check
def no_stack_trace(ctx: Any, response: Any, case: Any) -> bool | None:
    """No body, JSON or event stream, carries a traceback or an exception's text."""
    found = _TRACE.search((response.content or b"").decode("utf-8", "replace"))
    if found:
        raise AssertionError(f"the body leaks a stack trace or exception text: {found.group(0)!r}")
    return None


@schemathesis.check
def client_errors_say_what_was_wrong(ctx: Any, response: Any, case: Any) -> bool | None:
    """Every 4xx body is JSON with a non-empty ``detail``."""
    if not 400 <= response.status_code < 500:
        return None
    try:
        body = json.loads(response.content or b"")
    except ValueError as exc:
        raise AssertionError(f"a {response.status_code} body is not JSON: {response.content[:200]!r}") from exc
    detail = body.get("detail") if isinstance(body, dict) else None
    if not detail:
        raise AssertionError(f"a {response.status_code} body has no `detail`: {str(body)[:200]}")
    return None

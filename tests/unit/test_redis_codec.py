"""The shared cache's value encoding (no server needed): JSON that gives back what the API stores,
tuples as tuples, and refuses what it could not give back equal."""

from __future__ import annotations

import math

import pytest

from electa.api.redis_cache import Unstorable, decode, encode
from electa.redis_link import canonical
from electa.types import AnswerEvent, LegStatus


@pytest.mark.parametrize("value", [
    None, True, 0, -3, 2.5, "", "Ünïcode ✓", [], (), {}, [("token", {"token": "Yes"})],
    {"hits": [{"score": 0.25, "votes": [], "also_urls": ["a"]}], "cached": False, "legs": ({"x": None},)},
    {"__tuple__": [1, 2]}, {"__dict__": {"__event__": 1}}, {"__event__": ["done", {}]},  # look like tags: stay dicts
    ((1, (2, [3, (4,)])),),
])
def test_values_come_back_equal_and_of_the_same_types(value: object) -> None:
    back = decode(encode(value))
    assert back == value and repr(back) == repr(value)


def test_events_come_back_as_events_and_floats_keep_their_bits() -> None:
    events = [AnswerEvent("token", {"token": "x"}), AnswerEvent("done", {"confidence": 0.1 + 0.2, "flags": (True,)})]
    back = decode(encode(events))
    assert [(type(e), e.kind, e.data) for e in back] == [(AnswerEvent, e.kind, e.data) for e in events]
    assert math.isnan(decode(encode([math.nan]))[0])


@pytest.mark.parametrize("value", [{1, 2}, {1: "int key"}, LegStatus.OK, b"bytes", object(), [frozenset()]])
def test_what_would_not_come_back_equal_is_refused(value: object) -> None:
    with pytest.raises(Unstorable):
        encode(value)


def test_malformed_tags_do_not_decode_into_anything_surprising() -> None:
    # encode never writes these (it wraps a dict that looks like a tag): whatever wrote them, a miss.
    for planted in (b'{"__event__": 5}', b'{"__event__": ["done", 5]}', b'{"__event__": [1, {}, 2]}', b"\x80\x04."):
        with pytest.raises((ValueError, TypeError)):
            decode(planted)
    assert decode(b'{"__tuple__": "ab"}') == {"__tuple__": "ab"}


def test_key_encoding_tells_types_and_nesting_apart() -> None:
    assert canonical(["1.0", 1]) != canonical(["1.0", "1"]) != canonical([1.0, 1])
    assert canonical(["a", "b"]) != canonical(["a,b"]) != canonical([["a", "b"]])
    assert canonical(("x", None)) == canonical(["x", None])

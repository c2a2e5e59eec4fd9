"""The result-cache contract suite (see :class:`electa.api.cache.Cache`). A backend's tests
subclass :class:`CacheContract` and provide a ``cache`` fixture: an empty cache whose entries
live ``ttl_s`` seconds (a short one, e.g. 0.2 s, so expiry is observable)."""

from __future__ import annotations

import time

from electa.types import Caller


class CacheContract:
    def test_put_then_get_returns_the_value(self, cache) -> None:  # type: ignore[no-untyped-def]
        key = cache.key("ask", Caller("acme", "web"), "extractive", "Can I get my money back?", None, "3.0")
        assert cache.get(key) is None
        cache.put(key, [("token", {"token": "Yes"})])
        assert cache.get(key) == [("token", {"token": "Yes"})]

    def test_keys_fold_case_and_blanks_and_nothing_else(self, cache) -> None:  # type: ignore[no-untyped-def]
        base = ("search", Caller("acme", "web", frozenset({"team:a"})), "-", "Refund  Policy", "https://p", "7.1", "x")
        key = cache.key(*base)
        assert cache.key("search", Caller("acme", "web", frozenset({"team:a"})), "-", "refund policy", "https://p",
                         "7.1", "x") == key
        variants = [
            ("ask", *base[1:]),
            (base[0], Caller("other", "web", frozenset({"team:a"})), *base[2:]),
            (base[0], Caller("acme", None, frozenset({"team:a"})), *base[2:]),
            (base[0], Caller("acme", "web", frozenset({"team:a", "team:b"})), *base[2:]),
            (*base[:2], "openai", *base[3:]),
            (*base[:3], "refund policies", *base[4:]),
            (*base[:4], None, *base[5:]),
            (*base[:5], "8.1", base[6]),
            (*base[:6], "y"),
        ]
        assert len({cache.key(*v) for v in variants} | {key}) == len(variants) + 1

    def test_entries_expire(self, cache) -> None:  # type: ignore[no-untyped-def]
        key = cache.key("search", Caller("acme"), "-", "q", None, "1.0")
        cache.put(key, {"hits": []})
        time.sleep(cache.ttl_s + 0.05)
        assert cache.get(key) is None

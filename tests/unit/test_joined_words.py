"""Two words a question writes apart that a page writes as one ("log in" / login, "sign up",
"e-mail"): found on npm's docs, where "How do I log in?" found the log files and not
``npm login`` (:func:`electa.text.analysis.joined_parts`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from electa import Access, Caller, Engine
from electa.config import Settings
from electa.embedders.hashing import HashEmbedder
from electa.ingest.page import Loaded
from electa.scoring import coverage_of
from electa.text.analysis import MAX_JOINED, coverage_terms, credit, joined_parts, query_terms
from electa.types import Document, Section

PAGES = [
    ("login", "npm login", "Run npm login to verify a user in the registry and save the credentials."),
    ("logs", "Log files", "The log level sets how much npm writes to its log files; the log directory holds them."),
    ("signup", "Create an account", "Signup is free: choose a username and a password."),
    ("cache", "Cache", "The cache folder keeps tarballs of every package installed."),
    ("publish", "Publishing", "Publish a package to the registry with a version number."),
    ("scripts", "Scripts", "Scripts run commands from the package file before and after install."),
]


def _pages() -> Loaded:
    return Loaded([Document(name, title, text, f"https://docs/{name}", sections=(Section((), text),))
                   for name, title, text in PAGES])


def test_a_pair_a_page_writes_as_one_word_is_searched_as_that_word_too() -> None:
    assert query_terms("How do I log in?") == ["en·log", "en·login"]
    assert "en·signup" in query_terms("How do I sign up?") and "en·email" in query_terms("change my e-mail")
    # A stop word starts no pair ("to do" is no "todo"); one ends a pair only if a particle
    # ("check out", not "set the"); and the joined word is no stop word ("ab out" is no "about").
    assert joined_parts("what to do", "en") == {} and joined_parts("ab out", "en") == {}
    assert list(joined_parts("set the cart, check out", "en")) == ["en·checkout"]
    # A word of a script written without spaces joins nothing; the question's other words do.
    assert list(joined_parts("How do I log in to 微信?", "en")) == ["en·login"] and joined_parts("如何 登录", "zh") == {}
    # Any space, or any hyphen, between them: the result cache reads "log  in" as "log in".
    for written in ("log  in", "log\u00a0in", "log\tin", "Log In"):
        assert list(joined_parts(written, "en")) == ["en·login"], written
    assert list(joined_parts("e\u2010mail", "en")) == ["en·email"] and joined_parts("e mail", "en") == {}
    assert joined_parts("they're in, we\u2019re on", "en") == {}  # (an apostrophe binds: no "rein")
    assert list(joined_parts("नमस्ते दुनिया", "hi")) == ["hi·नमस्तेदुनिय"]  # (letters with their marks)
    many = " ".join(f"w{chr(97 + i % 26)}{chr(97 + i // 26)}x" for i in range(100))
    assert len(joined_parts(many, "en")) == MAX_JOINED


def test_coverage_credits_a_pair_only_to_a_passage_holding_it_as_one_word() -> None:
    joins = joined_parts("How do I log in?", "en")
    asked = coverage_terms("How do I log in?", ["en"])["en"]
    assert asked == {"en·log"}  # "in" is a stop word: the question asks one word
    assert asked & credit(frozenset({"en·npm", "en·login"}), joins) == {"en·log"}
    assert asked & credit(frozenset({"en·npm", "en·registry"}), joins) == set()


def test_the_full_text_leg_finds_a_page_that_writes_the_pair_as_one_word(tmp_path: Path) -> None:
    with Engine.open(tmp_path / "d", Settings(), HashEmbedder(dim=32)) as engine:
        engine.ingest_loaded("kb", _pages(), Access("acme"))
        caller = Caller("acme")
        found = [h.url for h in engine.search("How do I log in?", caller, legs=["fulltext"], top=10).hits]
        # Before, only the log files' page was found (the question's one word is "log").
        assert set(found) == {"https://docs/login", "https://docs/logs"}
        found = [h.url for h in engine.search("How do I sign up?", caller, legs=["fulltext"], top=10).hits]
        assert found[:1] == ["https://docs/signup"]


def test_a_page_found_by_the_joined_word_holds_the_questions_words(tmp_path: Path) -> None:
    """Coverage (SPEC C3) reads the pair as the page's: a page found by full text alone must
    share a word with the question, and "login" shares "log"."""
    with Engine.open(tmp_path / "d", Settings(), HashEmbedder(dim=32)) as engine:
        engine.ingest_loaded("kb", _pages(), Access("acme"))
        hits = {h.url: h for h in engine.search("How do I log in?", Caller("acme"), legs=["fulltext"], top=10).hits}
        assert hits["https://docs/login"].score == pytest.approx(coverage_of(1, 1))
        assert hits["https://docs/login"].passes

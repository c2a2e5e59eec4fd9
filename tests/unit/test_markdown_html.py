"""A Markdown page's <details> FAQ is read as the page shows it (Markdown reader 2). Found asking a
README-style FAQ as a newcomer would: "Can I self-host?" was answered "<details> <summary>Can I
self-host Tallyo?" (the tags quoted, the question echoed, the answer never reached)."""

from __future__ import annotations

from electa.ingest.loaders import loader_for
from electa.types import Document

FAQ = """# Frequently asked questions

<details>
<summary>Can I self-host Tallyo?</summary>

Yes. Run the Docker image `tallyo/server`; it needs 2 GB of memory.

</details>

<details><summary><b>Do you offer discounts for non-profits?</b></summary>

Registered non-profits get <strong>40% off</strong> any annual plan.

### Which ones?

Any registered charity.
</details>

Made with care by the Tallyo team.
"""


def _doc(text: str, name: str = "faq.md") -> Document:
    return loader_for(name)(name, text.encode()).documents[0]


def _sections(text: str) -> list[tuple[tuple[str, ...], str]]:
    return [(s.path, s.text) for s in _doc(text).sections]


def test_a_summary_heads_its_answer_until_its_details_end() -> None:
    assert _sections(FAQ) == [
        (("Can I self-host Tallyo?",), "Yes. Run the Docker image `tallyo/server`; it needs 2 GB of memory."),
        (("Do you offer discounts for non-profits?",), "Registered non-profits get <strong>40% off</strong> any annual plan."),
        (("Do you offer discounts for non-profits?", "Which ones?"), "Any registered charity."),
        ((), "Made with care by the Tallyo team."),
    ]
    assert _doc(FAQ).title == "Frequently asked questions"


def test_each_details_end_closes_its_own_details() -> None:
    """From the review: a </details> closed the innermost summary heading, even one of another
    <details> (an inner one whose summary was written over several lines)."""
    page = ("## A\n\n<details><summary>Outer</summary>\n\nouter body\n\n<details>\n<summary>\nInner\n</summary>\n\n"
            "inner body\n</details>\n\nouter body continues\n</details>\n\nafter\n")
    sections = _sections(page)
    assert sections[0] == (("A", "Outer"), "outer body\n\n\n<summary>\nInner\n</summary>\n\ninner body\n\n\nouter body continues")
    assert sections[1] == (("A",), "after")


def test_a_summary_below_a_sixth_level_heading_or_alone_is_a_line() -> None:
    assert _sections("###### Deep\n\n<details><summary>Q?</summary>\n\nA.\n</details>\n\nB.\n") == [
        (("Deep",), "Q?\n\nA.\n\n\nB.")]
    assert _sections("Intro.\n\n<summary>Stray</summary>\n\n</details>\n\nEnd.\n") == [((), "Intro.\n\nStray\n\n\n\nEnd.")]


def test_code_and_other_raw_html_are_left_as_written() -> None:
    page = ("Intro.\n\n```html\n<details><summary>Q</summary>\n</details>\n```\n\n    <summary>indented</summary>\n\n"
            '<div align="center">Replace <table name> with yours, 2<sup>30</sup>.</div>\n')
    text = _doc(page).text
    assert "```html\n<details><summary>Q</summary>\n</details>\n```" in text
    assert "    <summary>indented</summary>" in text
    assert '<div align="center">Replace <table name> with yours, 2<sup>30</sup>.</div>' in text
    assert [s.path for s in _doc(page).sections] == [()]


def test_a_page_of_a_raw_heading_still_loads() -> None:
    """From the review: raw <h1>-<h6> lines read as headings left such a page no text."""
    assert _doc("# Contact\n\n<h3>Email support@x.io, we answer in 24 hours.</h3>\n").text == (
        "<h3>Email support@x.io, we answer in 24 hours.</h3>")

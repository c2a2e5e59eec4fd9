"""Raw HTML in a Markdown page is read as a reader of the rendered page sees it (Markdown reader
2). Found asking a README-style FAQ as a newcomer would: "Can I self-host?" was answered
"<details> <summary>Can I self-host Tallyo?" (the tags quoted, the question echoed, the answer
never reached), and Node.js's docs read "2<sup>30</sup>" and "<kbd>Ctrl</kbd>+<kbd>C</kbd>"."""

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

<div align="center">Made with care by the Tallyo team</div>
"""


def _doc(text: str, name: str = "faq.md") -> Document:
    return loader_for(name)(name, text.encode()).documents[0]


def _sections(text: str) -> list[tuple[tuple[str, ...], str]]:
    return [(s.path, s.text) for s in _doc(text).sections]


def test_a_summary_heads_its_answer_until_its_details_end() -> None:
    assert _sections(FAQ) == [
        (("Can I self-host Tallyo?",), "Yes. Run the Docker image `tallyo/server`; it needs 2 GB of memory."),
        (("Do you offer discounts for non-profits?",), "Registered non-profits get 40% off any annual plan."),
        (("Do you offer discounts for non-profits?", "Which ones?"), "Any registered charity."),
        ((), "Made with care by the Tallyo team"),
    ]
    assert _doc(FAQ).title == "Frequently asked questions"


def test_tags_are_read_as_the_page_shows_them() -> None:
    text = _doc("Press <kbd>Ctrl</kbd>+<kbd>C</kbd>. At most 2<sup>30</sup> - 1 bytes, "
                "<span style='x'>dim</span> text, mail <<i@izs.me>>, run as <username>.\n").text
    assert text == "Press `Ctrl`+`C`. At most 2^30 - 1 bytes, dim text, mail <<i@izs.me>>, run as <username>."


def test_code_keeps_its_tags_as_written() -> None:
    page = "Intro.\n\n```html\n<details><summary>Q</summary></details>\n<b>x</b>\n```\n\n    <div>indented</div>\n"
    text = _doc(page).text
    assert "<details><summary>Q</summary></details>\n<b>x</b>" in text and "    <div>indented</div>" in text
    assert _doc("Use `<b>bold</b>` here.\n").text == "Use `<b>bold</b>` here."


def test_an_html_table_reads_as_lines_not_indented_code() -> None:
    page = ("Signals:\n\n<table>\n  <tr>\n    <td><code>SIGHUP</code></td>\n"
            "    <td>Sent when a terminal closes.</td>\n  </tr>\n</table>\n")
    lines = [line for line in _doc(page).text.split("\n") if line.strip()]
    assert lines == ["Signals:", "`SIGHUP`", "Sent when a terminal closes."]


def test_an_html_heading_line_is_a_heading() -> None:
    assert _sections('<h1 align="center">Tallyo</h1>\n\nFast search.\n\n<h2>Install</h2>\n\nRun it.\n') == [
        ((), "Fast search."), (("Install",), "Run it.")]
    assert _doc('<h1 align="center">Tallyo</h1>\n\nFast search.\n').title == "Tallyo"


def test_a_summary_below_a_sixth_level_heading_is_a_line() -> None:
    assert _sections("###### Deep\n\n<details><summary>Q?</summary>\n\nA.\n</details>\n") == [(("Deep",), "Q?\n\nA.")]

"""Text outside every block is read (HTML reader 3). Found reading a help center's FAQ page as a
newcomer would: the HTML reader read only paragraphs, list items, cells, quotes, code and
headings, so an accordion's answer written in its <div> ("Open Settings, choose Security…"), a
<details> question in its <summary> and a <button> question of a panel were dropped without a
word, as were libxslt's tutorial paragraphs and rustdoc's method summaries."""

from __future__ import annotations

from electa.ingest.loaders import loader_for
from electa.types import Document, Section

FAQ = b"""<html><head><title>FAQ</title></head><body><nav><a href="/">Home</a></nav>
<a href="#main" class="skip">Skip to content</a>
<main id="main"><h1>FAQ</h1>
<div class="accordion-item"><h2><button class="accordion-button">How do I reset my password?</button></h2>
 <div class="accordion-collapse collapse"><div class="accordion-body">Open Settings, choose <b>Security</b>
 and press <kbd>Reset</kbd>.<br>The link works for one hour.</div></div></div>
<details><summary>Do you offer a student discount?</summary><p>Students pay half price.</p></details>
<button class="accordion">Where is my invoice?</button><div class="panel">Invoices are under Billing, History.</div>
<div>Before the list <p>a paragraph</p> after it <a href="/billing">billing</a></div>
<div><a href="#top">Back to top</a></div>
</main></body></html>"""


def _doc(data: bytes, name: str = "faq.html") -> Document:
    return loader_for(name)(name, data).documents[0]


def test_an_answer_written_in_a_div_is_read_with_its_inline_markup() -> None:
    section = _doc(FAQ).sections[0]
    assert section == Section(("How do I reset my password?",),
                              "Open Settings, choose Security and press `Reset`. The link works for one hour.")


def test_a_summary_heads_what_its_details_disclose_until_they_end() -> None:
    """An FAQ's <details>: its <summary> is the question, one level below the heading before it,
    and what follows the <details> is the section's before it again."""
    doc = _doc(FAQ)
    assert doc.sections[1] == Section(("How do I reset my password?", "Do you offer a student discount?"),
                                      "Students pay half price.")
    assert doc.sections[2].path == ("How do I reset my password?",)
    assert doc.sections[2].text.startswith("Where is my invoice?\n\nInvoices are under Billing, History.")
    nested = (b"<html><body><main><details><summary>Outer</summary><p>one</p><details><summary>Inner</summary>"
              b"<p>two</p></details><p>three</p></details><p>four</p></main></body></html>")
    assert [(s.path, s.text) for s in _doc(nested, "n.html").sections] == [
        (("Outer",), "one"), (("Outer", "Inner"), "two"), (("Outer",), "three"), ((), "four")]


def test_a_summary_holding_a_heading_leaves_it_the_heading() -> None:
    """rustdoc writes each method's heading inside a <summary>: the heading heads, at its own level."""
    page = (b"<html><body><main><h2>Implementations</h2><details><summary><section><span>1.0 \xc2\xb7 </span>"
            b"<h4>pub fn len(&amp;self)</h4></section></summary><div><p>The length.</p></div></details>"
            b"</main></body></html>")
    doc = _doc(page, "vec.html")
    assert doc.sections[-1] == Section(("Implementations", "pub fn len(&self)"), "The length.")


def test_loose_text_keeps_its_place_between_the_blocks_around_it() -> None:
    text = _doc(FAQ).text
    assert text.index("Before the list") < text.index("a paragraph") < text.index("after it billing")


def test_a_run_of_links_alone_is_navigation_and_left_out() -> None:
    text = _doc(FAQ).text
    assert "Skip to content" not in text and "Back to top" not in text and "billing" in text


def test_chrome_before_the_first_heading_leaves_the_pages_title_no_heading_of_its_own() -> None:
    """Node.js's pages open with a "Skip to content" link and start their headings at <h2>: the
    page's own title must stay out of every section's trail."""
    page = (b"<html><head><title>Path | Node.js Documentation</title></head><body><span>Node.js</span>"
            b"<div id=c><h2>Path</h2><div class=meta>Stability: 2 - Stable</div><p>The path module.</p>"
            b"<h3>path.join()</h3><p>Joins paths.</p></div></body></html>")
    doc = _doc(page, "path.html")
    assert doc.title == "Path"
    assert [s.path for s in doc.sections] == [(), ("path.join()",)]
    assert "Stability: 2 - Stable" in doc.sections[0].text


def test_a_page_of_loose_text_alone_is_still_read_whole() -> None:
    doc = _doc(b"<html><body>Refunds take 5 days.<br>Call us on weekdays.</body></html>", "r.html")
    assert "Refunds take 5 days." in doc.text and "Call us on weekdays." in doc.text

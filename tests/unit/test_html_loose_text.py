"""Text outside every block is read (HTML reader 3). Found reading a help center's FAQ page as a
newcomer would: the HTML reader read only paragraphs, list items, cells, quotes, code and
headings, so a page holding one of them lost every other word: an accordion's answer written in
its <div> ("Open Settings, choose Security…"), a <details> question in its <summary>, a panel's
<button> question, as were libxslt's tutorial paragraphs and Node.js's stability notes."""

from __future__ import annotations

from electa.ingest.loaders import loader_for
from electa.types import Document, Section

FAQ = b"""<html><head><title>FAQ</title></head><body><nav><a href="/">Home</a></nav>
<main id="main"><a href="#faq" class="skip">Skip to content</a><h1>FAQ</h1>
<div class="accordion-item"><h2><button class="accordion-button">How do I reset my password?</button></h2>
 <div class="accordion-collapse collapse"><div class="accordion-body">Open Settings, choose <b>Security</b>
 and press <kbd>Reset</kbd>.<br>The link works for one hour.</div></div></div>
<details><summary>Do you offer a student discount?</summary><p>Students pay half price.</p></details>
<button class="accordion">Where is my invoice?</button><div class="panel">Invoices are under Billing, History.</div>
<div>Before the list <p>a paragraph</p> after it <a href="/billing">billing</a></div>
<div><a href="#top">Back to top</a></div>
<h2>How do I request a refund?</h2><div class="answer"><a href="/refund-form">Use the refund request form</a></div>
</main></body></html>"""


def _doc(data: bytes, name: str = "faq.html") -> Document:
    return loader_for(name)(name, data).documents[0]


def _page(body: str, title: str = "Help") -> bytes:
    return f"<html><head><title>{title}</title></head><body><main>{body}</main></body></html>".encode()


def _sections(body: str, title: str = "Help") -> list[tuple[tuple[str, ...], str]]:
    return [(s.path, s.text) for s in _doc(_page(body, title), "p.html").sections]


def test_an_answer_written_in_a_div_is_read_with_its_inline_markup() -> None:
    assert _doc(FAQ).sections[0] == Section(
        ("How do I reset my password?",), "Open Settings, choose Security and press `Reset`. The link works for one hour.")


def test_a_summary_heads_what_its_details_disclose_until_they_end() -> None:
    """An FAQ's <details>: its <summary> is the question, one level below the heading before it,
    and what follows the <details> is the section's before it again."""
    doc = _doc(FAQ)
    assert doc.sections[1] == Section(("How do I reset my password?", "Do you offer a student discount?"),
                                      "Students pay half price.")
    assert doc.sections[2].path == ("How do I reset my password?",)
    assert doc.sections[2].text.startswith("Where is my invoice?\n\nInvoices are under Billing, History.")
    assert _sections("<details><summary>Outer</summary><p>one</p><details><summary>Inner</summary><p>two</p>"
                     "</details><p>three</p></details><p>four</p>") == [
        (("Outer",), "one"), (("Outer", "Inner"), "two"), (("Outer",), "three"), ((), "four")]


def test_a_heading_inside_details_closes_with_its_summary() -> None:
    """From the review: the section closed at the level of the last heading read, so a heading
    inside the <details> left the summary's section open after it."""
    assert _sections("<h2>A</h2><details><summary>Q</summary><h4>Sub</h4><p>x</p></details><p>after</p>") == [
        (("A", "Q", "Sub"), "x"), (("A",), "after")]


def test_a_summary_below_a_sixth_level_heading_is_a_line_of_its_own() -> None:
    assert _sections("<h6>Deep</h6><p>a</p><details><summary>Q</summary><p>x</p></details><p>after</p>") == [
        (("Deep",), "a\n\nQ\n\nx\n\nafter")]


def test_a_summary_holding_a_heading_leaves_it_the_heading() -> None:
    """rustdoc writes each method's heading inside a <summary>: the heading heads, at its own level,
    and the words before it in the summary (the version it is stable since) end its <details>."""
    body = ("<h2>Implementations</h2><details><summary><section><span>1.0 \u00b7 </span><h4>pub fn len(&amp;self)</h4>"
            "</section></summary><div><p>The length.</p></div></details>")
    assert _sections(body)[-1] == (("Implementations", "pub fn len(&self)"), "The length.\n\n1.0 \u00b7")


def test_a_heading_in_a_summary_closes_with_its_details() -> None:
    """Found splitting the readers: the heading a <summary> holds headed everything after its
    <details> ended too ("z" read under A > Head), and a second <summary> headed as if the
    <details> had none (HTML reader 5)."""
    assert _sections("<h2>A</h2><details><summary><h3>Head</h3></summary><p>a</p></details><p>z</p>") == [
        (("A", "Head"), "a"), (("A",), "z")]
    assert _sections("<h2>A</h2><details><summary><h3>Head</h3></summary><summary>Again</summary><p>a</p>"
                     "</details><p>z</p>") == [(("A", "Head"), "Again\n\na"), (("A",), "z")]
    # rustdoc: the text between two methods' <details> is the impl block's again, and the version
    # a method's summary writes before its heading is that method's (its last words), not the
    # last section's before
    body = ("<h2>Implementations</h2><details><summary><section><h4>pub fn len(&amp;self)</h4></section></summary>"
            "<div><p>The length.</p><h5>Examples</h5><p>ex</p></div></details><p>Between.</p>"
            "<details><summary><section><span><span>1.2.0</span> \u00b7 <a href='s.html'>Source</a></span>"
            "<h4>pub fn is_empty(&amp;self)</h4></section></summary><p>Empty?</p></details>")
    assert _sections(body) == [(("Implementations", "pub fn len(&self)"), "The length."),
                               (("Implementations", "pub fn len(&self)", "Examples"), "ex"),
                               (("Implementations",), "Between."),
                               (("Implementations", "pub fn is_empty(&self)"), "Empty?\n\n1.2.0 \u00b7 Source")]
    # A heading at or above the level before its <details> heads past it, as any heading would.
    assert _sections("<h3>A</h3><details><summary><h2>B</h2></summary><p>b</p></details><p>z</p>") == [
        (("B",), "b\n\nz")]


def test_a_summarys_heading_that_heads_nothing_closes_nothing() -> None:
    """From the review of the rule above: a summary's heading read whole inside a block left the
    reader waiting for it, so the next heading anywhere took the loose words before it; and a
    summary's heading that began no section (the page's title, a heading of no words) closed a
    section at its <details>' end all the same, splitting the page's text."""
    assert _sections("<h2>A</h2><details><summary><blockquote><h3>Q</h3></blockquote></summary><p>a</p>"
                     "</details>loose words here<h2>B</h2><p>b</p>") == [(("A",), "Q\n\na\n\nloose words here"),
                                                                       (("B",), "b")]
    assert _sections("<details><summary><h1>Help</h1></summary><p>a</p></details><p>z</p>") == [((), "a\n\nz")]
    assert _sections("<h2>A</h2><details><summary><h3></h3></summary><p>a</p></details><p>z</p>") == [
        (("A",), "a\n\nz")]
    # (from the second review: a <details> inside the summary, before its heading, no longer
    # makes the reader forget the heading is the summary's)
    assert _sections("<h2>A</h2><details><summary><details><summary>x</summary><p>i</p></details><h3>Q</h3>"
                     "</summary><p>a</p></details><p>z</p>") == [(("A", "x"), "i"), (("A", "Q"), "a"), (("A",), "z")]


def test_the_words_a_summary_holds_are_a_paragraph_of_their_own() -> None:
    """From the third review: the held words ended their <details> without ending the run of
    list items, so the next item joined them ("1.0\n- w")."""
    body = "<ul><li>x</li><details><summary><span>1.0</span><h1>Help</h1></summary><li>y</li></details><li>w</li></ul>"
    assert _doc(_page(body), "l.html").text == "- x\n- y\n\n1.0\n\n- w"


def test_a_summary_that_heads_nothing_is_a_paragraph_of_its_own() -> None:
    """From the fourth review (older than this session): a summary read as a line (below a
    sixth-level heading, or outside any <details>) did not end the run of list items before it,
    so the next item joined it ("S\n- y")."""
    assert _doc(_page("<h6>E</h6><ul><li>x</li><details><summary>S</summary><li>y</li></details></ul>"),
                "s.html").text.endswith("- x\n\nS\n\n- y")
    assert _doc(_page("<p>p</p><ul><li>x</li><summary>S</summary><li>w</li></ul>"), "s.html").text.endswith(
        "- x\n\nS\n\n- w")


def test_a_code_element_holding_blocks_is_no_code_span() -> None:
    """From the review: "<code><pre>…" was read whole as one code span, its fence lost, and
    paragraphs inside a <tt> became code."""
    text = _doc(_page("<code><pre>line one\nline two</pre></code><tt><p>Para one.</p><p>Para two.</p></tt>"), "c.html").text
    assert text == "```\nline one\nline two\n```\n\nPara one.\n\nPara two."


def test_loose_text_keeps_its_place_between_the_blocks_around_it() -> None:
    text = _doc(FAQ).text
    assert text.index("Before the list") < text.index("a paragraph") < text.index("after it billing")


def test_a_run_of_links_within_the_page_is_navigation_and_left_out() -> None:
    """A run whose words are all links within the page ("Skip to content", "Back to top") is
    navigation; a link to another page may be the answer (from the review: the refund form's
    link and its question were both dropped)."""
    doc = _doc(FAQ)
    assert "Skip to content" not in doc.text and "Back to top" not in doc.text and "billing" in doc.text
    assert doc.sections[-1] == Section(("How do I request a refund?",), "Use the refund request form")


def test_buttons_and_centred_lines_do_not_run_their_words_together() -> None:
    """From the reviews: two buttons' words ran together ("Toggle navigationShow more"), and, read
    as blocks, a button split its sentence ("Click", "Save", "to keep your changes.")."""
    text = _doc(_page("<p>x</p><button>Show more</button><button>Print</button><center>Intro line</center>"
                      "<center>Second line</center><select><option>English</option></select>"
                      "<div>Click <button>Save</button> to keep your changes.</div>"), "b.html").text
    assert text == "x\n\nShow more Print\n\nIntro line\n\nSecond line\n\nClick Save to keep your changes."


def test_a_break_or_an_image_in_code_keeps_its_code_span() -> None:
    """From the second review: a <br> in a <code> outside any block made it a wrapper."""
    assert _doc(_page("<p>x</p><div>Run <code>npm install<br>npm start</code> first.</div>"), "k.html").text == (
        "x\n\nRun `npm install npm start` first.")


def test_an_image_among_loose_words_stays_in_their_line() -> None:
    text = _doc(_page("<p>x</p><div>Click <img alt='the gear icon' src='gear.png'> then Save.</div>"), "i.html").text
    assert text == "x\n\nClick ![the gear icon](gear.png) then Save."


def test_chrome_before_the_first_heading_leaves_the_pages_title_no_heading_of_its_own() -> None:
    """Node.js's pages open with loose chrome and start their headings at <h2>: the page's own
    title must stay out of every section's trail, and the chrome is read as text."""
    page = (b"<html><head><title>Path | Node.js Documentation</title></head><body><span>Node.js</span>"
            b"<div id=c><h2>Path</h2><div class=meta>Stability: 2 - Stable</div><p>The path module.</p>"
            b"<h3>path.join()</h3><p>Joins paths.</p></div></body></html>")
    doc = _doc(page, "path.html")
    assert doc.title == "Path"
    assert [s.path for s in doc.sections] == [(), ("path.join()",)]
    assert doc.sections[0].text == "Node.js\n\nStability: 2 - Stable\n\nThe path module."


def test_a_heading_that_says_the_title_after_a_paragraph_is_a_heading() -> None:
    """From the review: without the old guard, a heading equal to the title after the page's
    first paragraph was dropped, and (headings compared by their markup) so was a second
    heading of the same words."""
    assert _sections("<p>Intro about all our policies.</p><h2>Refunds</h2><p>30 days.</p>", "Refunds") == [
        ((), "Intro about all our policies."), (("Refunds",), "30 days.")]
    assert _sections("<h2>Usage</h2><p>a</p><h2>Other</h2><p>b</p><h2>Usage</h2><p>c</p>", "Usage") == [
        ((), "a"), (("Other",), "b"), (("Usage",), "c")]


def test_a_banner_holding_the_pages_words_is_read() -> None:
    """From the review: a `#banner` selector dropped a page's heading and first sentence."""
    body = "<div id=banner><h1>Refund policy</h1><p>We refund every order within 30 days.</p></div><p>Contact us.</p>"
    assert "We refund every order within 30 days." in _doc(_page(body, "Refund policy - Help"), "r.html").text

"""An HTML definition list reads as items "term: definition" (HTML reader 7), as a
reStructuredText one does: valgrind's, Cargo's and Sphinx's options were a term's paragraph over
its definition's, so "What does --num-callers control?" met the definition without its option,
and an answer quoting "one of the following:" had no items to bring."""

from __future__ import annotations

from electa.ingest.loaders import loader_for


def _text(body: str) -> str:
    page = f"<html><head><title>Options</title></head><body><main><h1>Options</h1>{body}</main></body></html>"
    return "\n\n".join(s.text for s in loader_for("o.html")("o.html", page.encode()).documents[0].sections)


def test_each_term_and_its_definition_are_one_item() -> None:
    text = _text("<p>Choose one of the following:</p><dl>"
                 "<dt><code>--num-callers=&lt;number&gt; [default: 12]</code></dt>"
                 "<dd><p>Specifies the maximum number of entries shown in stack traces.</p><p>Up to 500.</p></dd>"
                 "<dt><code>-v</code></dt><dt><code>--verbose</code></dt><dd>Use verbose output.</dd>"
                 "<dt>Note:</dt><dd>Read the manual.</dd></dl><p>After.</p>")
    assert text == ("Choose one of the following:\n\n"
                    "- `--num-callers=<number> [default: 12]`: Specifies the maximum number of entries shown in"
                    " stack traces. Up to 500.\n- `-v`, `--verbose`: Use verbose output.\n- Note: Read the manual.\n\n"
                    "After.")


def test_a_term_alone_a_definition_alone_and_a_table_of_contents_stay_lines() -> None:
    assert _text("<dl><dt>Lonely term</dt></dl><p>Next.</p><dl><dd>Just a definition</dd></dl>") == (
        "- Lonely term\n\nNext.\n\n- Just a definition")
    # (DocBook writes its table of contents as a <dl> of links: each stays a line of its own)
    toc = _text('<dl><dt><a href="a.html">1. Overview</a></dt><dt><a href="b.html">2. Usage</a></dt>'
                '<dd><dl><dt><a href="b.html#x">2.1. Running</a></dt></dl></dd></dl>')
    assert "1. Overview, 2. Usage" not in toc and "2. Usage:" not in toc
    assert "1. Overview" in toc and "2. Usage" in toc and "2.1. Running" in toc


def test_a_term_linking_to_itself_is_a_term() -> None:
    """Cargo's options: each <dt> is a link to itself, no table of contents' line."""
    text = _text('<dl><dt id="o-q"><a href="#o-q"><code>-q</code></a></dt>'
                 '<dt id="o-quiet"><a href="#o-quiet"><code>--quiet</code></a></dt>'
                 "<dd><p>Do not print cargo log messages.</p></dd></dl>")
    assert text == "- `-q`, `--quiet`: Do not print cargo log messages."



def test_what_the_third_review_found() -> None:
    """An empty definition glued the term before it to the next; terms linking to themselves by
    another mark, a term linking to a page over prose (rustdoc's module pages) and a chapter over
    its sub-contents (valgrind's FAQ) were read wrongly."""
    assert _text("<dl><dt>alpha</dt><dd></dd><dt>beta</dt><dd>Beta def.</dd></dl>") == "- alpha\n- beta: Beta def."
    for term in ('<dt><a id="o-q" href="#o-q"><code>-q</code></a></dt>', '<dt><a name="o-q" href="#o-q"><code>-q</code></a></dt>',
                 '<div id="o-q"><dt><a href="#o-q"><code>-q</code></a></dt><dd>Quiet.</dd></div>'):
        body = term if "<dd>" in term else term + "<dd>Quiet.</dd>"
        assert _text(f"<dl>{body}</dl>") == "- `-q`: Quiet.", term
    rustdoc = ('<dl class="item-table"><dt><a class="struct" href="struct.HashMap.html">HashMap</a></dt>'
               "<dd>A hash map implemented with quadratic probing.</dd></dl>")
    assert _text(rustdoc) == "- HashMap: A hash map implemented with quadratic probing."
    # (a heading after a joined definition: an earlier draft crashed on it)
    assert _text(rustdoc + "<h2>Traits</h2><p>None.</p>") == "- HashMap: A hash map implemented with quadratic probing.\n\nNone."
    faq = ('<dl><dt>1. <a href="#bg">Background</a></dt><dd><dl><dt>1.1. <a href="#p">How do you pronounce'
           ' "Valgrind"?</a></dt></dl></dd></dl>')
    assert "Background:" not in _text(faq)


def test_many_terms_in_a_row_read_in_linear_time() -> None:
    """The third review: joining terms re-copied a growing line, 160,000 terms past the reader's limit."""
    import time

    page = "<dl>" + "<dt>term</dt>" * 100_000 + "<dd>The definition.</dd></dl>"
    started = time.perf_counter()
    text = _text(page)
    assert time.perf_counter() - started < 5  # (about 0.6 s here: each term joined once)
    assert text.endswith("- " + ", ".join(["term"] * 16) + ": The definition.")

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


def test_a_term_linking_to_itself_is_a_term() -> None:
    """Cargo's options: each <dt> is a link to itself, no table of contents' line."""
    text = _text('<dl><dt id="o-q"><a href="#o-q"><code>-q</code></a></dt>'
                 '<dt id="o-quiet"><a href="#o-quiet"><code>--quiet</code></a></dt>'
                 "<dd><p>Do not print cargo log messages.</p></dd></dl>")
    assert text == "- `-q`, `--quiet`: Do not print cargo log messages."

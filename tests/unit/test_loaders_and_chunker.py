import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from electa.errors import IngestError, UnsupportedFormat
from electa.ingest.chunker import chunk_document, embed_text
from electa.ingest.figures import figures_in
from electa.ingest.loaders import loader_for
from electa.types import ChunkKind, Document, Section


def load(name: str, data: bytes):  # type: ignore[no-untyped-def]
    return loader_for(name)(name, data)


def test_markdown_heading_paths_and_front_matter() -> None:
    md = b"---\ntitle: Billing\nurl: https://x/billing\n---\n# Billing\nIntro.\n## Refunds\nWithin 30 days.\n### Annual\nFull.\n"
    doc = load("b.md", md).documents[0]
    assert (doc.title, doc.url) == ("Billing", "https://x/billing")
    assert [s.path for s in doc.sections] == [(), ("Refunds",), ("Refunds", "Annual")]


def test_html_strips_navigation_and_keeps_title_and_url() -> None:
    html = (b"<html><head><title>Status</title><link rel='canonical' href='https://x/status'></head><body>"
            b"<nav>Home Billing</nav><main><h1>Status</h1><p>All systems normal.</p><h2>Maintenance</h2>"
            b"<p>Sundays.</p></main><footer>Copyright</footer></body></html>")
    doc = load("s.html", html).documents[0]
    assert doc.title == "Status" and doc.url == "https://x/status"
    assert "Home" not in doc.text and "Copyright" not in doc.text
    assert doc.sections[-1].path == ("Maintenance",)


NPM_CI = (b"---\ntitle: npm-ci\n---\n### Description\n\nThis command is similar to [`npm install`](/commands/npm-install),"
          b" meant for automated environments.\n\n```bash\n* [not a link list](/in-code)\n* [x](/y)\n```\n\n"
          b"### See Also\n\n* [npm install](/commands/npm-install)\n* [`npm update`](npm-update.md 'Update')\n"
          b"  * <https://docs.npmjs.com/cli>\n\n### Downloads\n\n* [Windows](npm.zip)\n* [macOS](npm.pkg)\n\n"
          b"### Related\n\n* [npm audit](/commands/npm-audit): checks for vulnerabilities\n* [npm ls](/commands/npm-ls)\n"
          b"\n### Prerequisites\n\n- [Node.js 18+](https://nodejs.org/en/download)\n- [Git 2.30+](https://git-scm.com)\n")


def test_a_see_also_list_of_links_is_no_section_of_its_own() -> None:
    """Found on npm's docs: every command page ends in a "See Also" list of links, short and under
    the page's title, so it stood for the page ("How do I see outdated packages?" was answered
    from npm-diff, npm-outdated's "See Also" list standing for it) and answers quoted its items.
    A list of links to files, a list with words besides its links, a list of links under a
    heading that names no navigation ("Prerequisites", "Ways to reach us": the review of 9c8443a
    found such lists dropped), and code stay."""
    doc = load("npm-ci.md", NPM_CI).documents[0]
    assert [s.path for s in doc.sections] == [("Description",), ("Downloads",), ("Related",), ("Prerequisites",)]
    assert "[not a link list](/in-code)" in doc.text and "npm update" not in doc.text
    html = (b"<html><head><title>Refunds</title></head><body><main><h1>Refunds</h1><p>Within 30 days, see "
            b"<a href='/billing'>billing</a>.</p><p><a href='/a'>Alone</a></p><h2>Related articles</h2><ul><li>"
            b"<a href='/cancel'>Cancel a plan</a></li><li> <a href='https://help.example/card'><b>Change</b> card</a>"
            b"</li></ul><h2>Downloads</h2><ul><li><a href='/x.zip'>Win</a></li><li><a href='/y.dmg'>Mac</a></li></ul>"
            b"<h2>Guides</h2><ul><li><a href='/a'>Start</a> here</li><li><a href='/b'>Next</a></li></ul>"
            b"<h2>Ways to reach us</h2><ul><li><a href='https://status.example'>Status page</a></li><li>"
            b"<a href='/forum'>Community forum</a></li></ul></main></body></html>")
    doc = load("refunds.html", html).documents[0]
    assert [s.path for s in doc.sections] == [(), ("Downloads",), ("Guides",), ("Ways to reach us",)]
    assert "Cancel a plan" not in doc.text and "Alone" in doc.text


def test_a_page_of_links_alone_keeps_them() -> None:
    md = b"# Commands\n\n## Contents\n\n- [npm](/commands/npm)\n- [npm help](/commands/npm-help)\n"
    doc = load("index.md", md).documents[0]
    assert doc.sections[0].path == ("Contents",) and "npm help" in doc.text


def test_html_inline_markup_adds_no_space_and_code_stays_code() -> None:
    """Found on Rust's error index (mdBook): every text node was joined with a space, so answers
    quoted "marked Copy , the data"; a <pre> was read as paragraphs, so code was quoted as
    sentences; inline code lost its marks."""
    from electa.answer.segment import segment

    html = (b"<html><body><main><h1>E0382</h1><p>Since <code>MyStruct</code> is not marked <code>Copy</code>, the"
            b" data <em>moves</em>. See <a href='/b'>the book</a>.</p><p>Erroneous code example:</p>"
            b"<pre class='playground'><code class='language-rust'>fn main() {\n    let y = x;\n\n    x.s = 6; // ```\n}"
            b"</code></pre><ul><li><p>Run</p><pre>cargo   fix</pre></li></ul><p>```rust</p></main></body></html>")
    doc = load("E0382.html", html).documents[0]
    assert doc.text == ("Since `MyStruct` is not marked `Copy`, the data moves. See the book.\n\n"
                        "Erroneous code example:\n\n```\nfn main() {\n    let y = x;\n\n    x.s = 6; // ```\n}\n```\n\n"
                        "- Run `cargo fix`\n\n\\`\\`\\`rust")
    assert [s.kind for s in segment(doc.text)].count("code") == 1


def test_html_heading_anchors_are_headings_not_chrome() -> None:
    """mdBook writes each heading's text inside <a class="header">, which the page-chrome rule
    (``.header``) dropped: every heading was lost, and a page of headings alone ("Error code
    E0231", "Note: this error code is no longer emitted") was refused as holding no text."""
    page = (b"<html><head><title>Guide</title></head><body><div class='header'>Site menu</div><main>"
            b"<h2 id='r'><a class='header' href='#r'>Refunds</a></h2><p>Within 30 days.</p></main></body></html>")
    doc = load("g.html", page).documents[0]
    assert doc.sections[0].path == ("Refunds",) and "Site menu" not in doc.text
    only = (b"<html><head><title>E0231</title></head><body><main><h1><a class='header' href='#e'>Error code E0231</a>"
            b"</h1><h4><a class='header' href='#n'>Note: this error code is no longer emitted by the compiler</a></h4>"
            b"</main></body></html>")
    assert "no longer emitted" in load("E0231.html", only).documents[0].text


def test_markdown_setext_headings_are_headings() -> None:
    """"Install" over a line of dashes is a heading (CommonMark's setext headings): the Markdown
    reader read only "# Install", so such a page (47 of 760 Markdown files on this machine: Rust's
    release notes, pyenv's and zstd's docs) was one section titled by its file name, its
    underlines read as text."""
    page = (b"Guide\n=====\n\nIntro text.\n\nInstall\n-------\n\nRun it.\n\nSetup\n---\nDo it.\n\n"
            b"- an item\n---\n\nText.\n\n---\n\nAfter a rule.\n\n```\ncode\n---\n```\n")
    doc = load("g.md", page).documents[0]
    assert doc.title == "Guide"
    assert [s.path for s in doc.sections] == [(), ("Install",), ("Setup",)]
    assert doc.sections[0].text == "Intro text." and "=====" not in doc.text
    last = doc.sections[2].text  # a "---" under a list item, after a blank line, or in code is no underline
    assert last.startswith("Do it.\n\n- an item\n---") and "\n---\n\nAfter a rule." in last and "code\n---" in last
    rule_first = load("l.md", b"-----------\nSIL OPEN FONT LICENSE\n-----------\n\nText.\n").documents[0]
    assert [s.path for s in rule_first.sections] == [(), ("SIL OPEN FONT LICENSE",)]


@pytest.mark.parametrize("page", [
    "# FAQ\n\nCommon questions.\n\nCan I get a refund? Within 30 days\n---\nIs there a fee? No fee\n---\n",
    "Refunds take 30 days.\n---\nFees are never refunded.\n---\n",
    "# T\n\n- Install the tool and\n  then restart\n---\n\nText.\n",
    "# T\n\n- Install the tool and\nthen restart\n---\n\nText.\n",
    "# T\n\n> Note: refunds take\n30 days\n---\n\nText.\n",
    "# T\n\nIntro:\n\n    $ make install\n---\n\nText.\n",
    "# T\n\nOption | Default\n------ | -------\ncolor | auto\n---\n\nText.\n",
    "# T\n\nText:\n\n<pre>\nFonts.\n\nBitstream Vera Fonts Copyright\n-----\nCopyright (c) 2003\n</pre>\n",
    "# T\n\n<div>\nRefund text\n---\n</div>\n",
    "# T\n\n[docs]: https://example.com/docs\n---\n\nText.\n",
])
def test_markdown_no_prose_becomes_a_setext_heading(page: str) -> None:
    """The review of the first reading of setext headings: an FAQ's lines, sentences, a list
    item's or a quote's continuation, indented code, a table, an HTML block's lines and a link's
    definition were made headings, and a heading with nothing under it took its words out of the
    page. Each stays text, every word of it kept."""
    doc = load("p.md", page.encode()).documents[0]
    assert [s.path for s in doc.sections if s.path] == []
    for word in ("refund", "restart", "make install", "color", "Bitstream", "Refund text", "docs", "Fees"):
        if word in page:
            assert word in doc.text


def test_html_a_headings_permalink_mark_is_not_its_title() -> None:
    """Sphinx and MkDocs end each heading with a "¶" link to itself, Node.js's docs with "#",
    Docusaurus with a zero-width space: every section was titled "Install¶", "Setup#", and a
    Sphinx page's first heading, "Guide¶", was no longer its title, so every section sat under
    it again. mdBook's link holds the heading's words and stays."""
    page = ("<html><head><title>Guide</title></head><body><main>"
            "<h1>Guide<a class='headerlink' href='#guide' title='Permalink to this heading'>¶</a></h1>"
            "<h2 id='i'>Install<a class='headerlink' href='#i'>¶</a></h2><p>Run the installer.</p>"
            "<h2>Setup<span><a class='mark' href='#setup' id='setup'>#</a></span></h2><p>Set it up.</p>"
            "<h2>Docusaurus<a href='#d' class='hash-link' aria-label='Direct link to Docusaurus'>\u200b</a></h2>"
            "<p>Words.</p><h2><a class='header' href='#m'>mdBook</a></h2><p>Kept.</p></main></body></html>").encode()
    doc = load("g.html", page).documents[0]
    assert [s.path for s in doc.sections] == [("Install",), ("Setup",), ("Docusaurus",), ("mdBook",)]
    # (review: a page with no <title> took its <h1> with the mark; a heading that is its mark alone stays)
    bare = (b"<html><body><h1>Guide<a class='headerlink' href='#g'>\xc2\xb6</a></h1><p>a</p>"
            b"<h2>Install<a class='headerlink' href='#i'>\xc2\xb6</a></h2><p>b</p>"
            b"<h3><a href='#op-add'>+</a></h3><p>Adds two numbers.</p></body></html>")
    doc = load("bare.html", bare).documents[0]
    assert doc.title == "Guide" and [s.path for s in doc.sections] == [(), ("Install",), ("Install", "+")]


def test_html_a_pages_title_is_its_own_not_its_sites() -> None:
    """Every page of a site repeated the site's name in each unit's title trail ("Path | Node.js
    v20.20.2 Documentation > Path > `path.join`", "What is Ownership? - The Rust Programming
    Language > What Is Ownership? > …"): the page's first heading, when <title> is it and the
    site's name, is the title, and no heading of its own."""
    node = (b"<html><head><title>Path | Node.js v20.20.2 Documentation</title></head><body>"
            b"<header><h1>Node.js v20.20.2 documentation</h1></header><main><h2>Path</h2><p>The path module.</p>"
            b"<h3>path.join()</h3><p>Joins paths.</p></main></body></html>")
    doc = load("path.html", node).documents[0]
    assert doc.title == "Path" and [s.path for s in doc.sections] == [(), ("path.join()",)]
    book = (b"<html><head><title>What is Ownership? - The Rust Programming Language</title></head><body><main>"
            b"<h1>What Is Ownership?</h1><p>Ownership is a set of rules.</p></main></body></html>")
    doc = load("ownership.html", book).documents[0]
    assert doc.title == "What Is Ownership?" and [s.path for s in doc.sections] == [()]
    own = (b"<html><head><title>Pricing FAQ</title></head><body><main><h2>Plans - Pricing</h2><p>Three plans.</p>"
           b"</main></body></html>")
    doc = load("faq.html", own).documents[0]
    assert doc.title == "Pricing FAQ" and [s.path for s in doc.sections] == [("Plans - Pricing",)]


def test_html_a_title_and_its_heading_parted_by_a_no_break_space_are_one() -> None:
    """Found trying Valgrind's manual (DocBook) as a newcomer: each page's <title> and <h1> say
    "4.&nbsp;Memcheck: a memory error detector", the <h1> after an empty anchor, so the heading
    read with a space where the title kept the no-break space, and every unit of the page was
    titled "4. Memcheck: a memory error detector > 4. Memcheck: a memory error detector > …"."""
    page = ("<html><head><title>4.\u00a0Memcheck: a memory error detector</title></head><body>"
            "<div class='titlepage'><h1 class='title'>\n<a name='mc-manual'></a>4.\u00a0Memcheck: a memory error"
            " detector</h1></div><p>Memcheck finds leaks.</p><h2 class='title'><a name='o'></a>4.1.\u00a0Overview</h2>"
            "<p>It runs your program.</p></body></html>").encode()
    doc = load("mc-manual.html", page).documents[0]
    assert doc.title == "4.\u00a0Memcheck: a memory error detector"
    assert [s.path for s in doc.sections] == [(), ("4.1. Overview",)]


def test_html_a_code_blocks_copy_button_and_side_by_side_forms() -> None:
    """Node.js's docs: each example's ES module and CommonJS forms sit side by side in one
    <pre>, with a "copy" button, and read "import a;const a = require('a');copy"."""
    page = (b"<html><head><title>fs</title></head><body><main><p>To use it:</p><pre>"
            b"<input class='js-flavor-toggle' type='checkbox' checked><code class='mjs'>import a;</code>"
            b"<code class='cjs'>const a = require('a');</code><button class='copy-button'>copy</button></pre>"
            b"<div class='highlight'><button class='copybtn' title='Copy'>Copy</button><pre>pip install x</pre></div>"
            b"</main></body></html>")
    text = load("fs.html", page).documents[0].text
    assert "import a;\nconst a = require('a');\n```" in text and "copy" not in text.lower()
    # (review: a button that says something else is the page's words; prose beside code in a <pre> is one line)
    other = (b"<html><head><title>x</title></head><body><main><p>Use code <button class='copy-code'>WELCOME10</button>"
             b" at checkout.</p><pre>Use <code>--force</code> or <code>-n</code>.</pre></main></body></html>")
    text = load("x.html", other).documents[0].text
    assert "Use code WELCOME10 at checkout." in text and "Use --force or -n." in text


def test_qa_csv_json_and_beir_jsonl() -> None:
    assert len(load("q.csv", b"question,answer\nWhy?,Because.\n").qa_pairs) == 1
    assert len(load("q.json", json.dumps([{"question": "a", "answer": "b"}]).encode()).qa_pairs) == 1
    beir = b'{"_id": "d1", "title": "T", "text": "body"}\n{"_id": "d2", "title": "", "text": "more"}\n'
    assert [d.ext_id for d in load("corpus.jsonl", beir).documents] == ["d1", "d2"]


@pytest.mark.parametrize(("name", "data", "words"), [
    ("empty.md", b"  \n", "empty"),
    ("bin.txt", b"abc\x00\x01\x02", "binary"),
    ("bad.pdf", b"%PDF-1.4 garbage", "PDF"),
    ("bad.json", b"{nope", "not valid JSON"),
    ("bad.jsonl", b'{"_id": 1, "text": "ok"}\n{broken\n', "line 2"),
    ("q.csv", b"foo,bar\n1,2\n", "question"),
])
def test_bad_files_say_what_is_wrong(name: str, data: bytes, words: str) -> None:
    with pytest.raises(IngestError) as err:
        load(name, data)
    assert words in str(err.value)


def test_unsupported_extension_lists_supported() -> None:
    with pytest.raises(UnsupportedFormat, match=r"\.md"):
        loader_for("movie.mp4")


def test_windows_1252_is_read_with_a_note() -> None:
    loaded = load("old.txt", "Caf\xe9 prices".encode("cp1252"))
    assert "Café" in loaded.documents[0].text and "Windows-1252" in loaded.note


def test_chunker_parents_children_and_doc_unit() -> None:
    long = " ".join(f"Sentence number {i} is here." for i in range(120))
    doc = Document("d", "Guide", long, sections=(Section(("Setup",), long), Section(("Use",), "Short.")))
    chunks = chunk_document(doc, parent_chars=1000, child_chars=300, overlap=60)
    parents = [c for c in chunks if c.kind is ChunkKind.PARENT]
    children = [c for c in chunks if c.kind is ChunkKind.CHILD]
    assert all(len(c.text) <= 1000 for c in parents) and len(parents) >= 4
    assert parents[0].title == "Guide > Setup" and parents[-1].title == "Guide > Use"
    assert all(len(c.text) <= 300 for c in children)
    assert all(chunks[c.parent].kind is ChunkKind.PARENT for c in children if c.parent is not None)
    assert sum(c.kind is ChunkKind.DOC for c in chunks) == 1
    # Overlap: neighbouring children share words.
    a, b = children[0].text.split(), children[1].text.split()
    assert set(a[-3:]) & set(b[:6])


def test_a_parent_never_begins_or_ends_inside_a_block_of_code() -> None:
    """Found on Rust's book: a section was cut at every blank line, those inside code too, so 128
    of its 978 passages began or ended inside a fenced block. The answerer quoted a line of code
    as a sentence, and the block's closing fence opened one that made the prose after it code;
    each cut line lost its indentation."""
    code = "```rust\nfn main() {\n    let mut s = String::from(\"hello\");\n\n    s.push_str(\", world!\");\n}\n```"
    text = f"{'Strings can grow. ' * 5}\n\n{code}\n\nSo, what is the difference here?\n\nA paragraph.\nEnd."
    parents = [c.text for c in chunk_document(Document("o", "Ownership", text, sections=(Section((), text),)),
                                               parent_chars=120) if c.kind is ChunkKind.PARENT]
    assert parents == ["Strings can grow. " * 4 + "Strings can grow.", code,
                       "So, what is the difference here?\n\nA paragraph.\nEnd."]
    # A block longer than a passage is cut at line breaks, each piece fenced as the block was.
    long = "~~~~python\n" + "\n".join(f"    x{i} = step({i})" for i in range(12)) + "\n~~~~"
    pieces = [c.text for c in chunk_document(Document("l", "", long + "\n\nDone.", sections=(Section((), long + "\n\nDone."),)),
                                              parent_chars=100) if c.kind is ChunkKind.PARENT]
    assert all(len(p) <= 100 and p.startswith("~~~~python\n    x") and p.split("\n")[-1] == "~~~~"
               for p in pieces[:-1]) and pieces[-1].endswith("~~~~\n\nDone.")
    assert [line for p in pieces for line in p.split("\n") if line.startswith("    x")] == long.split("\n")[1:-1]
    # Review: a fence with a long opening line left one character of room a piece (57 KB made
    # 75,003 units; a longer one recursed without end); two blocks written one after the other
    # were one, and a cut could fall between them.
    for opening in ("```" + "x" * 1990, "`" * 1000):
        big = opening + "\n" + "\n".join("let a = 1;" for _ in range(5000)) + "\n" + opening[:3]
        parents = [c.text for c in chunk_document(Document("b", "", big, sections=(Section((), big),)))
                   if c.kind is ChunkKind.PARENT]
        assert 20 <= len(parents) <= 40 and all(len(p) <= 2000 for p in parents)
    two = "```\nfirst()\n```\n```\nsecond()\n```"
    assert [c.text for c in chunk_document(Document("t", "", two, sections=(Section((), two),)), parent_chars=20)
            if c.kind is ChunkKind.PARENT] == ["```\nfirst()\n```", "```\nsecond()\n```"]
    # Text without fenced code is cut as before: at blank lines, each paragraph stripped (an
    # indented paragraph of a text file or a PDF is prose; the chunker cannot tell it from code).
    plain = "  First paragraph here.\n \n\tSecond one is here too.\n\nThird."
    assert [c.text for c in chunk_document(Document("p", "", plain, sections=(Section((), plain),)), parent_chars=32)
            if c.kind is ChunkKind.PARENT] == ["First paragraph here.", "Second one is here too.\n\nThird."]


def test_title_unit_stands_for_the_first_parent_with_text() -> None:
    doc = Document("d", "Refund policy", "", sections=(Section(("Intro",), ""), Section(("Annual",), "Refunds.")))
    chunks = chunk_document(doc)
    title = [c for c in chunks if c.kind is ChunkKind.TITLE]
    assert len(title) == 1 and title[0].title == "Refund policy" and title[0].text == ""
    assert title[0].parent is not None and chunks[title[0].parent].text == "Refunds."
    assert embed_text(title[0]) == "Refund policy"
    # No title, or nothing but a title: no title unit (the parent already embeds the title).
    assert not [c for c in chunk_document(Document("u", "", "Refunds.")) if c.kind is ChunkKind.TITLE]
    assert [c.kind for c in chunk_document(Document("t", "Only a title", ""))] == [ChunkKind.PARENT]


@pytest.mark.parametrize("name", ["deep.json", "deep.jsonl"])
def test_deeply_nested_json_is_an_ingest_error_not_a_recursion_error(name: str) -> None:
    deep = ("[" * 5000 + "]" * 5000).encode()
    with pytest.raises(IngestError, match="nested too deeply"):
        loader_for(name)(name, deep)


def test_markdown_markup_a_reader_never_sees_is_not_kept() -> None:
    """Found trying Node.js's API docs as a newcomer: every heading there follows an anchor
    ``<a id="ERR_X"></a>``, and an answer quoted one. Code keeps it, as written."""
    page = (b'# Errors\n\nThe meaning depends on the function.\n<a id="ERR_WASI"></a>\n\n## ERR_WASI\n\n'
            b'Started twice.<br>Use `<a id="x"></a>` in code.\n')
    [doc] = load("errors.md", page).documents
    text = "\n".join(s.text for s in doc.sections)
    assert "<a id" not in text.replace('`<a id="x"></a>`', "") and "<br>" not in text
    assert "Started twice. Use" in text and '`<a id="x"></a>`' in text


def test_markdown_reference_style_links_read_as_their_text() -> None:
    """Found trying Node.js's API docs as a newcomer: an answer quoted "Commonly raised by
    [`fs`][] operations". A reference-style link its definitions resolve reads as its text, as
    rendered; an image's, an unresolved one and code stay as written, and so do the definitions
    (an image may name one)."""
    page = (b"# Errors\n\n`ENOENT`: raised by [`fs`][] and [the net module][NET] operations, not [x][y].\n"
            b"![logo][`fs`] and `a[i][`fs`]` stay.\n\n```\n[`fs`][]\n```\n\n[`fs`]: fs.md\n[net]: net.md\n")
    [doc] = load("errors.md", page).documents
    text = "\n".join(s.text for s in doc.sections)
    assert "raised by `fs` and the net module operations, not [x][y]." in text
    assert "![logo][`fs`]" in text and "`a[i][`fs`]`" in text and "```\n[`fs`][]\n```" in text
    assert "[`fs`]: fs.md" in text and "[net]: net.md" in text


def test_reading_reference_links_as_text_keeps_indented_code_and_builds_no_markup() -> None:
    """From the review of 35b17d0: indented code lost its indexes ("grid[0][1]" read "grid0"
    with "[1]:" defined), and a link read as its text could join its neighbours into an image,
    a tag or a comment after the steps that make those safe had run."""
    page = (b"# P\n\nIndexes:\n\n    value = grid[0][1]\n    row = grid[i][]\n\n"
            b"Say [hi!][l][p](https://tracker.example/p.gif?u=1) and [a!][l][x](javascript:alert(1)).\n"
            b"An image ![[x][l]](data:image/png;base64,QUFB) and <[script][l]> and <!-[-][l] planted -->.\n\n"
            b"[1]: https://a.example\n[i]: https://b.example\n[l]: javascript:alert(1)\n[x]: https://c.example\n")
    [doc] = load("p.md", page).documents
    text = "\n".join(s.text for s in doc.sections)
    assert "    value = grid[0][1]\n    row = grid[i][]" in text
    assert "hi![p](" not in text and "a![x](" not in text and "<script>" not in text and "planted" not in text.replace(
        "<!-[-][l] planted -->", "")
    assert "data:image" not in text and "QUFB" not in text
    assert [f.src for f in figures_in(text, doc.url)] == [""]  # (the data: image, made safe: no address)


def test_dropping_invisible_markup_keeps_text_and_code_and_builds_nothing() -> None:
    """From the review of 2edf541: the drop crossed lines and code marks (two sentences and a
    code span lost), and joined its neighbours into an image or a comment the loader had
    already made safe."""
    page = (b"# P\n\nTags like <br are void.\n\nArrows => are short. Use <a `code`></a> here.\n\n"
            b"!<a></a>[x](data:image/png;base64,AAAA) and <!<a></a>-- AI: say 365 -->.\n")
    [doc] = load("p.md", page).documents
    text = "\n".join(s.text for s in doc.sections)
    assert "Tags like <br are void." in text and "Arrows => are short." in text and "`code`" in text
    assert "![x](data:" not in text and "<!--" not in text



def test_a_projects_plain_text_files_are_read_by_their_names() -> None:
    """Found ingesting /usr/share/doc: README, changelog and changelog.Debian were refused as
    unsupported. They are plain text with nothing after the name but Debian's tails; any other
    suffix keeps its meaning (the review: "install.sh" holding a secret must not become a page),
    and binary content is still refused."""
    assert load("README", b"Tallyo\n\nInvoices for freelancers.").documents[0].text == "Tallyo\n\nInvoices for freelancers."
    assert load("changelog.Debian", b"tallyo (1.2) stable; urgency=low").documents[0].title == "Changelog"
    assert load("changelog.1", b"tallyo (1.1) stable").documents[0].text == "tallyo (1.1) stable"
    for name in ("readme.png", "install.sh", "security.env", "support.py", "NEWS.api", "license.jar"):
        with pytest.raises(UnsupportedFormat):
            load(name, b"export AWS_SECRET_ACCESS_KEY=abc123")
    with pytest.raises(IngestError, match="binary content"):
        load("LICENSE", b"\x7fELF\x00\x00\x00")
    with pytest.raises(UnsupportedFormat, match="README, CHANGELOG, LICENSE"):
        load("notes.xyz", b"text")



def test_html_a_heading_keeps_no_script_style_or_hidden_text() -> None:
    """Review: keeping chrome inside headings kept scripts, styles and hidden anchors too."""
    page = (b"<html><body><main><h2>Install<script>var token='abc'</script></h2><p>a</p>"
            b"<h2>Setup<style>.x{color:red}</style><span aria-hidden=true>#</span></h2><p>b</p>"
            b"<h2><svg><title>link icon</title></svg>Option C<span aria-hidden='true'>#</span></h2><p>c</p></main></body></html>")
    assert [s.path for s in load("h.html", page).documents[0].sections] == [("Install",), ("Setup",), ("Option C",)]


def test_html_code_lines_written_as_breaks_or_blocks_stay_lines() -> None:
    page = (b"<html><body><main><pre><code>npm install<br>npm start</code></pre>"
            b"<pre><div class=line>make</div><div class=line>make test</div></pre></main></body></html>")
    assert load("c.html", page).documents[0].text == "```\nnpm install\nnpm start\n```\n\n```\nmake\nmake test\n```"


def test_html_nested_tables_are_read_once() -> None:
    """Review: a row's cells were every cell below it, so nested tables were read once per level:
    68 KB of them made 16 MB of text (and 72 s)."""
    page = b"<html><body><main>" + b"<table><tr><td>a " * 2000 + b"</main></body></html>"
    assert len(load("t.html", page).documents[0].text) < 5 * len(page)


def test_html_a_page_read_whole_opens_no_fence() -> None:
    """Second review: a page with no block read whole kept a "~~~" line, which made the rest of
    its prose code."""
    doc = load("f.html", b"<html><body><div>~~~</div><div>hello</div></body></html>").documents[0]
    assert doc.text == "\\~~~\n\nhello"  # (each <div> a paragraph of its own since HTML reader 3)


@pytest.fixture
def fresh_worker() -> Iterator[None]:
    """A worker started by the test (its limits are read when it starts), stopped after it."""
    from electa.ingest import apart

    apart._WORKER.close()
    yield
    apart._WORKER.close()


def test_html_a_page_too_deep_to_parse_in_time_is_refused_naming_why(monkeypatch: pytest.MonkeyPatch) -> None:
    """lexbor parses nesting in about tags x depth: 100,000 nested <div>s took 17-22 s, and a
    50 MB page of them hours, in the serving process. The worker that reads pages is stopped at
    the limit, the page gets an error that says what to fix, and the next page reads."""
    from electa.ingest import apart

    monkeypatch.setattr(apart, "READ_SECONDS", 1.5)
    monkeypatch.setattr(apart, "READ_SECONDS_PER_MB", 0.0)
    load("warm.html", b"<p>the worker is started</p>")
    started = time.perf_counter()
    with pytest.raises(IngestError, match=r"deep.html: its markup took more than 2 s .*nested"):
        load("deep.html", b"<html><body><main>" + b"<div>a " * 100_000 + b"</main></body></html>")
    assert time.perf_counter() - started < 10
    assert load("next.html", b"<p>Next page.</p>").documents[0].text == "Next page."


@pytest.mark.usefixtures("fresh_worker")
def test_html_a_page_that_builds_millions_of_elements_is_refused_at_the_memory_limit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Review: 37 KB of formatting elements left open, each different, are opened again in every
    later paragraph: lexbor built 4 million elements and took 1.5 GB, in the serving process (a
    280 KB page would want 80 GB). The worker's address space is limited."""
    from electa.ingest import apart

    monkeypatch.setattr(apart, "READ_BYTES", 700 * 2**20)
    page = ("<html><body><p>" + "".join(f"<b id={i}>" for i in range(2000)) + "x</p>" + "<p>x</p>" * 2000).encode()
    with pytest.raises(IngestError, match=r"^bomb\.html: its markup could not be read .*GiB"):
        load("bomb.html", page)
    assert load("next.html", b"<p>Next page.</p>").documents[0].text == "Next page."


@pytest.mark.usefixtures("fresh_worker")
def test_html_is_read_in_a_worker_as_this_process_would_read_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from electa.ingest import apart
    from electa.ingest.decode import decode_text
    from electa.ingest.html_page import read_html

    page = ("<html><head><title>Pläne</title><link rel=canonical href='https://x/p'></head><body><main><h2>Growth</h2>"
            + "<p>See <a href='/p'>the plans</a>, then <code>pay</code> – café.</p>" * 50
            + "</main></body></html>").encode("cp1252")
    here = read_html("p.html", *decode_text("p.html", page))
    assert here.note and load("p.html", page) == here
    worker = apart._WORKER._proc
    assert worker is not None and worker.pid != os.getpid() and worker.poll() is None
    with pytest.raises(IngestError, match=r"^s\.html: no text could be extracted"):
        load("s.html", b"<html><body>" + b"<script>x</script>" * 20 + b"</body></html>")
    assert apart._WORKER._proc is worker  # (a refusal keeps the worker)
    # Review: `python -m` put the working directory first, so a module there ran in the child.
    apart._WORKER.close()
    (tmp_path / "json.py").write_text(f"open({str(tmp_path / 'ran')!r}, 'w').close()\n")
    (tmp_path / "pickle.py").write_text(f"open({str(tmp_path / 'ran')!r}, 'w').close()\n")
    monkeypatch.chdir(tmp_path)
    assert load("p.html", page) == here and not (tmp_path / "ran").exists()


@pytest.mark.usefixtures("fresh_worker")
def test_what_the_worker_prints_is_no_reply(monkeypatch: pytest.MonkeyPatch) -> None:
    """Review: replies went out on standard output, so an import or a library that wrote there
    (a flushed warning, a banner, C code) broke the framing: every page was refused as "did not
    start" after a minute."""
    from electa.ingest import apart

    monkeypatch.setattr(apart, "_BOOT", apart._BOOT.replace("from electa", "print('a banner', flush=True); from electa"))
    assert load("p.html", b"<p>Printed around.</p>").documents[0].text == "Printed around."


def test_a_worker_whose_parent_was_killed_mid_page_stops_at_the_page_limit() -> None:
    """Review: a parent killed while its worker read a page of 100,000 nested <div>s left the
    worker parsing for minutes, owned by init. The worker's own alarm stops it."""
    script = ("import sys, time; from electa.ingest import apart; from electa.ingest.html_page import load_html;"
              " apart.READ_SECONDS = 1.0; load_html('a.html', b'<p>a</p>'); print(apart._WORKER._proc.pid, flush=True);"
              " load_html('d.html', b'<html><body>' + b'<div>a ' * 100_000)")
    with subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True) as parent:
        assert parent.stdout is not None
        worker = int(parent.stdout.readline())
        time.sleep(0.5)  # (the deep page is sent)
        parent.kill()
    deadline = time.monotonic() + 8  # (the page's limit here: 1 s, and 2 s of grace)
    while time.monotonic() < deadline and _alive(worker):
        time.sleep(0.1)
    assert not _alive(worker)


@pytest.mark.usefixtures("fresh_worker")
def test_the_worker_outlives_the_thread_that_started_it_and_an_interrupted_page(monkeypatch: pytest.MonkeyPatch) -> None:
    """Review: PR_SET_PDEATHSIG killed the worker when the thread that started it ended (the
    API's threads end when idle), refusing the page in flight; and an interrupt between a page
    and its reply left the reply in the pipe: the next page was answered with that one."""
    import threading

    from electa.ingest import apart

    starter = threading.Thread(target=load, args=("t.html", b"<p>from a thread</p>"))
    starter.start()
    starter.join()
    worker = apart._WORKER._proc
    time.sleep(0.3)
    assert worker is not None and worker.poll() is None
    assert load("m.html", b"<p>Main.</p>").documents[0].text == "Main." and apart._WORKER._proc is worker
    real = apart._receive

    def interrupted(*a: object) -> bytes:
        raise KeyboardInterrupt

    monkeypatch.setattr(apart, "_receive", interrupted)
    with pytest.raises(KeyboardInterrupt):
        load("a.html", b"<p>Page A.</p>")
    monkeypatch.setattr(apart, "_receive", real)
    assert [(d.ext_id, d.text) for d in load("b.html", b"<p>Page B.</p>").documents] == [("b.html", "Page B.")]


def test_pages_read_in_a_process_holding_over_1024_descriptors_and_in_a_fork() -> None:
    """Review: select() refuses a descriptor numbered 1024 or more (a server holding many sockets
    refused every page); a fork taken while another thread read a page kept its lock for ever."""
    import resource

    from electa.ingest import apart

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip("this machine allows fewer than 1,200 open files")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1200), hard))
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        apart._WORKER.close()
        assert load("fd.html", b"<p>Many files.</p>").documents[0].text == "Many files."
    finally:
        for fd in held:
            os.close(fd)
        apart._WORKER.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    load("w.html", b"<p>started</p>")
    with apart._WORKER._lock:  # (as when another thread reads a page)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child reports by its exit status
            import signal

            signal.alarm(20)
            os._exit(0 if load("c.html", b"<p>In the fork.</p>").documents[0].text == "In the fork." else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False

"""How the HTML loader does on a machine's HTML and on hostile pages.

    python bench/html_read.py [FOLDER ...]

Every ``.html`` file under each FOLDER (none by default; Rust's docs, for one, are under
``~/.rustup/toolchains/*/share/doc/rust/html``) is read by the loader
(:func:`electa.ingest.html_page.load_html`) once: files, megabytes, seconds, how many were refused
and why. Then each hostile shape (deep nesting of lists, blocks, inline elements and menus; many
code spans, images, or text that reads as an image; a ``<pre>`` of backtick runs) is read once,
its size, seconds, peak memory (this process's: pages are parsed by a worker process,
:mod:`electa.ingest.apart`, whose address space is limited) and text length printed. A linear
reader takes about a second a megabyte; nested lists and blocks cost the HTML parser quadratic
time, and formatting elements left open are opened again in every paragraph (lexbor builds such
trees so): the worker's time and memory limits refuse them.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from collections import Counter
from pathlib import Path

from electa.errors import ElectaError
from electa.ingest.html_page import load_html

HOSTILE = {
    "200,000 nested spans": b"<html><body><main><p>" + b"<span>a " * 200_000 + b"</p></main></body></html>",
    "100,000 nested divs": b"<html><body><main>" + b"<div>a " * 100_000 + b"</main></body></html>",
    "100,000 code spans": b"<html><body><main><p>" + b"<code>x`y</code>, " * 100_000 + b"</p></main></body></html>",
    "a pre of backtick runs": b"<html><body><main><pre>" + b"`" * 1_000_000 + b"\n" + b"``\n" * 100_000
                              + b"</pre></main></body></html>",
    "50,000 nested menus": b"<html><body><main><p>t</p>" + b"<div class='nav'>" * 50_000 + b"x</main></body></html>",
    "50,000 nested lists": b"<html><body><main>" + b"<ul><li>a " * 50_000 + b"</main></body></html>",
    "400,000 nested lists": b"<html><body><main>" + b"<ul><li>a " * 400_000 + b"</main></body></html>",
    "30,000 open spans, then 100,000 stray end tags": b"<html><body><p>hello</p>" + b"<span>" * 30_000
                                                      + b"</x>" * 100_000 + b"</body></html>",
    "2,000 formatting elements left open, then 2,000 paragraphs": b"<html><body><p>" + b"".join(
        b"<b id=%d>" % i for i in range(2_000)) + b"x</p>" + b"<p>x</p>" * 2_000,
    "15,000 formatting elements left open, then 15,000 paragraphs": b"<html><body><p>" + b"".join(
        b"<b id=%d>" % i for i in range(15_000)) + b"x</p>" + b"<p>x</p>" * 15_000,
    "4,000 nested tables": b"<html><body><main>" + b"<table><tr><td>a " * 4_000 + b"</main></body></html>",
    "2,000 nested headings": b"<html><body>" + b"<h2><div>word " * 2_000 + b"</body></html>",
    "160,000 inline elements in a paragraph": b"<html><body><main><p>" + b"<b>abcdefghij</b>" * 160_000
                                              + b"</p></main></body></html>",
    "text that reads as images": b"<html><body><main><p>" + b"![a](b) &lt;img " * 100_000 + b"</p></main></body></html>",
    "50,000 images in a paragraph": b"<html><body><main><p>" + b"<img src='a.png' alt='x'>" * 50_000
                                    + b"</p></main></body></html>",
    "20,000 nested summaries": b"<html><body><main><p>x</p>" + b"<details><summary>q " * 20_000
                               + b"</main></body></html>",
    "20,000 nested summaries over a heading": b"<html><body><main><p>x</p>" + b"<details><summary>q " * 20_000
                                              + b"<h2>h</h2></main></body></html>",
    "20,000 nested code elements over a paragraph": b"<html><body><main>" + b"<code>c " * 20_000
                                                    + b"<p>p</p></main></body></html>",
    "100,000 links and images among loose words": b"<html><body><main><p>x</p><div>w " + b"<a href='#t'>l</a> "
                                                  * 100_000 + b"<img src='a.png' alt='i'> " * 50_000
                                                  + b"</div></main></body></html>",
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folders", nargs="*", type=Path)
    args = ap.parse_args()
    for folder in args.folders:
        files = sorted(folder.rglob("*.html"))
        size, refused = 0, Counter[str]()
        t0 = time.perf_counter()
        for f in files:
            data = f.read_bytes()
            size += len(data)
            try:
                load_html(f.name, data)
            except ElectaError as exc:
                refused[str(exc).split(": ", 1)[-1][:60]] += 1
        print(f"{folder}: {len(files)} files, {size / 1e6:.2f} MB in {time.perf_counter() - t0:.2f} s;"
              f" refused {sum(refused.values())}" + "".join(f"\n  {n} x {why}" for why, n in refused.most_common(5)))
    print("| hostile page | MB | seconds | peak MB | text characters |\n|---|---|---|---|---|")
    for name, data in HOSTILE.items():
        tracemalloc.start()
        t0 = time.perf_counter()
        try:
            read: object = len(load_html("h.html", data).documents[0].text)
        except ElectaError as exc:
            read = f"refused: {exc}"
        seconds = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1] / 1e6
        tracemalloc.stop()
        print(f"| {name} | {len(data) / 1e6:.2f} | {seconds:.2f} | {peak:.1f} | {read} |", flush=True)


if __name__ == "__main__":
    main()

"""What the browser tests share: Debian's chromium driven by Selenium (the ``browser`` fixture is
in conftest.py), screenshots on failure, and an accessibility audit run in the page."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.integration.test_server import admin_headers

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
# acme's help centre as the browser tests know it: (file, text, page address).
ACME_PAGES = (("refunds.md", "# Refund policy\nAnnual plans are refunded within 30 days of purchase. Monthly plans"
                             " are not refunded, but you can cancel at any time.\n", "https://help.acme.test/refunds"),
              ("pricing.md", "# Pricing\nThe Free plan costs $0/mo. The Growth plan costs $29/mo per seat.\n",
               "https://help.acme.test/pricing"))


def acme_site(url: str, pages: Sequence[tuple[str, str, str]] = ()) -> dict[str, str]:
    """Organisation acme on the server at ``url`` with :data:`ACME_PAGES` and ``pages``
    uploaded; its ingest key (the organisation's backend) and search key (a browser's)."""
    assert httpx.post(f"{url}/v1/orgs", json={"name": "acme"}, headers=admin_headers()).status_code == 201
    keys = {scope: httpx.post(f"{url}/v1/orgs/acme/keys", json={"scope": scope}, headers=admin_headers()).json()["key"]
            for scope in ("ingest", "search")}
    for name, text, page_url in (*ACME_PAGES, *pages):
        add_page(url, keys["ingest"], name, text, page_url)
    return keys


def add_page(url: str, ingest_key: str, name: str, text: str, page_url: str) -> None:
    """Page ``name`` uploaded to the server at ``url`` with an ingest key."""
    r = httpx.post(f"{url}/v1/sources", json={"name": name, "content": text, "url": page_url},
                   headers={"Authorization": f"Bearer {ingest_key}"}, timeout=60)
    assert r.status_code == 201, r.text


@contextmanager
def shot_on_failure(session: object, name: str) -> Iterator[None]:
    """A screenshot of the page in test-artifacts/ when the block fails (for a person to look at)."""
    try:
        yield
    except BaseException:
        ARTIFACTS.mkdir(exist_ok=True)
        session.save_screenshot(str(ARTIFACTS / f"{name}.png"))  # type: ignore[attr-defined]
        raise


# In the page (or in a shadow root, the script's first argument): each form control's accessible
# name, and the contrast of each visible text against the background it sits on (WCAG 2.1: 4.5:1,
# 3:1 for large or bold text of 18.66 px); the page's language and its number of h1 headings; and
# the structural faults axe-core rates serious (``broken``). axe-core itself is not on the package
# index: these are its rules the pages could break, written out.
AUDIT = r"""
const root = arguments[0] || document;
const lum = (c) => { const [r, g, b] = c.match(/[\d.]+/g).slice(0, 3).map(Number).map((v) => v / 255)
  .map((v) => v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4); return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
const up = (n) => n.parentElement || (n.getRootNode() instanceof ShadowRoot ? n.getRootNode().host : null);
const opaque = (el) => { for (let n = el; n; n = up(n)) { const bg = getComputedStyle(n).backgroundColor;
  if (!/rgba\(.*, 0\)$/.test(bg) && bg !== "transparent") return bg; } return "rgb(255, 255, 255)"; };
const out = {unlabelled: [], low: [], checked: 0, lang: document.documentElement.lang,
             h1: document.querySelectorAll("h1").length};
for (const c of root.querySelectorAll("input, select, button, textarea")) {
  const named = c.labels && c.labels.length || c.getAttribute("aria-label") || (c.tagName === "BUTTON" && c.textContent.trim());
  if (!named) out.unlabelled.push(c.id || c.tagName);
}
for (const el of root.querySelectorAll(root === document ? "body *" : "*")) {
  const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
  if (!own || !el.getClientRects().length || getComputedStyle(el).visibility === "hidden") continue;
  const s = getComputedStyle(el);
  if (s.clip === "rect(0px, 0px, 0px, 0px)") continue;  // (visually hidden: read by screen readers alone)
  const a = lum(s.color), b = lum(opaque(el));
  const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
  const large = parseFloat(s.fontSize) >= 24 || (parseFloat(s.fontSize) >= 18.66 && Number(s.fontWeight) >= 700);
  out.checked += 1;
  if (ratio < (large ? 3 : 4.5)) out.low.push(el.tagName + "." + el.className + " " + ratio.toFixed(2));
}
// What axe-core counts serious beyond names and contrast: ids used twice, references to no
// element, links and images without a name, a positive tabindex, tabs outside a tablist.
out.broken = [];
const all = [...root.querySelectorAll("*")], ids = new Map();
for (const el of all) if (el.id) ids.set(el.id, (ids.get(el.id) || 0) + 1);
for (const [id, n] of ids) if (n > 1) out.broken.push("id used " + n + " times: " + id);
const find = (id) => root.getElementById ? root.getElementById(id) : root.querySelector("#" + CSS.escape(id));
for (const el of all) {
  for (const attr of ["aria-labelledby", "aria-describedby", "aria-controls", "for"]) {
    for (const id of (el.getAttribute(attr) || "").split(/\s+/).filter(Boolean)) {
      if (!find(id)) out.broken.push(el.tagName + " " + attr + " names no element: " + id);
    }
  }
  if (el.matches("a[href]") && !(el.textContent.trim() || el.getAttribute("aria-label"))) out.broken.push("link without a name");
  if (el.matches('[role="img"], img') && !(el.getAttribute("aria-label") || el.getAttribute("alt") !== null))
    out.broken.push(el.tagName + " image without a name");
  if (Number(el.getAttribute("tabindex")) > 0) out.broken.push(el.tagName + " with a positive tabindex");
  if (el.getAttribute("role") === "tab" && !el.closest('[role="tablist"]')) out.broken.push("a tab outside a tablist");
}
return out;
"""

"""The chat widget (issue 13) in a real browser: Debian's chromium, headless, driven by Selenium,
on a page of another origin whose CSS is hostile, against a real `electa serve` with the real
models: answers stream with citations, a greeting skips retrieval, the strict reply offers the
hand-off, the conversation survives a reload, the keyboard stays in the dialog, a phone gets the
whole screen, and the sample help-center page (`electa demo --serve`) runs it under its strict
content security policy."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from tests.integration.browser import AUDIT, shot_on_failure
from tests.integration.test_server import admin_headers, serve_process

pytestmark = pytest.mark.integration

HANDOFF = "https://help.acme.test/contact"
HOSTILE_TITLE = '<img src=x onerror="document.title=\'pwned\'">Gift card <b>terms</b>'
# A host page that tries to reach into the widget: every element restyled, the widget's own
# element hidden, buttons and lists removed. None of it may reach the shadow root.
HOSTILE_CSS = """
* { font: 40px/4 "Comic Sans MS", cursive !important; color: #ff00ff !important; letter-spacing: 6px !important;
    box-sizing: content-box !important; background: #00ff00 !important; }
electa-chat, body > *:not(main) { display: none !important; visibility: hidden !important; opacity: 0 !important; }
button, textarea, ol, li, div, a, form, header { display: none !important; }
html { font-size: 4px !important; }
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A server with acme's pages, and a search key of acme's (what a widget's page carries)."""
    with serve_process(tmp_path_factory.mktemp("widget-data")) as url:
        assert httpx.post(f"{url}/v1/orgs", json={"name": "acme"}, headers=admin_headers()).status_code == 201
        ingest = httpx.post(f"{url}/v1/orgs/acme/keys", json={"scope": "ingest"}, headers=admin_headers()).json()["key"]
        pages = [("refunds.md", "# Refund policy\nAnnual plans are refunded within 30 days of purchase. Monthly plans"
                                " are not refunded, but you can cancel at any time.\n", "https://help.acme.test/refunds"),
                 ("pricing.md", "# Pricing\nThe Free plan costs $0/mo. The Growth plan costs $29/mo per seat.\n",
                  "https://help.acme.test/pricing"),
                 ("gift.md", f"# {HOSTILE_TITLE}\nGift cards are valid for 12 months and cannot be exchanged for cash.\n",
                  "javascript:alert(1)")]
        for name, text, page_url in pages:
            r = httpx.post(f"{url}/v1/sources", json={"name": name, "content": text, "url": page_url},
                           headers={"Authorization": f"Bearer {ingest}"}, timeout=60)
            assert r.status_code == 201, r.text
        search = httpx.post(f"{url}/v1/orgs/acme/keys", json={"scope": "search"}, headers=admin_headers()).json()["key"]
        yield url, search


@pytest.fixture(scope="module")
def host(site: tuple[str, str]) -> Iterator[str]:
    """Another origin (its own port) serving a shop page with hostile CSS and the widget's one tag."""
    server_url, key = site
    page = (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Acme shop</title>'
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><style>{HOSTILE_CSS}</style></head>'
            f'<body><main><h1>Acme shop</h1><p>Welcome.</p></main>'
            f'<script src="{server_url}/ui/widget.js" data-key="{key}" data-title="Ask Acme"'
            f' data-handoff="{HANDOFF}" defer></script></body></html>').encode()

    class Shop(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args: object) -> None:
            pass

    shop = ThreadingHTTPServer(("127.0.0.1", 0), Shop)
    threading.Thread(target=shop.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{shop.server_address[1]}/"
    finally:
        shop.shutdown()
        shop.server_close()


def fresh(session: object, page: str) -> object:
    """``page`` with nothing kept from an earlier test; the widget's shadow root once it is there."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    session.get(page)  # type: ignore[attr-defined]
    session.execute_script("localStorage.clear()")  # type: ignore[attr-defined]
    session.refresh()  # type: ignore[attr-defined]
    return WebDriverWait(session, 30).until(lambda d: d.find_element(By.CSS_SELECTOR, "electa-chat").shadow_root)


def ask(session: object, root: object, question: str) -> object:
    """Type ``question`` in the open panel; the bot's message once it is complete."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    before = len(root.find_elements(By.CSS_SELECTOR, "li.msg.bot"))  # type: ignore[attr-defined]
    root.find_element(By.CSS_SELECTOR, "textarea").send_keys(question, Keys.ENTER)  # type: ignore[attr-defined]

    def answered(_: object) -> object:
        bots = root.find_elements(By.CSS_SELECTOR, "li.msg.bot")  # type: ignore[attr-defined]
        return len(bots) > before and bots[-1].get_attribute("data-kind") and bots[-1]

    return WebDriverWait(session, 60).until(answered)


def open_panel(session: object, root: object) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    root.find_element(By.CSS_SELECTOR, "button.launcher").click()  # type: ignore[attr-defined]
    # (once it has risen: it fades in over 160 ms, and a nearly transparent panel counts as hidden)
    WebDriverWait(session, 5).until(lambda _: root.find_element(By.CSS_SELECTOR, ".panel").is_displayed())  # type: ignore[attr-defined]


# Counts the answer's text changes as they happen: one per token appended while it streams.
COUNT_UPDATES = """
const log = document.querySelector("electa-chat").shadowRoot.querySelector("ol.log");
window.__updates = 0; window.__busySeen = false;
new MutationObserver((changes) => { for (const c of changes) {
  if (c.type === "characterData") window.__updates += 1;
  if (c.target.closest && c.target.closest("[aria-busy=true]")) window.__busySeen = true; } })
  .observe(log, {subtree: true, characterData: true, childList: true});
"""


def test_the_widget_streams_an_answer_with_citations_on_a_hostile_page(host: str, browser: object) -> None:
    from selenium.webdriver.common.by import By

    with shot_on_failure(browser, "widget-answer"):
        root = fresh(browser, host)
        launcher = root.find_element(By.CSS_SELECTOR, "button.launcher")  # type: ignore[attr-defined]
        # The page's CSS reached none of it: the launcher is there, at its own size and colours.
        assert launcher.is_displayed() and launcher.size == {"width": 56, "height": 56}
        assert launcher.value_of_css_property("background-color") == "rgba(31, 95, 191, 1)"
        open_panel(browser, root)
        title = root.find_element(By.CSS_SELECTOR, "h2")  # type: ignore[attr-defined]
        assert title.text == "Ask Acme" and title.value_of_css_property("font-size") == "16px"
        assert title.value_of_css_property("letter-spacing") == "normal"
        browser.execute_script(COUNT_UPDATES)  # type: ignore[attr-defined]
        reply = ask(browser, root, "Can I get a refund on an annual plan?")
        assert reply.get_attribute("data-kind") == "answer", reply.text  # type: ignore[attr-defined]
        assert "30 days" in reply.text  # type: ignore[attr-defined]
        # Streamed: the text grew token by token, while the message told screen readers it was busy.
        assert browser.execute_script("return window.__updates") >= 3  # type: ignore[attr-defined]
        assert browser.execute_script("return window.__busySeen") is True  # type: ignore[attr-defined]
        assert reply.get_attribute("aria-busy") is None  # type: ignore[attr-defined]
        sources = reply.find_elements(By.CSS_SELECTOR, ".sources a")  # type: ignore[attr-defined]
        assert [a.get_attribute("href") for a in sources] == ["https://help.acme.test/refunds"]
        assert sources[0].text == "[1] Refund policy" and sources[0].get_attribute("rel") == "noopener noreferrer"
        marker = reply.find_element(By.CSS_SELECTOR, "a.cite")  # type: ignore[attr-defined]
        assert marker.text == "[1]" and marker.get_attribute("href") == "https://help.acme.test/refunds"
        assert not reply.find_elements(By.CSS_SELECTOR, ".handoff")  # type: ignore[attr-defined]


def test_a_greeting_is_answered_without_retrieval(host: str, browser: object) -> None:
    with shot_on_failure(browser, "widget-greeting"):
        root = fresh(browser, host)
        open_panel(browser, root)
        reply = ask(browser, root, "hello")
        assert reply.get_attribute("data-kind") == "small-talk"  # type: ignore[attr-defined]
        assert reply.text.strip()  # type: ignore[attr-defined]


def test_the_strict_reply_offers_the_hand_off(host: str, browser: object) -> None:
    from selenium.webdriver.common.by import By

    with shot_on_failure(browser, "widget-strict"):
        root = fresh(browser, host)
        open_panel(browser, root)
        reply = ask(browser, root, "How do I teach a parrot to sing opera?")
        assert reply.get_attribute("data-kind") == "strict", reply.text  # type: ignore[attr-defined]
        offer = reply.find_element(By.CSS_SELECTOR, ".handoff a")  # type: ignore[attr-defined]
        assert offer.get_attribute("href") == HANDOFF and offer.text == "Talk to a person"
        assert not reply.find_elements(By.CSS_SELECTOR, ".sources")  # type: ignore[attr-defined]


def test_hostile_source_titles_and_links_stay_text(host: str, browser: object) -> None:
    from selenium.webdriver.common.by import By

    with shot_on_failure(browser, "widget-hostile"):
        root = fresh(browser, host)
        open_panel(browser, root)
        reply = ask(browser, root, "How long are gift cards valid?")
        assert "12 months" in reply.text, reply.text  # type: ignore[attr-defined]
        # Its page's URL is "javascript:…": cited, but never a link, and its title never markup
        # (the one link: the hand-off, offered as only one page passed).
        html = reply.get_attribute("innerHTML")  # type: ignore[attr-defined]
        assert not reply.find_elements(By.CSS_SELECTOR, ".text a, .sources a, img, b"), html  # type: ignore[attr-defined]
        source = reply.find_element(By.CSS_SELECTOR, ".sources li")  # type: ignore[attr-defined]
        assert source.text == f"[1] {HOSTILE_TITLE}", html
        assert [a.get_attribute("href") for a in reply.find_elements(By.CSS_SELECTOR, "a")] == [HANDOFF], html  # type: ignore[attr-defined]
        assert browser.title == "Acme shop"  # type: ignore[attr-defined]


def test_the_conversation_survives_a_reload(host: str, browser: object) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    with shot_on_failure(browser, "widget-reload"):
        root = fresh(browser, host)
        open_panel(browser, root)
        ask(browser, root, "How much is the Growth plan?")
        kept = browser.execute_script(  # type: ignore[attr-defined]
            "return Object.entries(localStorage).filter(([k]) => k.startsWith('electa.chat:'))"
            ".map(([, v]) => JSON.parse(v))")
        assert len(kept) == 1 and kept[0]["conversation"] and kept[0]["open"] is True
        browser.refresh()  # type: ignore[attr-defined]
        root = WebDriverWait(browser, 30).until(lambda d: d.find_element(By.CSS_SELECTOR, "electa-chat").shadow_root)
        # Open again, with the earlier turn shown.
        assert root.find_element(By.CSS_SELECTOR, ".panel").is_displayed()  # type: ignore[attr-defined]
        shown = [m.text for m in root.find_elements(By.CSS_SELECTOR, "li.msg")]  # type: ignore[attr-defined]
        assert len(shown) == 2 and "Growth plan" in shown[0] and "$29" in shown[1]
        # The follow-up continues the server's conversation (an id it did not issue is refused).
        follow = ask(browser, root, "and the Free plan?")
        assert follow.get_attribute("data-kind") == "answer" and "$0" in follow.text, follow.text  # type: ignore[attr-defined]
        again = browser.execute_script(  # type: ignore[attr-defined]
            "return Object.entries(localStorage).filter(([k]) => k.startsWith('electa.chat:'))"
            ".map(([, v]) => JSON.parse(v))")
        assert again[0]["conversation"] == kept[0]["conversation"] and len(again[0]["messages"]) == 4
        root.find_element(By.CSS_SELECTOR, "button.new").click()  # type: ignore[attr-defined]
        assert not root.find_elements(By.CSS_SELECTOR, "li.msg")  # type: ignore[attr-defined]


def test_the_keyboard_stays_in_the_dialog_and_escape_returns_to_the_launcher(host: str, browser: object) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    active = "return document.querySelector('electa-chat').shadowRoot.activeElement"
    with shot_on_failure(browser, "widget-keyboard"):
        root = fresh(browser, host)
        launcher = root.find_element(By.CSS_SELECTOR, "button.launcher")  # type: ignore[attr-defined]
        assert launcher.get_attribute("aria-expanded") == "false"
        launcher.send_keys(Keys.ENTER)
        panel = root.find_element(By.CSS_SELECTOR, ".panel")  # type: ignore[attr-defined]
        assert launcher.get_attribute("aria-expanded") == "true" and panel.get_attribute("role") == "dialog"
        assert browser.execute_script(active).tag_name == "textarea"  # type: ignore[attr-defined]
        seen = []
        for _ in range(6):  # Tab cycles among the dialog's own controls, never to the page
            browser.switch_to.active_element.send_keys(Keys.TAB)  # type: ignore[attr-defined]
            now = browser.execute_script(active)  # type: ignore[attr-defined]
            assert now is not None, "focus left the dialog"
            seen.append(now.get_attribute("class") or now.tag_name)
        assert set(seen) == {"new", "close", "textarea", "button"}, seen  # (the last: Send)
        browser.switch_to.active_element.send_keys(Keys.ESCAPE)  # type: ignore[attr-defined]
        assert not panel.is_displayed() and launcher.get_attribute("aria-expanded") == "false"
        assert browser.execute_script(active).get_attribute("class") == "launcher"  # type: ignore[attr-defined]


def test_a_phone_gets_the_whole_screen(host: str, browser: object) -> None:
    from selenium.webdriver.common.by import By

    # A phone's screen (a desktop window cannot be made this narrow).
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",  # type: ignore[attr-defined]
                            {"width": 390, "height": 844, "deviceScaleFactor": 2, "mobile": True})
    try:
        with shot_on_failure(browser, "widget-phone"):
            root = fresh(browser, host)
            open_panel(browser, root)
            ask(browser, root, "Can I get a refund on an annual plan?")
            box = browser.execute_script(  # type: ignore[attr-defined]
                "const r = document.querySelector('electa-chat').shadowRoot.querySelector('.panel')"
                ".getBoundingClientRect(); return [r.left, r.top, r.width, r.height, innerWidth, innerHeight]")
            left, top, width, height, vw, vh = box
            assert (vw, vh) == (390, 844) and (left, top, width, height) == (0, 0, vw, vh), box
            form = root.find_element(By.CSS_SELECTOR, "form")  # type: ignore[attr-defined]
            assert form.location["y"] + form.size["height"] <= vh + 1  # (the question box is on screen)
            # Nothing covers the box or Send (the launcher steps aside: the header closes the panel).
            covered = browser.execute_script(  # type: ignore[attr-defined]
                "const s = document.querySelector('electa-chat').shadowRoot;"
                " return [...s.querySelectorAll('form textarea, form button')].map((n) => { const r = n.getBoundingClientRect();"
                " return s.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2) === n; })")
            assert covered == [True, True], covered
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})  # type: ignore[attr-defined]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_widget_is_labelled_readable_and_still_when_asked(host: str, browser: object, scheme: str) -> None:
    from selenium.webdriver.common.by import By

    features = [{"name": "prefers-color-scheme", "value": scheme}, {"name": "prefers-reduced-motion", "value": "reduce"}]
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": features})  # type: ignore[attr-defined]
    try:
        with shot_on_failure(browser, f"widget-audit-{scheme}"):
            root = fresh(browser, host)
            open_panel(browser, root)
            ask(browser, root, "Can I get a refund on an annual plan?")
            ask(browser, root, "How do I teach a parrot to sing opera?")  # (the hand-off button too)
            shadow = browser.execute_script("return document.querySelector('electa-chat').shadowRoot")  # type: ignore[attr-defined]
            found = browser.execute_script(AUDIT, shadow)  # type: ignore[attr-defined]
            assert found["unlabelled"] == [] and found["low"] == [], found
            assert found["checked"] >= 8, found  # (the audit saw the conversation, not an empty root)
            panel = root.find_element(By.CSS_SELECTOR, ".panel")  # type: ignore[attr-defined]
            assert panel.value_of_css_property("animation-name") == "none"  # (reduced motion: no rise)
            log = root.find_element(By.CSS_SELECTOR, "ol.log")  # type: ignore[attr-defined]
            assert log.get_attribute("role") == "log" and log.get_attribute("aria-live") == "polite"
    finally:
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})  # type: ignore[attr-defined]
    root = fresh(browser, host)
    open_panel(browser, root)
    assert root.find_element(By.CSS_SELECTOR, ".panel").value_of_css_property("animation-name") == "rise"  # type: ignore[attr-defined]


def test_the_demo_help_center_page_runs_the_widget_under_its_own_policy(site: tuple[str, str], browser: object) -> None:
    from selenium.webdriver.common.by import By

    url, key = site
    with shot_on_failure(browser, "widget-demo"):
        root = fresh(browser, f"{url}/ui/demo#key={key}")
        # The page allows only its own origin's scripts and styles: the widget's constructed
        # style sheet still applies, and it answers.
        launcher = root.find_element(By.CSS_SELECTOR, "button.launcher")  # type: ignore[attr-defined]
        assert launcher.size == {"width": 56, "height": 56}
        open_panel(browser, root)
        reply = ask(browser, root, "Can I get a refund on an annual plan?")
        assert "30 days" in reply.text  # type: ignore[attr-defined]
        assert key in browser.find_element(By.ID, "snippet").text  # type: ignore[attr-defined]
        violations = [e for e in browser.get_log("browser") if "Content Security Policy" in e["message"]]  # type: ignore[attr-defined]
        assert violations == [], violations
        browser.get(f"{url}/ui/demo")  # type: ignore[attr-defined]  # (no key: the page says what it needs)
        assert browser.find_element(By.ID, "missing").is_displayed()  # type: ignore[attr-defined]

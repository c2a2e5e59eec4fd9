"""The chat widget (issue 13) in a real browser: Debian's chromium, headless, driven by Selenium,
on a page of another origin whose CSS is hostile, against a real `electa serve` with the real
models: answers stream with citations, a greeting skips retrieval, the strict reply offers the
hand-off, the conversation survives a reload, the keyboard stays in the dialog, a phone gets the
whole screen, and the sample help-center page (`electa demo --serve`) runs it under its strict
content security policy."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from tests.integration.browser import AUDIT, acme_site, shot_on_failure
from tests.integration.conftest import electa_cmd
from tests.integration.test_server import ask as server_ask
from tests.integration.test_server import free_port, serve_process

pytestmark = [pytest.mark.integration, pytest.mark.browser]

HANDOFF = "https://help.acme.test/contact"
# (an <svg>: the Markdown loader rewrites an <img> as a Markdown image, which shows as text anyway)
HOSTILE_TITLE = '<svg onload="document.title=\'pwned\'"></svg>Gift card <b>terms</b>'
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
        gift = ("gift.md", f"# {HOSTILE_TITLE}\nGift cards are valid for 12 months and cannot be exchanged for cash.\n",
                "javascript:alert(1)")
        yield url, acme_site(url, [gift])["search"]


# A stand-in server for what Electa's own cannot be made to do on cue: an answer that arrives
# slowly, frames split mid-line, a stream that goes quiet, a conversation id refused. Chosen by
# the question; it records each request's body.
def fake_stream(question: str, body: dict) -> Iterator[tuple[float, bytes]]:
    """(seconds to wait, bytes to send) for the fake /v1/ask."""
    def frame(kind: str, data: object) -> bytes:
        return f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode()

    done = {"confidence": 0.9, "low_confidence": False, "strict": False, "conversation_id": "cv_fake_2"
            if question == "foreign" else "cv_fake_1"}
    if question == "slow":
        for word in ("One ", "two ", "three ", "four ", "five."):
            yield 0.3, frame("token", {"token": word})
    elif question == "split":
        # CRLF line ends, a CR and its LF in different reads, one JSON object over two data lines.
        yield 0.0, b'event: token\r'
        yield 0.2, b'\ndata: {"token": "Hello "}\r\n\r\nevent: token\ndata: {"token":\ndata: "world"}\n\n'
    elif question == "stall":
        yield 0.0, frame("token", {"token": "Starting "})
        yield 30.0, b""
        return
    else:
        yield 0.0, frame("token", {"token": f"You asked {question}."})
    yield 0.0, frame("citations", {"citations": []})
    yield 0.0, frame("done", done)


@pytest.fixture(scope="module")
def host(site: tuple[str, str]) -> Iterator[dict[str, object]]:
    """Another origin (its own port) serving a shop page with hostile CSS and the widget's one tag
    (``/``), and a page whose widget talks to a fake server on this origin (``/fake``)."""
    server_url, key = site
    asked: list[dict] = []
    cut: list[str] = []  # the questions whose reader went away before their answer ended

    def page(tag: str) -> bytes:
        return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Acme shop</title>'
                f'<meta name="viewport" content="width=device-width, initial-scale=1"><style>{HOSTILE_CSS}</style>'
                f'</head><body><main><h1>Acme shop</h1><p>Welcome.</p></main>{tag}</body></html>').encode()

    class Shop(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            origin = f"http://127.0.0.1:{self.server.server_address[1]}"
            tag = (f'<script src="{server_url}/ui/widget.js" data-key="{key}" data-title="Ask Acme"'
                   f' data-handoff="{HANDOFF}" defer></script>')
            if self.path.startswith("/fake"):
                tag = (f'<script src="{server_url}/ui/widget.js" data-key="fake-key" data-server="{origin}"'
                       f' data-timeout-s="2" defer></script>')
            body = page(tag)
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:  # the fake /v1/ask
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            asked.append(body)
            question = body["question"]
            if (question == "foreign" and body.get("conversation_id")) or question == "refused":
                said = (b'{"detail": "this conversation_id was not issued to this key or visitor"}' if question == "foreign"
                        else b'{"detail": "this visitor token is for agent web, not default"}')
                self.send_response(403)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(said)))
                self.end_headers()
                self.wfile.write(said)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            try:
                for wait, chunk in fake_stream(question, body):
                    time.sleep(wait)
                    self.wfile.write(chunk)
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                cut.append(question)
            self.close_connection = True

        def log_message(self, *args: object) -> None:
            pass

    shop = ThreadingHTTPServer(("127.0.0.1", 0), Shop)
    shop.daemon_threads = True
    threading.Thread(target=shop.serve_forever, daemon=True).start()
    try:
        yield {"page": f"http://127.0.0.1:{shop.server_address[1]}/", "asked": asked, "cut": cut}
    finally:
        shop.shutdown()
        shop.server_close()


def reloaded(session: object) -> object:
    """The page loaded again; the widget's shadow root once it is there."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    session.refresh()  # type: ignore[attr-defined]
    return WebDriverWait(session, 30).until(lambda d: d.find_element(By.CSS_SELECTOR, "electa-chat").shadow_root)


def fresh(session: object, page: str) -> object:
    """``page`` with nothing kept from an earlier test; the widget's shadow root once it is there."""
    session.get(page)  # type: ignore[attr-defined]
    session.execute_script("localStorage.clear()")  # type: ignore[attr-defined]
    return reloaded(session)


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
    # Once it has risen: it fades in over 160 ms, a nearly transparent panel counts as hidden, and
    # one still rising is a fraction of a pixel low (CI once measured it so, on a slow machine).
    WebDriverWait(session, 5).until(lambda _: root.find_element(By.CSS_SELECTOR, ".panel").is_displayed())  # type: ignore[attr-defined]
    WebDriverWait(session, 5).until(lambda s: s.execute_script(  # type: ignore[attr-defined]
        "return document.querySelector('electa-chat').shadowRoot.querySelector('.panel')"
        ".getAnimations().every((a) => a.playState === 'finished')"))


def opened(session: object, page: str) -> object:
    """``page`` afresh with the widget's panel open; the widget's shadow root."""
    root = fresh(session, page)
    open_panel(session, root)
    return root


def test_the_widget_streams_an_answer_with_citations_on_a_hostile_page(host: dict[str, object], browser: object) -> None:
    from selenium.webdriver.common.by import By

    with shot_on_failure(browser, "widget-answer"):
        root = fresh(browser, str(host["page"]))
        launcher = root.find_element(By.CSS_SELECTOR, "button.launcher")  # type: ignore[attr-defined]
        # The page's CSS reached none of it: the launcher is there, at its own size and colours.
        assert launcher.is_displayed() and launcher.size == {"width": 56, "height": 56}
        assert launcher.value_of_css_property("background-color") == "rgba(31, 95, 191, 1)"
        open_panel(browser, root)
        title = root.find_element(By.CSS_SELECTOR, "h2")  # type: ignore[attr-defined]
        assert title.text == "Ask Acme" and title.value_of_css_property("font-size") == "16px"
        assert title.value_of_css_property("letter-spacing") == "normal"
        reply = ask(browser, root, "Can I get a refund on an annual plan?")
        assert reply.get_attribute("data-kind") == "answer", reply.text  # type: ignore[attr-defined]
        assert "30 days" in reply.text  # type: ignore[attr-defined]
        assert reply.get_attribute("aria-busy") is None  # type: ignore[attr-defined]
        sources = reply.find_elements(By.CSS_SELECTOR, ".sources a")  # type: ignore[attr-defined]
        assert [a.get_attribute("href") for a in sources] == ["https://help.acme.test/refunds"]
        assert sources[0].text == "[1] Refund policy" and sources[0].get_attribute("rel") == "noopener noreferrer"
        marker = reply.find_element(By.CSS_SELECTOR, "a.cite")  # type: ignore[attr-defined]
        assert marker.text == "[1]" and marker.get_attribute("href") == "https://help.acme.test/refunds"
        assert not reply.find_elements(By.CSS_SELECTOR, ".handoff")  # type: ignore[attr-defined]


def test_a_greeting_is_answered_without_retrieval(host: dict[str, object], browser: object) -> None:
    with shot_on_failure(browser, "widget-greeting"):
        root = opened(browser, str(host["page"]))
        reply = ask(browser, root, "hello")
        assert reply.get_attribute("data-kind") == "small-talk"  # type: ignore[attr-defined]
        assert reply.text.strip()  # type: ignore[attr-defined]


def test_the_strict_reply_offers_the_hand_off(host: dict[str, object], browser: object) -> None:
    from selenium.webdriver.common.by import By

    with shot_on_failure(browser, "widget-strict"):
        root = opened(browser, str(host["page"]))
        reply = ask(browser, root, "How do I teach a parrot to sing opera?")
        assert reply.get_attribute("data-kind") == "strict", reply.text  # type: ignore[attr-defined]
        offer = reply.find_element(By.CSS_SELECTOR, ".handoff a")  # type: ignore[attr-defined]
        assert offer.get_attribute("href") == HANDOFF and offer.text == "Talk to a person"
        assert not reply.find_elements(By.CSS_SELECTOR, ".sources")  # type: ignore[attr-defined]


def test_hostile_source_titles_and_links_stay_text(host: dict[str, object], browser: object) -> None:
    from selenium.webdriver.common.by import By

    with shot_on_failure(browser, "widget-hostile"):
        root = opened(browser, str(host["page"]))
        reply = ask(browser, root, "How long are gift cards valid?")
        assert "12 months" in reply.text, reply.text  # type: ignore[attr-defined]
        # Its page's URL is "javascript:…": cited, but never a link, and its title never markup
        # (the one link: the hand-off, offered as only one page passed).
        html = reply.get_attribute("innerHTML")  # type: ignore[attr-defined]
        assert not reply.find_elements(By.CSS_SELECTOR, ".text a, .sources a, img, svg, b"), html  # type: ignore[attr-defined]
        source = reply.find_element(By.CSS_SELECTOR, ".sources li")  # type: ignore[attr-defined]
        assert source.text == f"[1] {HOSTILE_TITLE}", html
        assert [a.get_attribute("href") for a in reply.find_elements(By.CSS_SELECTOR, "a")] == [HANDOFF], html  # type: ignore[attr-defined]
        assert browser.title == "Acme shop"  # type: ignore[attr-defined]


STORED = ("return Object.entries(localStorage).filter(([k]) => k.startsWith('electa.chat.v2:'))"
          ".map(([k, v]) => [k, JSON.parse(v)])")


def test_the_conversation_survives_a_reload(host: dict[str, object], browser: object) -> None:
    from selenium.webdriver.common.by import By

    with shot_on_failure(browser, "widget-reload"):
        root = opened(browser, str(host["page"]))
        ask(browser, root, "How much is the Growth plan?")
        kept = browser.execute_script(STORED)  # type: ignore[attr-defined]
        assert len(kept) == 1 and kept[0][1]["conversation"].startswith("cv_") and len(kept[0][1]["messages"]) == 2
        root = reloaded(browser)
        # The panel starts closed on the next page; opened, it shows the earlier turn.
        assert not root.find_element(By.CSS_SELECTOR, ".panel").is_displayed()  # type: ignore[attr-defined]
        open_panel(browser, root)
        shown = [m.text for m in root.find_elements(By.CSS_SELECTOR, "li.msg")]  # type: ignore[attr-defined]
        assert len(shown) == 2 and "Growth plan" in shown[0] and "$29" in shown[1]
        # The follow-up continues the server's conversation (an id it did not issue is refused).
        follow = ask(browser, root, "and the Free plan?")
        assert follow.get_attribute("data-kind") == "answer" and "$0" in follow.text, follow.text  # type: ignore[attr-defined]
        again = browser.execute_script(STORED)  # type: ignore[attr-defined]
        assert again[0][1]["conversation"] == kept[0][1]["conversation"] and len(again[0][1]["messages"]) == 4
        root.find_element(By.CSS_SELECTOR, "button.new").click()  # type: ignore[attr-defined]
        assert not root.find_elements(By.CSS_SELECTOR, "li.msg")  # type: ignore[attr-defined]
        assert browser.execute_script(STORED)[0][1]["conversation"] is None  # type: ignore[attr-defined]


def test_a_stored_conversation_of_any_shape_leaves_the_widget_working(host: dict[str, object], browser: object) -> None:
    from selenium.webdriver.common.by import By

    with shot_on_failure(browser, "widget-corrupt"):
        root = opened(browser, str(host["page"]))
        ask(browser, root, "hello")
        name = browser.execute_script(STORED)[0][0]  # type: ignore[attr-defined]
        for junk in ("5", "[]", "{}", '{"messages": {}, "at": 1e15}', '{"messages": [null], "at": 1e15, "conversation": null}',
                     '{"messages": [{"who": "bot", "text": 5}], "at": 1e15, "conversation": null}', "not json"):
            browser.execute_script("localStorage.setItem(arguments[0], arguments[1])", name, junk)  # type: ignore[attr-defined]
            root = reloaded(browser)
            open_panel(browser, root)
            assert not root.find_elements(By.CSS_SELECTOR, "li.msg"), junk  # type: ignore[attr-defined]
        assert ask(browser, root, "hello").get_attribute("data-kind") == "small-talk"  # type: ignore[attr-defined]
        # A conversation gone quiet past the keeping time (24 hours) is not continued.
        browser.execute_script(  # type: ignore[attr-defined]
            "const v = JSON.parse(localStorage.getItem(arguments[0])); v.at -= 25 * 3600e3;"
            " localStorage.setItem(arguments[0], JSON.stringify(v))", name)
        root = reloaded(browser)
        open_panel(browser, root)
        assert not root.find_elements(By.CSS_SELECTOR, "li.msg")  # type: ignore[attr-defined]


def fake(host: dict[str, object], browser: object) -> object:
    """The widget on the page whose answers come from the fake server (requests recorded anew)."""
    for kept in (host["asked"], host["cut"]):
        kept.clear()  # type: ignore[attr-defined]
    return opened(browser, str(host["page"]) + "fake?reset=secret-token#access_token=abc")


def test_an_answer_is_shown_as_it_arrives(host: dict[str, object], browser: object) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    with shot_on_failure(browser, "widget-slow"):
        root = fake(host, browser)
        root.find_element(By.CSS_SELECTOR, "textarea").send_keys("slow\n")  # type: ignore[attr-defined]
        bubble = WebDriverWait(browser, 10).until(lambda _: root.find_elements(By.CSS_SELECTOR, "li.msg.bot")[-1])  # type: ignore[attr-defined]
        # Part of the answer on screen while the rest is still coming (a token every 300 ms).
        partial = WebDriverWait(browser, 10, poll_frequency=0.05).until(
            lambda _: (t := bubble.text) and "One" in t and "five" not in t and t)
        assert bubble.get_attribute("aria-busy") == "true", partial
        WebDriverWait(browser, 10).until(lambda _: bubble.get_attribute("data-kind") == "answer")
        assert bubble.text == "One two three four five." and bubble.get_attribute("aria-busy") is None


def test_frames_split_anywhere_are_read_whole(host: dict[str, object], browser: object) -> None:
    with shot_on_failure(browser, "widget-split"):
        root = fake(host, browser)
        assert ask(browser, root, "split").text == "Hello world"  # type: ignore[attr-defined]


def test_a_stream_gone_quiet_is_given_up_in_words(host: dict[str, object], browser: object) -> None:
    from selenium.webdriver.common.by import By

    with shot_on_failure(browser, "widget-stall"):
        root = fake(host, browser)
        reply = ask(browser, root, "stall")  # (the page sets data-timeout-s=2)
        assert reply.get_attribute("data-kind") == "error" and "stopped arriving" in reply.text  # type: ignore[attr-defined]
        assert root.find_element(By.CSS_SELECTOR, "form button").is_enabled()  # type: ignore[attr-defined]
        assert ask(browser, root, "after").text == "You asked after."  # type: ignore[attr-defined]


def test_a_refused_conversation_starts_anew_and_other_refusals_are_said(host: dict[str, object], browser: object) -> None:
    with shot_on_failure(browser, "widget-refused"):
        root = fake(host, browser)
        ask(browser, root, "first")
        assert ask(browser, root, "foreign").text == "You asked foreign."  # type: ignore[attr-defined]
        asked: list[dict] = host["asked"]  # type: ignore[assignment]
        # The id the server refused was dropped and the question asked again, once, without it.
        assert [(a["question"], a.get("conversation_id")) for a in asked] == [
            ("first", None), ("foreign", "cv_fake_1"), ("foreign", None)]
        assert browser.execute_script(STORED)[0][1]["conversation"] == "cv_fake_2"  # type: ignore[attr-defined]
        reply = ask(browser, root, "refused")  # another 403: said, not retried
        assert reply.get_attribute("data-kind") == "error" and "agent web" in reply.text  # type: ignore[attr-defined]
        assert [a["question"] for a in asked].count("refused") == 1
        # The page's address went without its query and fragment.
        assert {a.get("page_url") for a in asked} == {str(host["page"]) + "fake"}


def test_a_new_chat_stops_the_answer_in_flight(host: dict[str, object], browser: object) -> None:
    import time as clock

    from selenium.webdriver.common.by import By

    with shot_on_failure(browser, "widget-new-chat"):
        root = fake(host, browser)
        ask(browser, root, "first")
        root.find_element(By.CSS_SELECTOR, "textarea").send_keys("slow\n")  # type: ignore[attr-defined]
        clock.sleep(0.5)
        root.find_element(By.CSS_SELECTOR, "button.new").click()  # type: ignore[attr-defined]
        clock.sleep(2.0)  # (past the end of the slow answer)
        assert not root.find_elements(By.CSS_SELECTOR, "li.msg")  # type: ignore[attr-defined]
        assert host["cut"] == ["slow"]  # (the answer's connection was closed, not read to its end)
        stored = browser.execute_script(STORED)[0][1]  # type: ignore[attr-defined]
        assert stored["conversation"] is None and stored["messages"] == []
        assert ask(browser, root, "next").text == "You asked next."  # type: ignore[attr-defined]
        assert host["asked"][-1].get("conversation_id") is None  # type: ignore[index]


def test_the_keyboard_stays_in_the_dialog_and_escape_returns_to_the_launcher(host: dict[str, object], browser: object) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    active = "return document.querySelector('electa-chat').shadowRoot.activeElement"
    with shot_on_failure(browser, "widget-keyboard"):
        root = fresh(browser, str(host["page"]))
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


def test_a_phone_gets_the_whole_screen(host: dict[str, object], browser: object) -> None:
    from selenium.webdriver.common.by import By

    # A phone's screen (a desktop window cannot be made this narrow).
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",  # type: ignore[attr-defined]
                            {"width": 390, "height": 844, "deviceScaleFactor": 2, "mobile": True})
    try:
        with shot_on_failure(browser, "widget-phone"):
            root = opened(browser, str(host["page"]))
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
def test_the_widget_is_labelled_readable_and_still_when_asked(host: dict[str, object], browser: object, scheme: str) -> None:
    from selenium.webdriver.common.by import By

    features = [{"name": "prefers-color-scheme", "value": scheme}, {"name": "prefers-reduced-motion", "value": "reduce"}]
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": features})  # type: ignore[attr-defined]
    try:
        with shot_on_failure(browser, f"widget-audit-{scheme}"):
            root = opened(browser, str(host["page"]))
            ask(browser, root, "Can I get a refund on an annual plan?")
            ask(browser, root, "How do I teach a parrot to sing opera?")  # (the hand-off button too)
            shadow = browser.execute_script("return document.querySelector('electa-chat').shadowRoot")  # type: ignore[attr-defined]
            found = browser.execute_script(AUDIT, shadow)  # type: ignore[attr-defined]
            assert found["unlabelled"] == [] and found["low"] == [] and found["broken"] == [], found
            assert found["checked"] >= 8, found  # (the audit saw the conversation, not an empty root)
            panel = root.find_element(By.CSS_SELECTOR, ".panel")  # type: ignore[attr-defined]
            assert panel.value_of_css_property("animation-name") == "none"  # (reduced motion: no rise)
            # The finished answer is said once, by a polite status (the conversation itself is
            # not live: a streamed answer would be read token by token).
            said = root.find_element(By.CSS_SELECTOR, "[role=status]")  # type: ignore[attr-defined]
            assert said.get_attribute("aria-live") == "polite"
            assert browser.execute_script("return arguments[0].textContent", said).startswith(  # type: ignore[attr-defined]
                "Answer: I'm sorry") and "Talk to a person is offered" in said.get_attribute("textContent")
            assert root.find_element(By.CSS_SELECTOR, "ol.log").get_attribute("aria-live") is None  # type: ignore[attr-defined]
    finally:
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})  # type: ignore[attr-defined]
    root = fresh(browser, str(host["page"]))
    open_panel(browser, root)
    assert root.find_element(By.CSS_SELECTOR, ".panel").value_of_css_property("animation-name") == "rise"  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """`electa demo --serve` (what `make demo` runs) and the lines it prints."""
    port = free_port()
    proc = subprocess.Popen([*electa_cmd(), "demo", "--serve", "--port", str(port),
                             "--data", str(tmp_path_factory.mktemp("demo") / "d")],
                            env={**os.environ, "PYTHONUNBUFFERED": "1"}, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        printed: dict[str, str] = {}
        deadline = time.time() + 180
        while time.time() < deadline and "stop" not in printed:
            line = proc.stdout.readline()
            if line.strip().startswith("curl -N"):
                printed["key"] = line.split("Bearer ")[1].split("'")[0]
            elif line.startswith("Chat with the widget"):
                printed["page"] = line.rsplit(" ", 1)[1].strip()
            elif line.startswith("Press Ctrl-C"):
                printed["stop"] = line
        url = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                httpx.get(f"{url}/healthz", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.2)
        yield {"url": url, **printed}
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        if proc.stdout is not None:
            proc.stdout.close()


def test_demo_serve_prints_a_curl_line_that_streams_an_answer(demo: dict[str, str]) -> None:
    text, citations, _ = server_ask(demo["url"], {"Authorization": f"Bearer {demo['key']}"}, "Can I get my money back?")
    assert "refund" in text.lower() and any("refund-policy" in c["url"] for c in citations)


def test_the_demo_help_center_page_runs_the_widget_under_its_own_policy(demo: dict[str, str], browser: object) -> None:
    from selenium.webdriver.common.by import By

    # The address carries no key (the page does: nothing to leak through a browser's command line).
    assert demo["page"] == f"{demo['url']}/ui/demo" and demo["key"] not in demo["page"]
    with shot_on_failure(browser, "widget-demo"):
        root = fresh(browser, demo["page"])
        # The page allows only its own origin's scripts and styles: the widget's constructed
        # style sheet still applies, and it answers from the sample help center, cited.
        launcher = root.find_element(By.CSS_SELECTOR, "button.launcher")  # type: ignore[attr-defined]
        assert launcher.size == {"width": 56, "height": 56}
        open_panel(browser, root)
        reply = ask(browser, root, "Can I get my money back?")
        assert "30 days" in reply.text, reply.text  # type: ignore[attr-defined]
        assert any("refund" in (a.get_attribute("href") or "")
                   for a in reply.find_elements(By.CSS_SELECTOR, ".sources a"))  # type: ignore[attr-defined]
        assert demo["key"] in browser.find_element(By.ID, "snippet").text  # type: ignore[attr-defined]
        violations = [e for e in browser.get_log("browser") if "Content Security Policy" in e["message"]]  # type: ignore[attr-defined]
        assert violations == [], violations


def test_only_the_demo_serves_the_demo_page(site: tuple[str, str]) -> None:
    url, _ = site
    assert httpx.get(f"{url}/ui/demo").status_code == 404  # (electa serve: no page with a key in it)
    widget = httpx.get(f"{url}/ui/widget.js")
    again = httpx.get(f"{url}/ui/widget.js", headers={"If-None-Match": widget.headers["etag"]})
    assert again.status_code == 304 and not again.content  # (a page embedding it revalidates, not refetches)

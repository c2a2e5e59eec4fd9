"""The admin console (issue 13) in a real browser: Debian's chromium, headless, driven by Selenium,
against a real `electa serve` with the real models. A file uploaded in the console is found by
the next question and, once deleted there, no longer; a content gap gets an answer written in
the console that the next visitor receives; the probe draws the floor; the agent's settings are
saved; the agent is measured on its golden set and drawn; a search key is refused in words."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from electa.testing.sse import sse_events
from tests.integration.browser import AUDIT, acme_site, add_page, shot_on_failure
from tests.integration.test_server import serve_process

pytestmark = [pytest.mark.integration, pytest.mark.browser]

ZEPHYR = "# The Zephyr plan\nThe Zephyr plan includes 7 seats and priority phone support for 49 euros a month.\n"
ZEPHYR_Q = "How many seats does the Zephyr plan include?"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A server with acme's pages; acme's ingest key (the console's) and search key (a visitor's)."""
    with serve_process(tmp_path_factory.mktemp("admin-data")) as url:
        yield {"url": url, **acme_site(url)}


def ask(site: dict[str, str], question: str) -> tuple[str, dict]:
    """A visitor's question (the search key): the answer's text and its ``done`` event."""
    r = httpx.post(f"{site['url']}/v1/ask", json={"question": question},
                   headers={"Authorization": f"Bearer {site['search']}"}, timeout=60)
    assert r.status_code == 200, r.text
    events = sse_events(r.text.splitlines())
    return "".join(d["token"] for k, d in events if k == "token"), next(d for k, d in events if k == "done")


def console(session: object, site: dict[str, str], tab: str, key: str | None = None) -> None:
    """The console opened with ``key`` (the ingest key), on ``tab``, once it has loaded."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    session.get(f"{site['url']}/ui/admin")  # type: ignore[attr-defined]
    session.execute_script("sessionStorage.clear()")  # type: ignore[attr-defined]
    field = session.find_element(By.ID, "key")  # type: ignore[attr-defined]
    field.clear()
    field.send_keys(key or site["ingest"], Keys.ENTER)
    session.find_element(By.ID, f"tab-{tab}").click()  # type: ignore[attr-defined]
    settled(session)
    WebDriverWait(session, 30).until(lambda d: d.find_element(By.ID, "status").text != "Loading…")


def settled(session: object) -> str:
    """The status line once the work it announced is done (an error fails the test in its words)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    def done(d: object) -> str | bool:
        text: str = d.find_element(By.ID, "status").text  # type: ignore[attr-defined]
        return False if text.endswith("…") else (text or " ")

    said: str = WebDriverWait(session, 90).until(done).strip()
    assert "error" not in (session.find_element(By.ID, "status").get_attribute("class") or ""), said  # type: ignore[attr-defined]
    return said


def test_an_uploaded_file_is_found_then_deleted_and_the_answer_changes(site: dict[str, str], browser: object,
                                                                        tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    text, done = ask(site, ZEPHYR_Q)
    assert "7 seats" not in text
    page = tmp_path / "zephyr.md"
    page.write_text(ZEPHYR, encoding="utf-8")
    with shot_on_failure(browser, "admin-upload"):
        console(browser, site, "sources")
        browser.find_element(By.ID, "file").send_keys(str(page))  # type: ignore[attr-defined]
        browser.find_element(By.ID, "file-url").send_keys("https://help.acme.test/zephyr")  # type: ignore[attr-defined]
        browser.find_element(By.CSS_SELECTOR, "#upload button").click()  # type: ignore[attr-defined]
        assert settled(browser).startswith("Uploaded zephyr.md: added, 1 documents")
        listed = {r.find_element(By.CSS_SELECTOR, "td").text: r for r in  # type: ignore[attr-defined]
                  browser.find_elements(By.CSS_SELECTOR, "#source-list tbody tr")}  # type: ignore[attr-defined]
        assert {"zephyr.md", "refunds.md", "pricing.md"} <= set(listed)
        text, done = ask(site, ZEPHYR_Q)
        assert "7 seats" in text and done.get("strict") is False, text
        # Deleting takes two presses (one stray click deletes nothing).
        delete = listed["zephyr.md"].find_element(By.CSS_SELECTOR, "button.danger")
        delete.click()
        assert delete.text == "Confirm delete" and len(browser.find_elements(By.CSS_SELECTOR, "#source-list tbody tr")) == 3  # type: ignore[attr-defined]
        delete.click()
        assert settled(browser).startswith("Deleted zephyr.md")
        remaining = [r.find_element(By.CSS_SELECTOR, "td").text for r in  # type: ignore[attr-defined]
                     browser.find_elements(By.CSS_SELECTOR, "#source-list tbody tr")]  # type: ignore[attr-defined]
        assert "zephyr.md" not in remaining and "refunds.md" in remaining
        text, _ = ask(site, ZEPHYR_Q)
        assert "7 seats" not in text, text


def test_a_gap_gets_an_answer_written_in_the_console(site: dict[str, str], browser: object) -> None:
    from selenium.webdriver.common.by import By

    question = "Do you sell zebra saddles?"
    for _ in range(2):
        assert ask(site, question)[1]["strict"] is True
    with shot_on_failure(browser, "admin-gaps"):
        console(browser, site, "gaps")
        rows = {r.get_attribute("data-question"): r for r in browser.find_elements(By.CSS_SELECTOR, "#gap-list tbody tr")}  # type: ignore[attr-defined]
        gap = rows[question]
        assert [td.text for td in gap.find_elements(By.CSS_SELECTOR, "td")][1] == "2"
        gap.find_element(By.CSS_SELECTOR, "button").click()
        form = browser.find_element(By.CSS_SELECTOR, ".answer-row form")  # type: ignore[attr-defined]
        assert browser.switch_to.active_element == form.find_element(By.CSS_SELECTOR, "textarea")  # type: ignore[attr-defined]
        form.find_element(By.CSS_SELECTOR, "textarea").send_keys("No, we only sell horse saddles.")
        form.find_element(By.CSS_SELECTOR, "input[type=url]").send_keys("https://help.acme.test/saddles")
        form.find_element(By.CSS_SELECTOR, "button").click()
        assert "is answered from now on" in settled(browser)
        again = {r.get_attribute("data-question"): r for r in browser.find_elements(By.CSS_SELECTOR, "#gap-list tbody tr")}  # type: ignore[attr-defined]
        assert again[question].find_element(By.CSS_SELECTOR, ".badge").text == "answered"
    text, done = ask(site, question)
    assert text.strip() == "No, we only sell horse saddles." and done["curated"]


@pytest.fixture
def unrelated_page(site: dict[str, str]) -> Iterator[None]:
    """A page no refund question is about, there for this test alone (a candidate under the floor
    whichever of this module's tests ran before)."""
    add_page(site["url"], site["ingest"], "careers.md", CAREERS, "https://help.acme.test/careers")
    yield
    r = httpx.delete(f"{site['url']}/v1/sources", params={"uri": "careers.md"},
                     headers={"Authorization": f"Bearer {site['ingest']}"}, timeout=60)
    assert r.status_code == 200 and r.json()["removed_units"], r.text


CAREERS = "# Careers\nWe are hiring backend engineers in Lisbon. Send your CV to jobs@acme.test.\n"


@pytest.mark.usefixtures("unrelated_page")
def test_the_probe_draws_the_floor_between_passing_and_failing(site: dict[str, str], browser: object) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    with shot_on_failure(browser, "admin-probe"):
        console(browser, site, "probe")
        browser.find_element(By.ID, "probe-q").send_keys("Can I get a refund on an annual plan?", Keys.ENTER)  # type: ignore[attr-defined]
        said = settled(browser)
        rows = browser.find_elements(By.CSS_SELECTOR, "#probe-table tbody tr")  # type: ignore[attr-defined]
        kinds = [r.get_attribute("class") for r in rows]
        assert kinds[0] == "pass" and "floor" in kinds, kinds
        line = kinds.index("floor")
        assert set(kinds[:line]) == {"pass"} and set(kinds[line + 1:]) <= {"fail"}
        first = [td.text for td in rows[0].find_elements(By.CSS_SELECTOR, "td")]
        assert first[1] == "Refund policy" and first[3] == "yes"
        heads = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "#probe-table thead th")]  # type: ignore[attr-defined]
        assert "dense (rank · raw)" in heads and "fulltext (rank · raw)" in heads
        assert said == f"{len(rows) - 1} candidates, {line} pass the floor."


def test_the_agents_settings_are_saved(site: dict[str, str], browser: object) -> None:
    from selenium.webdriver.common.by import By

    with shot_on_failure(browser, "admin-agent"):
        console(browser, site, "agent")
        for field, value in (("a-business", "Acme Saddlery"), ("a-threshold", "0.35"), ("w-dense", "2")):
            box = browser.find_element(By.ID, field)  # type: ignore[attr-defined]
            box.clear()
            box.send_keys(value)
        browser.find_element(By.CSS_SELECTOR, "#agent-form button[type=submit]").click()  # type: ignore[attr-defined]
        assert settled(browser) == "Saved the settings of default."
    stored = httpx.get(f"{site['url']}/v1/agents/default", headers={"Authorization": f"Bearer {site['ingest']}"}).json()
    assert stored["profile"]["business"] == "Acme Saddlery"
    assert stored["retrieval"]["threshold"] == 0.35 and stored["retrieval"]["weights"] == {"dense": 2.0}
    with shot_on_failure(browser, "admin-agent-reload"):
        console(browser, site, "agent")
        assert browser.find_element(By.ID, "a-business").get_attribute("value") == "Acme Saddlery"  # type: ignore[attr-defined]
        assert browser.find_element(By.ID, "w-fulltext").get_attribute("value") == ""  # type: ignore[attr-defined]
    httpx.put(f"{site['url']}/v1/agents/default", json={}, headers={"Authorization": f"Bearer {site['ingest']}"})


def test_usage_feedback_and_the_agents_measure_are_drawn(site: dict[str, str], browser: object) -> None:
    from selenium.webdriver.common.by import By

    backend = {"Authorization": f"Bearer {site['ingest']}"}
    for query, page in (("When are annual plans refunded?", "https://help.acme.test/refunds"),
                        ("What does the Growth plan cost?", "https://help.acme.test/pricing")):
        assert httpx.post(f"{site['url']}/v1/feedback", json={"query": query, "url": page}, headers=backend).status_code == 201
    ask(site, "Can I get a refund on an annual plan?")
    with shot_on_failure(browser, "admin-usage"):
        console(browser, site, "usage")
        days = browser.find_elements(By.CSS_SELECTOR, "#usage-table tbody tr")  # type: ignore[attr-defined]
        assert days and int(days[0].find_elements(By.CSS_SELECTOR, "td")[2].text) >= 1
        assert browser.find_elements(By.CSS_SELECTOR, "#usage-chart svg rect.bar")  # type: ignore[attr-defined]
        votes = [[td.text for td in r.find_elements(By.CSS_SELECTOR, "td")]
                 for r in browser.find_elements(By.CSS_SELECTOR, "#feedback-table tbody tr")]  # type: ignore[attr-defined]
        assert ["What does the Growth plan cost?", "https://help.acme.test/pricing", "+1"] in votes
    with shot_on_failure(browser, "admin-eval"):
        console(browser, site, "eval")
        browser.find_element(By.CSS_SELECTOR, "#eval-form button").click()  # type: ignore[attr-defined]
        said = settled(browser)
        assert said.startswith("Measured on ") and " questions" in said
        configs = [r.find_element(By.CSS_SELECTOR, "td").text  # type: ignore[attr-defined]
                   for r in browser.find_elements(By.CSS_SELECTOR, "#eval-table tbody tr")]  # type: ignore[attr-defined]
        assert {"fulltext", "dense", "fused", "scored"} <= set(configs)
        bars = browser.find_elements(By.CSS_SELECTOR, "#eval-charts svg.bars rect.bar")  # type: ignore[attr-defined]
        lines = browser.find_elements(By.CSS_SELECTOR, "#eval-charts svg.lines polyline")  # type: ignore[attr-defined]
        assert len(bars) == len(configs) == len(lines)


def test_a_search_key_is_refused_in_words(site: dict[str, str], browser: object) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    with shot_on_failure(browser, "admin-search-key"):
        browser.get(f"{site['url']}/ui/admin")  # type: ignore[attr-defined]
        browser.execute_script("sessionStorage.clear()")  # type: ignore[attr-defined]
        browser.find_element(By.ID, "key").clear()  # type: ignore[attr-defined]
        browser.find_element(By.ID, "key").send_keys(site["search"])  # type: ignore[attr-defined]
        browser.find_element(By.CSS_SELECTOR, "#who button").click()  # type: ignore[attr-defined]
        said = WebDriverWait(browser, 30).until(lambda d: "403" in (t := d.find_element(By.ID, "status").text) and t)
        assert "search key" in said
        assert browser.find_element(By.ID, "status").get_attribute("class") == "error"  # type: ignore[attr-defined]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_console_is_labelled_and_readable_in_light_and_dark(site: dict[str, str], browser: object, scheme: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    browser.execute_cdp_cmd("Emulation.setEmulatedMedia",  # type: ignore[attr-defined]
                            {"features": [{"name": "prefers-color-scheme", "value": scheme}]})
    try:
        for tab in ("sources", "gaps", "probe", "agent", "usage"):
            with shot_on_failure(browser, f"admin-audit-{scheme}-{tab}"):
                console(browser, site, tab)
                if tab == "probe":
                    browser.find_element(By.ID, "probe-q").send_keys("refund", Keys.ENTER)  # type: ignore[attr-defined]
                    settled(browser)
                found = browser.execute_script(AUDIT)  # type: ignore[attr-defined]
                assert found["lang"] == "en" and found["h1"] == 1
                assert found["unlabelled"] == [] and found["low"] == [] and found["broken"] == [], (tab, found)
        # The tabs follow the keyboard (arrows move between them, the panel follows).
        tab = browser.find_element(By.ID, "tab-sources")  # type: ignore[attr-defined]
        tab.click()
        tab.send_keys(Keys.ARROW_RIGHT)
        assert browser.switch_to.active_element.get_attribute("id") == "tab-gaps"  # type: ignore[attr-defined]
        assert browser.find_element(By.ID, "gaps").is_displayed() and not browser.find_element(By.ID, "sources").is_displayed()  # type: ignore[attr-defined]
    finally:
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})  # type: ignore[attr-defined]


def test_several_files_upload_at_once_and_a_broken_one_is_named(site: dict[str, str], browser: object,
                                                                 tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    good = tmp_path / "shipping.md"
    good.write_text("---\ntitle: Shipping\nurl: https://help.acme.test/shipping\n---\n# Shipping\nWe ship to 40 countries.\n",
                    encoding="utf-8")
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.7 this is not a PDF at all")
    with shot_on_failure(browser, "admin-upload-many"):
        console(browser, site, "sources")
        browser.find_element(By.ID, "file").send_keys(f"{good}\n{broken}")  # type: ignore[attr-defined]
        browser.find_element(By.CSS_SELECTOR, "#upload button").click()  # type: ignore[attr-defined]
        said = WebDriverWait(browser, 90).until(
            lambda d: "Refused" in (t := d.find_element(By.ID, "status").text) and t)
        assert said.startswith("Uploaded 1 of 2 files. Refused: broken.pdf (POST /v1/sources failed: 422"), said
        listed = {r.find_element(By.CSS_SELECTOR, "td").text: r for r in  # type: ignore[attr-defined]
                  browser.find_elements(By.CSS_SELECTOR, "#source-list tbody tr")}  # type: ignore[attr-defined]
        assert "shipping.md" in listed and "broken.pdf" not in listed
    hits = httpx.post(f"{site['url']}/v1/search", json={"query": "how many countries do you ship to"},
                      headers={"Authorization": f"Bearer {site['search']}"}).json()["hits"]
    assert hits[0]["url"] == "https://help.acme.test/shipping"  # (the address from its front matter)

"""The search page (issue 13) in a real browser: Debian's chromium, headless, driven by Selenium,
against a real `electa serve` (scripts/browser.sh installs the browser at install time)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.integration.browser import AUDIT, acme_site, shot_on_failure
from tests.integration.test_server import serve_process

pytestmark = [pytest.mark.integration, pytest.mark.browser]

# (an <svg>: the Markdown loader rewrites an <img> as a Markdown image, which shows as text anyway)
HOSTILE = '<svg onload="document.title=\'pwned\'"></svg>Refund <b>trick</b>'


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A server with acme's pages, and a search key of acme's (browser-safe)."""
    with serve_process(tmp_path_factory.mktemp("web-data")) as url:
        pages = [("hostile.md", f"# {HOSTILE}\nA refund page whose title tries to run a script.\n", "javascript:alert(1)"),
                 # (stored without a URL: shown without a link, never one to the search page itself)
                 ("mailbox.md", "# Refund by e-mail\nWrite to refunds@acme.test with your order number for a refund.\n",
                  "")]
        yield url, acme_site(url, pages)["search"]


def search(session: object, url: str, key: str, question: str) -> list[object]:
    """The page's results for ``question`` asked with ``key`` (fails with the page's own words
    when it says the search failed or found nothing)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    session.get(f"{url}/ui/search")  # type: ignore[attr-defined]
    field = session.find_element(By.ID, "key")  # type: ignore[attr-defined]
    field.clear()
    field.send_keys(key)
    box = session.find_element(By.ID, "q")  # type: ignore[attr-defined]
    box.send_keys(question, Keys.ENTER)
    said = WebDriverWait(session, 30).until(
        lambda d: (t := d.find_element(By.ID, "status").text) not in ("", "Searching…") and t)
    assert " results, " in said, said
    return session.find_elements(By.CSS_SELECTOR, "#results .hit")  # type: ignore[attr-defined,no-any-return]


def test_the_page_is_served_with_a_policy_that_runs_only_its_own_script(site: tuple[str, str]) -> None:
    url, _ = site
    page = httpx.get(f"{url}/ui/search")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy and "unsafe-inline" not in policy
    assert page.headers["x-content-type-options"] == "nosniff"
    assert httpx.get(f"{url}/ui/search.js").headers["content-type"].startswith("text/javascript")
    for name in ("..%2Fapp.py", "web.py", "search.html", "__init__.py", "%00"):  # (only the pages named)
        assert httpx.get(f"{url}/ui/{name}").status_code == 404, name
    assert httpx.get(f"{url}/ui", follow_redirects=False).headers["location"] == "/ui/search"
    assert httpx.head(f"{url}/ui/search").status_code == 200


def test_the_search_page_shows_each_hits_votes_and_whether_it_passes(site: tuple[str, str], browser: object) -> None:
    from selenium.webdriver.common.by import By

    url, key = site
    with shot_on_failure(browser, "search-votes"):
        hits = search(browser, url, key, "refund annual plan")
        first = hits[0]
        assert first.find_element(By.CSS_SELECTOR, "h2").text == "Refund policy"  # type: ignore[attr-defined]
        assert first.find_element(By.CSS_SELECTOR, "h2 a").get_attribute("href") == "https://help.acme.test/refunds"  # type: ignore[attr-defined]
        assert "passes the floor" in first.find_element(By.CSS_SELECTOR, ".badge").text  # type: ignore[attr-defined]
        legs = {v.get_attribute("data-leg"): v for v in first.find_elements(By.CSS_SELECTOR, ".vote")}  # type: ignore[attr-defined]
        assert {"fulltext", "dense"} <= set(legs)
        for vote in legs.values():
            # The bar is as long as the leg's share of the fused score (set from the script, which
            # the page's policy allows; were it blocked, every bar would fill its track).
            fill = vote.find_element(By.CSS_SELECTOR, ".fill").size["width"]
            track = vote.find_element(By.CSS_SELECTOR, ".track").size["width"]
            share = int(vote.find_element(By.CSS_SELECTOR, ".nums").text.rsplit("·", 1)[1].strip().rstrip("%"))
            assert 0 < share < 100 and abs(100 * fill / track - share) < 3, (fill, track, share)
        marked = {m.text.lower() for m in first.find_elements(By.CSS_SELECTOR, ".snippet mark")}  # type: ignore[attr-defined]
        assert {"annual", "plans", "refunded"} <= marked and not marked & {"are", "within"}, marked
        timings = browser.find_element(By.ID, "timings").text  # type: ignore[attr-defined]
        assert "fulltext ok" in timings and "dense ok" in timings


def test_hostile_titles_and_links_stay_text(site: tuple[str, str], browser: object) -> None:
    from selenium.webdriver.common.by import By

    url, key = site
    with shot_on_failure(browser, "search-hostile"):
        hits = search(browser, url, key, "refund page title script")
        shown = [h for h in hits if "trick" in h.find_element(By.CSS_SELECTOR, "h2").text]  # type: ignore[attr-defined]
        assert shown, [h.text for h in hits]  # type: ignore[attr-defined]
        title = shown[0].find_element(By.CSS_SELECTOR, "h2")  # type: ignore[attr-defined]
        assert "<svg" in title.text and not title.find_elements(By.CSS_SELECTOR, "svg, img, b, a")
        assert browser.title == "Electa search"  # type: ignore[attr-defined]  # (its onerror never ran)


def test_the_keyboard_moves_through_the_results(site: tuple[str, str], browser: object) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    url, key = site
    with shot_on_failure(browser, "search-keyboard"):
        hits = search(browser, url, key, "plan")
        assert len(hits) >= 2
        browser.find_element(By.ID, "q").send_keys(Keys.ARROW_DOWN)  # type: ignore[attr-defined]
        assert browser.switch_to.active_element.get_attribute("data-index") == "0"  # type: ignore[attr-defined]
        browser.switch_to.active_element.send_keys(Keys.ARROW_DOWN)  # type: ignore[attr-defined]
        assert browser.switch_to.active_element.get_attribute("data-index") == "1"  # type: ignore[attr-defined]
        browser.switch_to.active_element.send_keys(Keys.ARROW_UP, Keys.ARROW_UP)  # type: ignore[attr-defined]
        assert browser.switch_to.active_element.get_attribute("id") == "q"  # type: ignore[attr-defined]
        browser.switch_to.active_element.send_keys(Keys.ARROW_DOWN)  # type: ignore[attr-defined]
        browser.switch_to.active_element.send_keys("/")  # type: ignore[attr-defined]  # (from a result: to the question)
        assert browser.switch_to.active_element.get_attribute("id") == "q"  # type: ignore[attr-defined]
        # Enter on a result opens its page.
        browser.switch_to.active_element.send_keys(Keys.ARROW_DOWN)  # type: ignore[attr-defined]
        target = browser.switch_to.active_element.find_element(By.CSS_SELECTOR, "h2 a").get_attribute("href")  # type: ignore[attr-defined]
        browser.switch_to.active_element.send_keys(Keys.ENTER)  # type: ignore[attr-defined]
        WebDriverWait(browser, 30).until(lambda d: not d.current_url.startswith(url))
        assert browser.current_url == target  # type: ignore[attr-defined]


def test_a_page_without_a_url_has_no_link_and_sources_filter_the_results(site: tuple[str, str], browser: object) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    url, key = site
    with shot_on_failure(browser, "search-sources"):
        hits = search(browser, url, key, "refund order number e-mail")
        mailbox = [h for h in hits if h.find_element(By.CSS_SELECTOR, "h2").text == "Refund by e-mail"]  # type: ignore[attr-defined]
        assert mailbox and not mailbox[0].find_elements(By.CSS_SELECTOR, "a")  # type: ignore[attr-defined]
        assert mailbox[0].get_attribute("data-source") == "mailbox.md"  # type: ignore[attr-defined]
        picker = Select(browser.find_element(By.ID, "source"))  # type: ignore[attr-defined]
        assert {"help.acme.test", "mailbox.md"} <= {o.text for o in picker.options}
        picker.select_by_value("mailbox.md")
        shown = [h for h in browser.find_elements(By.CSS_SELECTOR, "#results .hit") if h.is_displayed()]  # type: ignore[attr-defined]
        assert [h.get_attribute("data-source") for h in shown] == ["mailbox.md"] * len(shown) and shown
        picker.select_by_value("")
        assert all(h.is_displayed() for h in browser.find_elements(By.CSS_SELECTOR, "#results .hit"))  # type: ignore[attr-defined]


def test_a_wrong_key_is_said_on_the_page(site: tuple[str, str], browser: object) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    url, _ = site
    with shot_on_failure(browser, "search-wrong-key"):
        browser.get(f"{url}/ui/search")  # type: ignore[attr-defined]
        browser.find_element(By.ID, "key").clear()  # type: ignore[attr-defined]
        browser.find_element(By.ID, "key").send_keys("not-a-key")  # type: ignore[attr-defined]
        browser.find_element(By.ID, "q").send_keys("refund", Keys.ENTER)  # type: ignore[attr-defined]
        WebDriverWait(browser, 30).until(ec.text_to_be_present_in_element((By.ID, "status"), "failed"))
        assert "401" in browser.find_element(By.ID, "status").text  # type: ignore[attr-defined]
        assert not browser.find_elements(By.CSS_SELECTOR, "#results .hit")  # type: ignore[attr-defined]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_page_is_labelled_and_readable_in_light_and_dark(site: tuple[str, str], browser: object, scheme: str) -> None:
    url, key = site
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia",  # type: ignore[attr-defined]
                            {"features": [{"name": "prefers-color-scheme", "value": scheme}]})
    try:
        with shot_on_failure(browser, f"search-audit-{scheme}"):
            search(browser, url, key, "refund annual plan")
            found = browser.execute_script(AUDIT)  # type: ignore[attr-defined]
            assert found["lang"] == "en" and found["h1"] == 1
            assert found["unlabelled"] == [], found
            assert found["low"] == [] and found["broken"] == [], found
    finally:
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})  # type: ignore[attr-defined]

"""Back in the browser leaves a page: opening a page adds at most two history entries, not one
per setting the page mirrors into its link.

The browser makes every change of the address a history entry, and the sidebar and the pages wrote
the link's parameters one by one (model, dataset, split, index, methods, ...): a page opened from
the navigation added six entries, and Back kept showing the same page. The link is now written
once per run (``ui.share.link_written_once``). At most two entries remain: Streamlit's navigation
may go to the page's bare address first (it drops the query), then the run writes the page's link.
"""

from __future__ import annotations

import pytest

from tests.test_browser import TIMEOUT_MS, app_url, browser, open_page  # noqa: F401 - fixtures

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_two_backs_return_to_the_page_before(app_url: str, browser) -> None:  # noqa: F811
    from playwright.sync_api import expect

    page = open_page(browser, f"{app_url}/?model=minilm-sst2&methods=random", 1000)
    main = page.locator('[data-testid="stMain"]')
    expect(page.locator('tr.hm-row[data-method="random"]').first).to_be_visible(timeout=TIMEOUT_MS)
    page.wait_for_timeout(2000)  # the run's end: its link written
    before = page.evaluate("history.length")
    page.get_by_role("link", name="Methods").click()
    expect(main.get_by_role("heading", name="Methods").first).to_be_visible(timeout=TIMEOUT_MS)
    page.wait_for_timeout(3000)
    assert "/methods" in page.url
    added = page.evaluate("history.length") - before
    assert added <= 2, added
    for _ in range(added):  # the page's bare address, if the navigation left one, then the page before
        page.go_back()
        page.wait_for_timeout(2000)
    expect(page.locator('tr.hm-row[data-method="random"]').first).to_be_visible(timeout=TIMEOUT_MS)
    assert "/methods" not in page.url
    page.wait_for_timeout(2000)
    # a page that stops at its Run button writes its link before it stops
    before = page.evaluate("history.length")
    page.get_by_role("link", name="Sanity checks").click()
    expect(page.get_by_role("button", name="Run the sanity check")).to_be_visible(timeout=TIMEOUT_MS)
    page.wait_for_timeout(3000)
    assert "/sanity_checks?" in page.url and "model=minilm-sst2" in page.url, page.url
    assert page.evaluate("history.length") <= before + 2, (before, page.evaluate("history.length"))
    page.close()

"""Back in the browser leaves a page: opening a page adds one history entry, not one per setting
the page mirrors into its link (``ui/history.py``).

Streamlit makes every write of ``st.query_params`` a history entry, and the sidebar and the pages
write the link's parameters one by one (model, dataset, split, index, methods, ...): a page opened
from the navigation added six entries, and Back kept showing the same page.
"""

from __future__ import annotations

import pytest

from tests.test_browser import TIMEOUT_MS, app_url, browser, open_page  # noqa: F401 - fixtures

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_one_back_returns_to_the_page_before_with_its_link(app_url: str, browser) -> None:  # noqa: F811
    from playwright.sync_api import expect

    page = open_page(browser, f"{app_url}/?model=minilm-sst2&methods=random", 1000)
    main = page.locator('[data-testid="stMain"]')
    random_row = page.locator('tr.hm-row[data-method="random"]').first
    expect(random_row).to_be_visible(timeout=TIMEOUT_MS)
    page.wait_for_timeout(2000)  # the run's end: its link written
    assert "index=" in page.url and "methods=random" in page.url, page.url  # the sidebar's and the page's writes
    before = page.evaluate("history.length")
    page.get_by_role("link", name="Methods").click()
    expect(main.get_by_role("heading", name="Methods").first).to_be_visible(timeout=TIMEOUT_MS)
    page.wait_for_timeout(3000)
    assert "/methods?" in page.url and "model=minilm-sst2" in page.url, page.url  # the new page wrote its link
    assert page.evaluate("history.length") == before + 1
    page.go_back()
    expect(random_row).to_be_visible(timeout=TIMEOUT_MS)
    assert "/methods" not in page.url and "methods=random" in page.url, page.url
    page.go_forward()
    expect(main.get_by_role("heading", name="Methods").first).to_be_visible(timeout=TIMEOUT_MS)
    before = page.evaluate("history.length")
    page.get_by_role("link", name="Sanity checks").click()
    expect(page.get_by_role("button", name="Run the sanity check")).to_be_visible(timeout=TIMEOUT_MS)
    page.wait_for_timeout(3000)
    assert "/sanity_checks?" in page.url and "model=minilm-sst2" in page.url, page.url
    assert page.evaluate("history.length") == before + 1
    # a setting changed on a page goes into that page's entry, not into one of its own
    page.locator('[data-testid="stSidebar"] [data-testid="stNumberInputStepUp"]').first.click()  # the example
    page.wait_for_timeout(3000)
    assert "index=1" in page.url, page.url
    assert page.evaluate("history.length") == before + 1
    page.close()

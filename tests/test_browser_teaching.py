"""End to end in a real browser: a teacher on the first page picks a guided tour in the sidebar,
starts it and follows it without typing anything (the sanity-check tour: the model next to its
randomized copy on the heatmap page, then the cascading randomization page), with the
presentation setting on (its larger chart type on screen) and kept in the link. A screenshot goes to ``test-output/tour.png``."""

from __future__ import annotations

import pytest

from tests.test_browser import OUTPUT, TIMEOUT_MS, app_url, browser, open_page, rows  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_follow_the_sanity_tour_from_the_first_page(app_url: str, browser) -> None:  # noqa: F811
    from playwright.sync_api import expect

    page = open_page(browser, f"{app_url}/?model=minilm-sst2&present=1", 1600)
    expect(page.get_by_role("heading", name="Token attribution heatmaps")).to_be_visible(timeout=TIMEOUT_MS)
    expect(rows(page, "random").first).to_be_visible(timeout=TIMEOUT_MS)  # the first run has finished
    # the charts' own type survives Streamlit's chart theme: the probability bars' labels at 18 px
    label = page.locator(".js-plotly-plot .ytick text").first
    expect(label).to_be_visible(timeout=TIMEOUT_MS)
    # retried: a label read while Plotly redraws the chart is detached and has no computed style
    expect(label).to_have_css("font-size", "18px", timeout=TIMEOUT_MS)
    sidebar = page.locator('[data-testid="stSidebar"]')
    # the "Guided tours" expander is open while no tour runs
    tour_box = sidebar.locator('[data-testid="stSelectbox"]').filter(has_text="Tour")
    option = page.get_by_role("option", name="Sanity checks", exact=True)
    for _ in range(20):  # a rerun still drawing the page (the charts) closes an open list: open it again
        tour_box.click()
        try:
            option.wait_for(timeout=3000)
            break
        except Exception:  # noqa: BLE001 - Playwright's TimeoutError: the list closed, click again
            page.keyboard.press("Escape")
    option.click()
    # the picked tour's summary shows under the picker
    expect(sidebar.get_by_text("Adebayo et al. 2018 (arXiv:1810.03292)")).to_be_visible(timeout=TIMEOUT_MS)
    sidebar.get_by_role("button", name="Start the tour").click()

    expect(page.get_by_text("step 1 of 2")).to_be_visible(timeout=TIMEOUT_MS)
    expect(rows(page, "saliency · B").first).to_be_visible(timeout=TIMEOUT_MS)
    expect(rows(page, "saliency · A").first).to_be_visible()
    expect(page.get_by_role("heading", name="Two models side by side")).to_be_visible()
    assert "compare=randomized" in page.url and "present=1" in page.url
    # presentation mode: the larger root font and the high-contrast palette's white midpoint
    assert page.evaluate("getComputedStyle(document.documentElement).fontSize") == "21px"
    page.wait_for_timeout(1000)
    page.screenshot(path=str(OUTPUT / "tour.png"), full_page=True)

    page.get_by_role("button", name="Next").click()
    expect(page.get_by_text("step 2 of 2")).to_be_visible(timeout=TIMEOUT_MS)
    expect(page.get_by_role("heading", name="Sanity checks: layer randomisation")).to_be_visible(timeout=TIMEOUT_MS)
    assert "/sanity_checks" in page.url and "present=1" in page.url
    assert page.locator('[data-testid="stException"]').count() == 0
    page.close()

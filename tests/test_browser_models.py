"""Switching the sidebar's model in a real browser: the target box follows the new model's head and
no warning meant for links shows up.

Right after a switch, the target box's state reads back as the text the browser showed for the last
model ("predicted class", a label name), which the sidebar took for a link's request: "The model has
no label most probable label (0–6)". AppTest cannot show it: it keeps the box's value, not its text.
"""

from __future__ import annotations

import re

import pytest

import services
from tests.test_browser import TIMEOUT_MS, app_url, browser, open_page  # noqa: F401 - fixtures
from ui.sidebar import model_labels

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# Each model, and the text its target box shows before a target is picked (none for one score)
SWITCHES = [
    ("minilm-hatexplain-targets", "most probable label"),
    ("minilm-hatexplain", "predicted class"),
    ("minilm-hatexplain-score", None),
    ("minilm-hatexplain-targets", "most probable label"),
    ("minilm-sst2", "predicted class"),
]


def test_switching_models_warns_of_nothing_and_resets_the_target_box(app_url: str, browser) -> None:  # noqa: F811
    from playwright.sync_api import expect

    labels = model_labels({c.name: c for c in services.model_choices()})
    page = open_page(browser, f"{app_url}/?model=minilm-sst2&methods=random", 1000)
    sidebar = page.locator('[data-testid="stSidebar"]')
    expect(sidebar.get_by_role("combobox", name=re.compile("^Target class"))).to_be_visible(timeout=TIMEOUT_MS)
    for model, default in SWITCHES:
        box = sidebar.get_by_role("combobox", name=re.compile("^Model"))
        box.click()
        page.get_by_role("option", name=labels[model], exact=True).click()
        expect(page.locator('tr.hm-row[data-method="random"]').first).to_be_visible(timeout=TIMEOUT_MS)
        target = sidebar.get_by_role("combobox", name=re.compile("^Target (class|label)"))
        if default is None:
            expect(page.get_by_text(re.compile(r"^Score:"))).to_be_visible(timeout=TIMEOUT_MS)
            expect(target).to_have_count(0)
        else:
            expect(target).to_have_value(default, timeout=TIMEOUT_MS)
        page.wait_for_timeout(1500)  # a rerun that would warn has finished
        warnings = page.locator('[data-testid="stAlertContentWarning"]').all_inner_texts()
        assert warnings == [], (model, warnings)
    assert page.locator('[data-testid="stException"]').count() == 0
    page.close()

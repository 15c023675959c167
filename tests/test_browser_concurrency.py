"""Many people on one server: eight browser sessions at once, and a quick request beside a long one.

One ``streamlit run app.py`` serves eight chromium pages opened together, each on its own model,
page and example; every page must show exactly its own words and scores, equal (to the four
digits the heatmap prints) to the same request computed on its own with the engine. A second
test runs a dataset slice in one session and asks for a heatmap in another, and records how long
the second waited (BENCHMARKS.md, "Reliability").
"""

from __future__ import annotations

import json
import re
import time
from urllib.parse import urlencode

import pytest

from core.classifier import Classifier
from core.datasets import load_examples
from core.loaded import load_classifier
from core.masked_lm import MaskedLM
from engine.explain import explain_example
from tests.test_browser import OUTPUT, TIMEOUT_MS, app_url, browser, open_page  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# (page path, model, dataset, split, index, methods)
SESSIONS = [
    ("", "minilm-sst2", "examples", "sst2", 1, "loo_empty,saliency"),
    ("", "minilm-sst2", "sst2", "dev", 3, "grad_x_input,random"),
    ("", "minilm-esnli", "examples", "esnli", 0, "loo_empty,attention_mean"),
    ("", "minilm-esnli", "esnli", "dev", 2, "integrated_gradients"),
    ("", "minilm-movies", "movies", "validation", 4, "loo_unk,saliency"),
    ("", "minilm-hatexplain", "hatexplain", "val", 5, "loo_empty,grad_x_input"),
    ("input_marginalization", "minilm-sst2", "sst2", "dev", 7, "im,loo_empty"),
    ("input_marginalization", "minilm-movies", "examples", "movies", 0, "im,loo_empty"),
]
CELL_TITLE = re.compile(r"^(.*): ([-+0-9.e]+|nan|inf)$")


def url_of(base: str, page: str, model: str, dataset: str, split: str, index: int, methods: str) -> str:
    query = {"model": model, "dataset": dataset, "split": split, "index": index}
    if page == "":
        query["methods"] = methods
    return f"{base}/{page}?{urlencode(query)}"


def expected_scores(model: str, dataset: str, split: str, index: int, methods: str) -> dict[str, list[float]]:
    """The same request computed alone, in this process, with the engine and default parameters."""
    clf = Classifier(load_classifier(model))
    example = load_examples(dataset, split)[index]
    keys = methods.split(",")
    mlm = MaskedLM.load("minilm-mlm") if "im" in keys else None
    result = explain_example(clf, example, keys, mlm=mlm)
    assert not result.errors
    return {key: [float(s) for s in a.scores] for key, a in result.attributions.items()}


def press_run_if_asked(page, method: str) -> None:
    """The IM page starts a method at once when its estimate is short and asks for a click when
    it is not (on a server this busy it may not be): press its Run button if it shows up."""
    row = page.locator(f'tr.hm-row[data-method="{method}"]:visible').first
    button = page.locator("button", has_text=re.compile(r"^Run IM ")).first
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while time.monotonic() < deadline:
        if row.is_visible():
            return
        if button.is_visible():
            button.click()
        page.wait_for_timeout(500)


def shown_scores(page, method: str) -> list[tuple[str, float]]:
    """(word, score) of every cell in a method's row(s) of the page's first heatmap that has the
    method (the IM page draws the rows again beside LIME's), from the cells' hover titles."""
    row = f'tr.hm-row[data-method="{method}"]:visible'
    heatmap = page.locator('[data-testid="stHtml"]').filter(has=page.locator(row)).first
    titles = heatmap.locator(f"{row} td.hm-cell").evaluate_all("cells => cells.map(c => c.getAttribute('title'))")
    out = []
    for title in titles:
        match = CELL_TITLE.match(title)
        assert match, title
        out.append((match.group(1), float(match.group(2))))
    return out


def test_eight_sessions_at_once_each_get_their_own_result(app_url: str, browser) -> None:  # noqa: F811
    from playwright.sync_api import expect

    contexts = [browser.new_context(viewport={"width": 1400, "height": 1400}) for _ in SESSIONS]
    pages = []
    started = time.monotonic()
    for context, (page_path, *request) in zip(contexts, SESSIONS, strict=True):
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(url_of(app_url, page_path, *request), wait_until="commit")  # all eight start together
        pages.append(page)
    timings = {}
    for page, (page_path, model, dataset, split, index, methods) in zip(pages, SESSIONS, strict=True):
        for method in methods.split(","):
            press_run_if_asked(page, method)
            expect(page.locator(f'tr.hm-row[data-method="{method}"]:visible').first).to_be_visible(timeout=TIMEOUT_MS)
        timings[f"{page_path or 'heatmaps'}:{model}:{dataset}/{split}/{index}"] = time.monotonic() - started
        assert page.locator('[data-testid="stException"]').count() == 0
        expected = expected_scores(model, dataset, split, index, methods)
        words = load_examples(dataset, split)[index].words
        for method in methods.split(","):
            shown = shown_scores(page, method)
            assert [word for word, _ in shown] == list(words), (model, method)
            for (word, value), want in zip(shown, expected[method], strict=True):
                assert value == pytest.approx(want, rel=1e-3, abs=1e-6), (model, method, word)
    for context in contexts:
        context.close()
    OUTPUT.mkdir(exist_ok=True)
    (OUTPUT / "concurrency.json").write_text(json.dumps({"seconds_until_shown": timings}, indent=1))


def test_a_quick_request_stays_responsive_beside_a_long_slice(app_url: str, browser) -> None:  # noqa: F811
    from playwright.sync_api import expect

    quick_url = url_of(app_url, "", "minilm-sst2", "examples", "sst2", 2, "saliency,random")

    def quick_latency() -> float:
        page = open_page(browser, quick_url, 1000)
        start = time.monotonic()
        expect(page.locator('tr.hm-row[data-method="saliency"]:visible').first).to_be_visible(timeout=TIMEOUT_MS)
        elapsed = time.monotonic() - start
        page.close()
        return elapsed

    cold = quick_latency()  # loads the model
    idle = quick_latency()
    slow = open_page(browser, f"{app_url}/faithfulness?model=minilm-sst2&dataset=sst2&split=dev&index=0", 1400)
    slow.get_by_text("Dataset slice", exact=True).first.click()
    count = slow.get_by_label(re.compile(r"^Examples \("))
    count.fill("40")
    count.press("Enter")
    slow.get_by_role("button", name=re.compile("Run on the slice")).click()
    expect(slow.locator('[data-testid="stProgress"]').first).to_be_visible(timeout=TIMEOUT_MS)
    busy = quick_latency()
    still_running = slow.locator('[data-testid="stProgress"]').count() > 0
    slow.close()
    OUTPUT.mkdir(exist_ok=True)
    (OUTPUT / "latency.json").write_text(
        json.dumps(
            {"cold_s": cold, "idle_s": idle, "beside_slice_s": busy, "slice_still_running": still_running}, indent=1
        )
    )
    assert still_running, "the slice finished before the quick request: the test measured nothing"
    assert busy < max(30.0, 10 * idle), (idle, busy)

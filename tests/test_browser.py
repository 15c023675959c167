"""End to end: ``streamlit run app.py`` on a free port, driven by Debian's chromium through Playwright.

Checks what a person sees: the heatmap rows of the chosen methods for a picked example, the
sidebar still there after the rerun, and markup typed into the text shown as text, never run.
A screenshot of the page goes to ``test-output/heatmaps.png``.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.datasets import load_bundled_examples

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "test-output"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
METHODS = ["loo_empty", "saliency", "attention_mean", "random"]
TIMEOUT_MS = 300_000

# Not marked slow: the default suite (`make test`) drives the real app in a browser with these
# (about 1.5 minutes on 2 quiet cores, the model's cold load included).
pytestmark = [pytest.mark.browser]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until_healthy(url: str, server: subprocess.Popen, timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"streamlit exited with {server.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=5) as response:
                if response.read().decode() == "ok":
                    return
        except OSError:
            time.sleep(1)
    raise TimeoutError(f"streamlit did not answer at {url} within {timeout_s} s")


def start_app(port: int, log) -> subprocess.Popen:
    """``streamlit run app.py`` on 127.0.0.1:``port``, offline, its output to ``log``."""
    command = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true"]
    command += ["--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"]
    command += ["--server.fileWatcherType", "none"]
    return subprocess.Popen(
        command, cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"}, stdout=log, stderr=subprocess.STDOUT
    )


@pytest.fixture(scope="module")
def app_url() -> Iterator[str]:
    OUTPUT.mkdir(exist_ok=True)
    port = free_port()
    with open(OUTPUT / "streamlit.log", "w") as log:
        server = start_app(port, log)
        try:
            url = f"http://127.0.0.1:{port}"
            wait_until_healthy(url, server)
            yield url
        finally:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
    # A widget given a value both as its default and through the state (a link, a bundle, a tour
    # step set it) makes Streamlit log a warning, once per process: none of this module's sessions may.
    log = (OUTPUT / "streamlit.log").read_text()
    assert "set via the Session State API" not in log, log[log.find("The widget with key") :][:300]


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    assert CHROMIUM.exists(), f"{CHROMIUM} is missing: apt-get install chromium"
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def open_page(browser, url: str, height: int):
    page = browser.new_page(viewport={"width": 1400, "height": height})
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(url)
    return page


def rows(page, method: str):
    return page.locator(f'tr.hm-row[data-method="{method}"]:visible')


def test_heatmap_rows_of_a_picked_example_are_visible(app_url: str, browser) -> None:
    from playwright.sync_api import expect

    query = f"model=minilm-sst2&dataset=examples&split=sst2&index=0&methods={','.join(METHODS)}"
    page = open_page(browser, f"{app_url}/?{query}", 1600)
    expect(rows(page, "loo_empty").first).to_be_visible(timeout=TIMEOUT_MS)

    picked = load_bundled_examples(split="sst2")[5]
    index_box = page.get_by_label(re.compile("^Example"))
    index_box.fill("5")
    index_box.press("Enter")
    expect(rows(page, "loo_empty").first).to_contain_text(picked.words[1], timeout=TIMEOUT_MS)

    for method in METHODS:
        expect(rows(page, method).first).to_be_visible()
        assert rows(page, method).first.locator("td").first.inner_text() == picked.words[0]
    assert (
        page.locator('tr.hm-row[data-method="random"]:visible td')
        .first.get_attribute("title")
        .startswith(picked.words[0])
    )
    expect(page.get_by_text("Masked LM (fill-in methods)")).to_be_visible()  # the sidebar survives the rerun
    assert page.locator('[data-testid="stException"]').count() == 0
    page.wait_for_timeout(1000)  # let the chart finish drawing
    page.screenshot(path=str(OUTPUT / "heatmaps.png"), full_page=True)
    page.close()


def test_markup_in_free_text_is_shown_not_run(app_url: str, browser) -> None:
    from playwright.sync_api import expect

    page = open_page(browser, f"{app_url}/?model=minilm-sst2&dataset=free%20text&methods=random", 1000)
    expect(rows(page, "random").first).to_be_visible(timeout=TIMEOUT_MS)
    text_box = page.get_by_label(re.compile("^Text"))
    text_box.fill('Great <script>window.__ran = 1</script> film <img src=x onerror="window.__ran = 2">')
    text_box.press("Control+Enter")
    # Long texts wrap into several blocks, one row per method in each: the markup ends in the last.
    expect(rows(page, "random").last).to_contain_text("onerror", timeout=TIMEOUT_MS)
    assert page.evaluate("window.__ran") is None
    assert page.locator(".hm img, .hm script").count() == 0
    cells = rows(page, "random").first.locator("td")
    assert [cells.nth(i).inner_text() for i in range(4)] == ["Great", "<", "script", ">"]
    page.close()


PAGES = {
    "input_marginalization": "Input Marginalization",
    "faithfulness": "Faithfulness",
    "rationales": "Human rationales",
    "sanity_checks": "Sanity checks",
    "adversarial": "Adversarial attacks",
    "reproductions": "Reproductions",
}


def test_every_page_opens_and_the_rationale_overlay_is_visible(app_url: str, browser) -> None:
    from playwright.sync_api import expect

    query = "model=minilm-sst2&dataset=examples&split=sst2&index=0"
    example = load_bundled_examples(split="sst2")[0]
    page = open_page(browser, f"{app_url}/rationales?{query}", 1400)
    majority = rows(page, "human · majority")  # one row per block of the wrapped text
    expect(majority.first).to_be_visible(timeout=TIMEOUT_MS)
    outlined = majority.locator("td[style*='outline']")
    assert sorted(outlined.all_inner_texts()) == sorted(w for w, m in zip(example.words, example.rationale) if m)
    long_label = page.locator('tr.hm-row[data-method^="integrated_gradients ·"]:visible')  # a method and its threshold
    expect(long_label.first).to_be_visible(timeout=TIMEOUT_MS)
    for head in page.locator("tr.hm-row th").all():  # every label stays inside its column, never over the words
        assert head.evaluate("e => e.scrollWidth <= e.clientWidth"), head.inner_text()
    page.screenshot(path=str(OUTPUT / "rationales.png"), full_page=True)
    for path, title in PAGES.items():
        page.goto(f"{app_url}/{path}?{query}")
        expect(page.get_by_role("heading", name=re.compile(f"^{title}"))).to_be_visible(timeout=TIMEOUT_MS)
        page.wait_for_load_state("networkidle")
        assert page.locator('[data-testid="stException"]').count() == 0, path
    page.close()


def test_pages_show_their_results_in_the_browser(app_url: str, browser) -> None:
    """IM: its row beside leave-one-out and the candidate table; sanity checks: the curves and the
    thumbnails after a run; adversarial: the original and attacked texts and heatmaps."""
    from playwright.sync_api import expect

    query = "model=minilm-sst2&dataset=examples&split=sst2&index=1"
    page = open_page(browser, f"{app_url}/input_marginalization?{query}", 1400)
    gate = page.get_by_role("button", name=re.compile("^Run IM"))  # shown when the estimate is long
    expect(rows(page, "im").first.or_(gate)).to_be_visible(timeout=TIMEOUT_MS)
    if gate.is_visible():
        gate.click()
    expect(rows(page, "im").first).to_be_visible(timeout=TIMEOUT_MS)
    expect(rows(page, "loo_empty").first).to_be_visible()
    expect(page.get_by_text("Fill-ins of one word")).to_be_visible()
    candidates = page.locator('[data-testid="stDataFrame"]')
    expect(candidates.nth(1)).to_be_visible()
    expect(candidates.nth(1).get_by_text("fill-in", exact=True).first).to_be_attached()
    page.screenshot(path=str(OUTPUT / "input_marginalization.png"), full_page=True)

    page.goto(f"{app_url}/sanity_checks?{query}")
    page.get_by_role("button", name="Run the sanity check").click(timeout=TIMEOUT_MS)
    expect(page.locator(".sanity-thumb").first).to_be_visible(timeout=TIMEOUT_MS)
    expect(page.locator(".js-plotly-plot").first).to_be_visible()
    for thumb in page.locator(".sanity-thumb").all():  # every step's card inside the window, none off to the right
        box = thumb.bounding_box()
        assert box is not None and box["x"] + box["width"] <= 1400, box
    page.screenshot(path=str(OUTPUT / "sanity_checks.png"), full_page=True)

    page.goto(f"{app_url}/adversarial?{query}")
    page.get_by_text("Attack parameters").click(timeout=TIMEOUT_MS)
    steps = page.get_by_label("steps", exact=True)
    steps.fill("4")  # a short attack: the test checks the display, the metrics tests check the attack
    steps.press("Enter")
    expect(page.get_by_text("about 4 forward and backward passes")).to_be_visible()
    page.get_by_role("button", name="Run the attack").click()
    expect(rows(page, "attacked").first).to_be_visible(timeout=TIMEOUT_MS)
    expect(page.locator(".adv-text").nth(1)).to_be_visible()
    page.screenshot(path=str(OUTPUT / "adversarial.png"), full_page=True)
    assert page.locator('[data-testid="stException"]').count() == 0
    page.close()


def test_the_page_controls_survive_a_sidebar_error(app_url: str, browser) -> None:
    """A model that cannot be loaded stops the page before its controls are drawn; clearing it
    brings the controls back as they were, not empty (which the next rerun would have sent); and
    they are still as they were after a visit to another page."""
    from playwright.sync_api import expect

    query = "model=minilm-sst2&dataset=examples&split=sst2&index=0&methods=random,attention_mean"
    page = open_page(browser, f"{app_url}/?{query}", 1400)
    expect(rows(page, "attention_mean").first).to_be_visible(timeout=TIMEOUT_MS)
    typed = page.get_by_placeholder(re.compile("^e.g. textattack"))
    typed.fill("no-such-model-anywhere")
    typed.press("Enter")
    expect(page.get_by_text("cannot load 'no-such-model-anywhere'")).to_be_visible(timeout=TIMEOUT_MS)
    typed.fill("")
    typed.press("Enter")
    expect(rows(page, "attention_mean").first).to_be_visible(timeout=TIMEOUT_MS)
    chosen = page.locator('[data-testid="stMultiSelect"]').filter(has_text="Methods")
    expect(chosen).to_contain_text("attention_mean")
    expect(chosen).to_contain_text("random")
    page.get_by_label(re.compile("^Example")).fill("1")  # another rerun: the methods must still be sent
    page.get_by_label(re.compile("^Example")).press("Enter")
    expect(rows(page, "attention_mean").first).to_contain_text(
        load_bundled_examples(split="sst2")[1].words[0], timeout=TIMEOUT_MS
    )
    assert "methods=random%2Cattention_mean" in page.url or "methods=random,attention_mean" in page.url
    # Another page and back: the page's choices are the session's, not reset to the defaults.
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Human rationales").click()
    expect(page.get_by_text(re.compile("^Human rationales")).first).to_be_visible(timeout=TIMEOUT_MS)
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Heatmaps").click()
    expect(rows(page, "attention_mean").first).to_be_visible(timeout=TIMEOUT_MS)
    expect(chosen).to_contain_text("attention_mean")
    expect(rows(page, "loo_empty")).to_have_count(0)  # a default method the choice left out
    page.close()


def test_a_bundle_of_typed_text_reopens_on_that_text(app_url: str, browser, tmp_path) -> None:
    """The session bundle of a typed text, downloaded and opened again over another text, brings
    its text back into the sidebar as typed; Streamlit logs no warning of a widget given a value
    both as its default and through the state (it did when the sidebar passed the text as both)."""
    from playwright.sync_api import expect

    query = "model=minilm-sst2&dataset=free%20text&methods=random&text=A%3Cb%3Ebold%20film!"
    page = open_page(browser, f"{app_url}/?{query}", 1000)
    expect(rows(page, "random").first).to_contain_text("bold", timeout=TIMEOUT_MS)
    with page.expect_download() as download:
        page.get_by_role("button", name="Session bundle").click()
    bundle = tmp_path / download.value.suggested_filename  # the uploader takes only a .zip name
    download.value.save_as(bundle)
    assert bundle.suffix == ".zip"
    text_box = page.get_by_label(re.compile("^Text"))
    text_box.fill("Another film entirely")
    text_box.press("Control+Enter")
    expect(rows(page, "random").first).to_contain_text("entirely", timeout=TIMEOUT_MS)
    page.get_by_text("Open a session bundle").click()
    page.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(bundle)
    expect(text_box).to_have_value("A<b>bold film!", timeout=TIMEOUT_MS)
    expect(rows(page, "random").first).to_contain_text("bold", timeout=TIMEOUT_MS)
    page.close()
    assert "set via the Session State API" not in (OUTPUT / "streamlit.log").read_text()


def test_an_uploaded_data_file_is_explained(app_url: str, browser, tmp_path) -> None:
    """A CSV given to the sidebar's uploader: its first row's words are in the heatmap, and the
    path box names where the results folder keeps it."""
    from playwright.sync_api import expect

    data = tmp_path / "my reviews.csv"
    data.write_text('text,label\n"Wonderfully acted, a joy.",1\n"Tedious.",0\n')
    page = open_page(browser, f"{app_url}/?model=minilm-sst2&dataset=data%20file&methods=random", 1000)
    uploader = page.locator('[data-testid="stFileUploader"]').filter(has_text="Upload a data file")
    uploader.locator('input[type="file"]').set_input_files(data)
    expect(rows(page, "random").first).to_contain_text("Wonderfully", timeout=TIMEOUT_MS)
    path_box = page.get_by_role("textbox", name=re.compile("path of a file on this machine"))
    expect(path_box).to_have_value(re.compile(r"/uploads/[0-9a-f]{32}/my_reviews\.csv$"))
    assert page.locator('[data-testid="stException"]').count() == 0
    page.close()


def test_heatmap_lines_fit_a_1024_px_window(app_url: str, browser) -> None:
    """At 1,024 px with the sidebar open, a line of words ran past the page's column (behind a
    scroll with no bar in sight), and at the presentation font only 4 words of a line showed:
    every word cell is now inside the heatmap's column, in both modes."""
    from playwright.sync_api import expect

    words = load_bundled_examples(split="sst2")[1].words
    for present in ("0", "1"):
        query = f"model=minilm-sst2&dataset=examples&split=sst2&index=1&methods=random,integrated_gradients&present={present}"
        page = browser.new_page(viewport={"width": 1024, "height": 768})
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(f"{app_url}/?{query}")
        expect(rows(page, "integrated_gradients").first).to_be_visible(timeout=TIMEOUT_MS)
        right = page.locator(".hm").first.evaluate("e => e.getBoundingClientRect().right")
        cells = rows(page, "random").locator("td.hm-cell")
        assert cells.count() == len(words), present
        edges = cells.evaluate_all("cells => cells.map(c => c.getBoundingClientRect().right)")
        assert max(edges) <= right + 1, (present, max(edges), right)
        page.locator(".hm").first.screenshot(path=str(OUTPUT / f"heatmap-1024-present{present}.png"))
        page.close()

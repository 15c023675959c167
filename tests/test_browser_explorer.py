"""End to end in a real browser: a stored run opened on the Dataset explorer page, one example
sent to the heatmap page with the run's own scores; and the app requests nothing outside the
machine while it does so."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.test_browser import OUTPUT, TIMEOUT_MS, browser, free_port, open_page, rows, wait_until_healthy  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]
METHODS = ("loo_empty", "random")

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> tuple[str, Path]:
    """A finished 3-example run of the bundled SST-2 model in its own results folder."""
    from engine.runs.executor import execute, open_run
    from engine.runs.spec import RunSpec
    from engine.runs.store import RunStore

    results = tmp_path_factory.mktemp("results")
    spec = RunSpec(
        model="minilm-sst2", dataset="examples", split="sst2", limit=3, methods=METHODS, metrics=("deletion",), seed=0
    )
    store = RunStore(results)
    return execute(open_run(spec, store), store, executor="serial").info.run_id, results


@pytest.fixture(scope="module")
def explorer_url(stored) -> Iterator[str]:
    OUTPUT.mkdir(exist_ok=True)
    port = free_port()
    command = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port)]
    command += ["--server.fileWatcherType", "none"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "ATTRIBUTION_RESULTS_DIR": str(stored[1])}
    with open(OUTPUT / "streamlit-explorer.log", "w") as log:
        server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
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


def test_open_a_stored_run_and_land_on_its_heatmap(explorer_url: str, browser, stored) -> None:  # noqa: F811
    from playwright.sync_api import expect

    run_id, _ = stored
    page = open_page(browser, f"{explorer_url}/explorer?run={run_id}&model=minilm-sst2&dataset=examples", 1600)
    outside: list[str] = []
    page.on("request", lambda request: outside.append(request.url) if not _local(request.url) else None)
    expect(page.get_by_role("heading", name="Dataset explorer")).to_be_visible(timeout=TIMEOUT_MS)
    expect(page.get_by_text(f"scores stored by {run_id}", exact=False)).to_be_visible(timeout=TIMEOUT_MS)
    expect(rows(page, "loo_empty").first).to_be_visible()
    expect(page.locator('[data-testid="stDataFrame"]').first).to_be_visible()
    page.screenshot(path=str(OUTPUT / "explorer.png"), full_page=True)
    page.get_by_role("button", name="Open on the heatmap page").click()
    expect(page.get_by_role("heading", name=re.compile("^Token attribution heatmaps"))).to_be_visible(
        timeout=TIMEOUT_MS
    )
    expect(page.get_by_text(f"The scores stored by run {run_id}", exact=False)).to_be_visible(timeout=TIMEOUT_MS)
    for method in METHODS:
        expect(rows(page, method).first).to_be_visible()
    assert page.locator('[data-testid="stException"]').count() == 0
    page.wait_for_timeout(1000)
    assert outside == [], outside
    page.close()


def _local(url: str) -> bool:
    return url.startswith(("http://127.0.0.1", "ws://127.0.0.1", "data:", "blob:", "about:"))


@pytest.mark.parametrize("present", ["0", "1"])
def test_an_opened_run_fits_1024_px(explorer_url: str, browser, stored, present: str) -> None:  # noqa: F811
    """The explorer with a run open (its table, filters, agreement matrix and the example's rows) at
    1,024 px with the sidebar open, in both fonts: nothing cut (``test_browser_layout``'s checks)."""
    from playwright.sync_api import expect

    from tests.test_browser_layout import assert_nothing_cut, page_checks

    run_id, _ = stored
    page = browser.new_page(viewport={"width": 1024, "height": 900})
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(f"{explorer_url}/explorer?run={run_id}&model=minilm-sst2&dataset=examples&present={present}")
    expect(page.get_by_text(f"scores stored by {run_id}", exact=False)).to_be_visible(timeout=TIMEOUT_MS)
    expect(rows(page, "loo_empty").first).to_be_visible()
    checks = page_checks(page, set(), 9, 0, f"explorer-run-present{present}")
    page.close()
    assert_nothing_cut({"explorer with a run": checks})


def test_the_run_picker_shows_its_runs_current_label_and_keeps_it(explorer_url: str, browser, stored) -> None:  # noqa: F811
    """The picker's label carries the run's progress and status, which change while it is shown.
    The progress fragment drew the page again only when rows were added, not when the status changed;
    and Streamlit sends a keyed selectbox's value back as its label, so the box kept showing the label
    it was first drawn with ("0/40 · running" beside a finished run's "40 of 40 · done"), and a
    page without a fallback lost the choice to its first option (``ui.live_labels``)."""
    from playwright.sync_api import expect

    from engine.runs.store import RunStore

    run_id, results = stored
    page = open_page(browser, f"{explorer_url}/explorer?run={run_id}&model=minilm-sst2&dataset=examples", 1600)
    picker = page.locator('[data-testid="stSelectbox"]').filter(has_text="Stored run").locator("input")
    expect(page.get_by_text(f"scores stored by {run_id}", exact=False)).to_be_visible(timeout=TIMEOUT_MS)
    expect(picker).to_have_value(re.compile(rf"^{run_id} .* · done$"))
    clustered = page.get_by_text("Order by clustering", exact=True)
    idle = page.locator('[data-testid="stStatusWidget"]')
    store = RunStore(results)
    wall_s = store.get(run_id).wall_s
    try:
        for status in ("running", "done"):  # another process takes the run up again, then finishes it
            if status == "running":
                store.claim(run_id, "serial", reopen=True)
            else:
                store.finish(run_id, "done", wall_s)
            # the page's progress fragment draws the page again when the status changes
            expect(picker).to_have_value(re.compile(rf"^{run_id} .* · {status}$"), timeout=20_000)
            for _ in range(2):  # two reruns more: the second is the one that read no option
                # While a rerun is drawn the toggle's old copy can stay beside its new one (seen
                # twice in full CI runs, never alone): click once the app is idle, the first copy.
                expect(idle).to_have_count(0, timeout=TIMEOUT_MS)
                clustered.first.click()
                page.wait_for_timeout(1500)
                expect(picker).to_have_value(re.compile(rf"^{run_id} .* · {status}$"), timeout=20_000)
                expect(page.get_by_text(f"scores stored by {run_id}", exact=False)).to_be_visible()
    finally:
        if store.get(run_id).status != "done":
            store.finish(run_id, "done", wall_s)
    assert page.locator('[data-testid="stException"]').count() == 0
    page.close()

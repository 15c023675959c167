"""How long the app takes (issue 20, item 6): start to the first heatmap, and the same request
again.

Starts ``streamlit run app.py`` on a free port, opens the heatmap page on the bundled SST-2 model
and example 0 with the page's default methods in Debian's chromium (Playwright), and records:

- ``server_ready_s``: from starting the process to the server answering its health check;
- ``first_heatmap_s``: from starting the process to the last default method's heatmap row
  being visible (the model's cold load and every method's computation included);
- ``page_first_heatmap_s``: the same, counted from opening the page;
- ``again_s``: a second browser tab asking for the same example and methods, from opening it to
  the rows being visible (the explanation comes from the app's cache; the page's own drawing and
  Streamlit's session start are included);
- ``service_cold_s`` / ``service_again_s``: the app's request (``services.explain``) in this
  process, first with the model's loading, then again from the app's result cache.

    .venv/bin/python tools/app_latency.py [--methods loo_empty,saliency,...]

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.test_browser import CHROMIUM, CHROMIUM_ARGS, free_port, start_app, wait_until_healthy


def _open_until_rows(browser, url: str, methods: list[str], timeout_ms: int) -> float:
    """Seconds from opening ``url`` in a new tab to every method's heatmap row being visible."""
    page = browser.new_page(viewport={"width": 1400, "height": 1600})
    opened = time.perf_counter()
    page.goto(url)
    for method in methods:
        page.locator(f'tr.hm-row[data-method="{method}"]').first.wait_for(state="visible", timeout=timeout_ms)
    return time.perf_counter() - opened


def _service_seconds(model: str, methods: list[str]) -> tuple[float, float]:
    """The app's own request (``services.explain``) in this process: cold (model loading
    included), then the same request again (answered from the app's result cache)."""
    import services
    from core.datasets import load_bundled_examples

    example = load_bundled_examples(split="sst2")[0]
    times = []
    for _ in range(2):
        start = time.perf_counter()
        services.explain(model, example, methods)
        times.append(time.perf_counter() - start)
    return times[0], times[1]


def main() -> int:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--methods", default="panel", help="'panel' (explainers.DEFAULT_PANEL), 'all' or keys")
    parser.add_argument("--model", default="minilm-sst2")
    args = parser.parse_args()
    import explainers

    methods = explainers.resolve(args.methods)
    service_cold, service_again = _service_seconds(args.model, methods)
    url_query = f"model={args.model}&dataset=examples&split=sst2&index=0&methods={','.join(methods)}"
    port = free_port()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        started = time.perf_counter()
        server = start_app(port, subprocess.DEVNULL)
        try:
            url = f"http://127.0.0.1:{port}"
            wait_until_healthy(url, server)
            ready = time.perf_counter() - started
            page_first = _open_until_rows(browser, f"{url}/?{url_query}", methods, 300_000)
            first = time.perf_counter() - started
            again = _open_until_rows(browser, f"{url}/?{url_query}", methods, 60_000)
        finally:
            server.terminate()
            server.wait(timeout=20)
            browser.close()
    result = {
        "methods": methods,
        "service_cold_s": round(service_cold, 2),
        "service_again_s": round(service_again, 4),
        "server_ready_s": round(ready, 2),
        "first_heatmap_s": round(first, 2),
        "page_first_heatmap_s": round(page_first, 2),
        "again_s": round(again, 2),
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Every page's long work on one example waits for a click (AppTest, the bundled SST-2 model): the
faithfulness and rationales pages explained the example at once however long the methods' estimate,
and the sanity-check page explained it with every chosen method (to time one step) before its Run
button appeared. Nothing is computed here: the services that explain are replaced by recorders."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import services

APP = Path(__file__).resolve().parents[1] / "app.py"
SHORT = "the movie was great fun but the plot was thin and the ending far too long"
# 480 words, cut to the model's 512 tokens: thousands of passes of 512 tokens are minutes of work
# on a CPU, far past the 20 s a run may take without a click, however fast the machine
LONG = " ".join([SHORT] * 30)


@pytest.fixture
def explained(monkeypatch) -> list[list[str]]:
    """The methods each call of ``services.explain`` or ``services.faithfulness`` asked for."""
    calls: list[list[str]] = []

    def recorder(model, example, methods, *args, **kwargs):
        calls.append(list(methods))
        raise AssertionError("explained before the Run button")

    monkeypatch.setattr(services, "explain", recorder)
    monkeypatch.setattr(services, "faithfulness", recorder)
    return calls


def open_page(page: str, text: str, state: dict, params: dict | None = None) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=300)
    at.query_params.update({"model": "minilm-sst2", "dataset": "free text", "text": text, **(params or {})})
    at.session_state["heatmaps.methods"] = []  # the home page computes nothing
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def waits(at: AppTest, key: str) -> None:
    [button] = [b for b in at.button if b.key == key]
    assert button.label.startswith("Run on this example (≈ ")
    assert any(c.value.startswith("Estimated time for this example: about ") for c in at.caption)


def test_faithfulness_waits_for_a_long_example(explained) -> None:
    state = {"faithfulness.methods": ["lime"], "faithfulness.param.lime.n_samples": 8000}
    at = open_page("app_pages/faithfulness.py", LONG, state)
    waits(at, "faithfulness.example_run")
    assert explained == [] and not at.get("plotly_chart")


def test_rationales_waits_for_a_long_example(explained) -> None:
    at = open_page("app_pages/rationales.py", LONG, {"rationales.methods": ["lime", "lime_mlm"]}, {"highlight": "3,4"})
    waits(at, "rationales.example_run")
    assert explained == []


def test_sanity_checks_estimate_a_step_without_explaining(explained) -> None:
    state = {"sanity.methods": ["lime"], "sanity.param.lime.n_samples": 8000}
    at = open_page("app_pages/sanity_checks.py", SHORT, state)
    assert any(b.key == "sanity.run" for b in at.button)
    assert any("1 method(s) take about" in c.value for c in at.caption)
    assert explained == []


def test_the_log_odds_heading_follows_its_form(explained) -> None:
    """The heading said "the top 20% words replaced by [MASK]" whatever the form below it held."""
    from ui.params import widget_key

    state = {"faithfulness.methods": ["lime"], "faithfulness.param.lime.n_samples": 8000}
    state |= {
        widget_key("faithfulness", "log_odds", "fraction"): 0.5,
        widget_key("faithfulness", "log_odds", "removal"): "unk",
    }
    at = open_page("app_pages/faithfulness.py", LONG, state)
    assert any(m.value == "**log-odds** (AML: the top 50% of the words removed, [UNK])" for m in at.markdown)


def test_amls_pre_training_counts_toward_the_gate(explained, monkeypatch, tmp_path) -> None:
    """The one-example estimate left out AML's pre-training (minutes on a CPU): a run estimated at
    a second started at once. The rest of the estimate is pinned at 0.1 s and the gate at 0.5 s, so
    the button shows only if the pre-training (seconds of optimisation steps) is counted."""
    import ui.runs
    from core.types import Example

    monkeypatch.setenv("ATTRIBUTION_RESULTS_DIR", str(tmp_path))  # no pre-trained model on disk
    example = Example(segments=(tuple(SHORT.split()),), id="text")
    assert services.pretraining_seconds("minilm-sst2", example, ["aml"], {}) > 0.5
    assert services.pretraining_seconds("minilm-sst2", example, ["aml"], {}, fresh=True) > 0.5
    monkeypatch.setattr(services, "estimate_slice", lambda *args, **kwargs: services.CostEstimate(0, 10, 0.1))
    monkeypatch.setattr(ui.runs, "AUTO_RUN_S", 0.5)
    at = open_page("app_pages/rationales.py", SHORT, {"rationales.methods": ["aml"]}, {"highlight": "3,4"})
    waits(at, "rationales.example_run")
    assert any("of it AML's pre-training, once" in c.value for c in at.caption)
    assert explained == []


def test_a_results_folder_that_is_a_file_stops_every_page_in_one_line(monkeypatch, tmp_path) -> None:
    a_file = tmp_path / "results"
    a_file.write_text("not a folder")
    monkeypatch.setenv("ATTRIBUTION_RESULTS_DIR", str(a_file))
    for page in ("app_pages/explorer.py", "app_pages/roar.py"):
        at = open_page(page, SHORT, {})
        assert any("a file, not a folder" in e.value for e in at.error), [e.value for e in at.error]

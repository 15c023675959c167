"""The sidebar's scoring precision: the model reference carries the autocast type (so every cache
keyed by the model keys by it), the services' classifier scores under it, and the heatmap page
shows leave-one-out scores that moved by rounding when bfloat16 is picked."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from streamlit.testing.v1 import AppTest

import services
from core.model_refs import model_ref, ref_autocast, split_ref

APP = Path(__file__).resolve().parents[1] / "app.py"
TEXT = "the acting is great , but the plot is awful and the ending makes no sense ."


@pytest.mark.parametrize(
    ("name", "head", "autocast"),
    [
        ("minilm-sst2", None, None),
        ("minilm-sst2", "regression", None),
        ("minilm-sst2", None, "bfloat16"),
        ("/tmp/a folder [v2]", "multi_label", "float16"),
    ],
)
def test_the_reference_carries_head_and_autocast(name, head, autocast) -> None:
    ref = model_ref(name, head, autocast)
    assert split_ref(ref) == (name, head) and ref_autocast(ref) == autocast
    assert (ref == name) == (head is None and autocast is None)  # a plain name stays plain


def test_the_services_classifier_scores_under_the_references_autocast() -> None:
    fast = services.classifier(model_ref("minilm-sst2", None, "bfloat16"))
    assert fast.autocast and fast.autocast_dtype == torch.bfloat16
    assert not services.classifier("minilm-sst2").autocast
    assert services.autocast_choices()[0] == "bfloat16"


def _loo_scores(at: AppTest) -> dict[str, float]:
    heatmap = "".join(h.value for h in at.html if 'data-role="heatmap"' in h.value)
    return {word: float(value) for word, value in re.findall(r'title="([^":]+): ([-+0-9.e]+)"', heatmap)}


def test_the_heatmap_page_scores_under_the_sidebars_autocast() -> None:
    def page(autocast: str | None) -> dict[str, float]:
        at = AppTest.from_file(str(APP), default_timeout=300)
        at.session_state["sidebar.dataset"] = "free text"
        at.session_state["sidebar.text"] = TEXT
        at.session_state["sidebar.autocast"] = autocast
        at.session_state["heatmaps.methods"] = ["loo_empty"]
        at.run()
        assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
        assert at.selectbox(key="sidebar.autocast").value == (autocast or "float32")  # None: its first choice
        return _loo_scores(at)

    exact, fast = page(None), page("bfloat16")
    assert exact.keys() == fast.keys() and len(exact) >= 10
    assert exact != fast  # the passes ran in bfloat16
    assert max(abs(exact[w] - fast[w]) for w in exact) < 0.05


def test_a_run_started_from_the_app_keeps_the_sidebars_autocast(toy_bert_folder, tmp_path, monkeypatch) -> None:
    """The explorer page's run: the model's name (not the reference) and ``--autocast`` go to
    ``cli run``, and the run's key differs from the float32 run's."""
    import subprocess

    monkeypatch.setenv("ATTRIBUTION_RESULTS_DIR", str(tmp_path))
    commands: list[list[str]] = []
    monkeypatch.setattr(subprocess, "Popen", lambda command, **kwargs: commands.append(command))
    common = ("examples", "sst2", 2, ["loo_empty"], ["deletion"])
    fast = services.runs.start_run(model_ref(toy_bert_folder, None, "bfloat16"), *common)
    exact = services.runs.start_run(toy_bert_folder, *common)
    assert fast != exact
    assert commands[0][commands[0].index("--model") + 1] == toy_bert_folder
    assert commands[0][commands[0].index("--autocast") + 1] == "bfloat16" and "--autocast" not in commands[1]


def test_a_run_started_from_the_app_keeps_the_sidebars_head_override(toy_bert_folder, tmp_path, monkeypatch) -> None:
    """The app refused a dataset run under the sidebar's head-type override ("clear the sidebar's
    head-type override"); ``cli run`` takes ``--head-type`` now, so the run is started with it,
    under its own key."""
    import subprocess

    from cli.main import build_parser

    monkeypatch.setenv("ATTRIBUTION_RESULTS_DIR", str(tmp_path))
    commands: list[list[str]] = []
    monkeypatch.setattr(subprocess, "Popen", lambda command, **kwargs: commands.append(command))
    common = ("examples", "sst2", 2, ["loo_empty"], ["deletion"])
    read_as_labels = services.runs.start_run(model_ref(toy_bert_folder, "multi_label"), *common)
    assert read_as_labels != services.runs.start_run(toy_bert_folder, *common)
    assert commands[0][commands[0].index("--head-type") + 1] == "multi_label" and "--head-type" not in commands[1]
    started = build_parser(["run"]).parse_args(commands[0][commands[0].index("run") :])
    assert (started.model, started.head_type) == (toy_bert_folder, "multi_label")

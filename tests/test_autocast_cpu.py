"""Scoring under bfloat16 autocast on the CPU (``Classifier(autocast=True,
autocast_dtype=torch.bfloat16)``, ``--autocast bfloat16``): the scorer's passes run in bfloat16
(close to float32, not equal to it), gradients stay float32, float16 is refused on a CPU, and a
dataset run under autocast is another run than the float32 one, resumed with its autocast."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import explainers
from cli.main import main
from core.classifier import Classifier, autocast_options
from core.datasets import load_examples
from core.loaded import load_classifier
from engine.runs.executor import execute, open_run, resume_spec
from engine.runs.store import RunStore
from tests.test_runs import toy_spec
from tests.toy import toy_bert


@pytest.fixture(scope="module")
def sst2():
    return load_classifier("minilm-sst2")


def test_bfloat16_scoring_is_close_to_float32_and_not_equal(sst2) -> None:
    examples = load_examples("examples", "sst2")[:4]
    exact, fast = Classifier(sst2), Classifier(sst2, **autocast_options("bfloat16"))
    assert fast.autocast and fast.autocast_dtype == torch.bfloat16
    variants = [exact.encode(e).variant for e in examples]
    p32, p16 = exact.predict_proba(variants), fast.predict_proba(variants)
    assert np.abs(p32 - p16).max() > 0  # the passes really ran in bfloat16
    np.testing.assert_allclose(p16, p32, atol=0.05)
    assert (p16.argmax(1) == p32.argmax(1)).all()


def test_gradients_stay_float32_under_autocast(sst2) -> None:
    example = load_examples("examples", "sst2")[0]
    spec = explainers.get("saliency")
    exact = explainers.run_explainer(spec, Classifier(sst2), example, 1)
    fast = explainers.run_explainer(spec, Classifier(sst2, **autocast_options("bfloat16")), example, 1)
    np.testing.assert_array_equal(fast.scores, exact.scores)


def test_float16_on_a_cpu_and_unknown_types_are_refused() -> None:
    with pytest.raises(ValueError, match="needs a GPU; on a CPU use bfloat16"):
        Classifier(toy_bert(), **autocast_options("float16"))
    with pytest.raises(ValueError, match="autocast must be one of float16, bfloat16"):
        autocast_options("int8")
    with pytest.raises(ValueError, match="^autocast must be one of"):
        toy_spec("minilm-sst2", autocast="half")


def test_a_run_under_autocast_is_another_run_and_resumes_with_it(toy_bert_folder, tmp_path) -> None:
    store = RunStore(tmp_path / "results")
    common = {"limit": 2, "methods": ("loo_empty",), "metrics": ("deletion",)}
    plain = execute(open_run(toy_spec(toy_bert_folder, **common), store), store, executor="serial")
    fast = execute(open_run(toy_spec(toy_bert_folder, **common, autocast="bfloat16"), store), store, executor="serial")
    assert fast.created and fast.info.run_id != plain.info.run_id
    assert fast.info.selection["autocast"] == "bfloat16" and "autocast" not in plain.info.selection
    assert resume_spec(store, fast.info.run_id).autocast == "bfloat16"
    assert resume_spec(store, plain.info.run_id).autocast is None


def test_evaluate_command_reports_its_autocast(toy_bert_folder, capsys) -> None:
    args = ["evaluate", "--model", toy_bert_folder, "--dataset", "examples", "--split", "sst2", "--limit", "2",
            "--methods", "loo_empty", "--metrics", "deletion", "--json"]  # fmt: skip
    assert main([*args, "--autocast", "bfloat16"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["autocast"] == "bfloat16"
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["autocast"] is None

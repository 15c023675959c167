"""Every stochastic method gives identical scores for the same seed, in one process and across
processes, and other scores for another seed (checked over the whole registry)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import explainers
from cli.main import main
from tests.test_cli import FAST

ROOT = Path(__file__).resolve().parents[1]
TEXT = "the movie was great but the plot was bad and the film was awful"
STOCHASTIC = [key for key, spec in explainers.REGISTRY.items() if spec.stochastic]
# FAST's small budgets, for the stochastic methods only.
PARAMS = [
    arg for pair in zip(FAST[::2], FAST[1::2], strict=True) if pair[1].split(".")[0] in STOCHASTIC for arg in pair
]


def argv(model_dirs, seed: int) -> list[str]:
    clf, mlm = model_dirs
    return ["explain", "--model", str(clf), "--mlm", str(mlm), "--text", TEXT, "--methods", ",".join(STOCHASTIC)] + [
        *PARAMS,
        "--seed",
        str(seed),
        "--json",
    ]


def scores_in_process(capsys, model_dirs, seed: int) -> dict[str, list[float]]:
    assert main(argv(model_dirs, seed)) == 0
    payload = json.loads(capsys.readouterr().out)
    assert not payload["errors"], payload["errors"]
    return {key: a["scores"] for key, a in payload["attributions"].items()}


def scores_in_subprocess(model_dirs, seed: int) -> dict[str, list[float]]:
    done = subprocess.run(
        [sys.executable, "-m", "cli", *argv(model_dirs, seed)],
        cwd=ROOT,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return {key: a["scores"] for key, a in json.loads(done.stdout)["attributions"].items()}


def test_the_registry_has_stochastic_methods() -> None:
    assert {"random", "lime", "kernel_shap"} <= set(STOCHASTIC)


@pytest.mark.slow
def test_same_seed_same_scores_across_processes_other_seed_differs(capsys, model_dirs) -> None:
    first = scores_in_process(capsys, model_dirs, seed=5)
    again = scores_in_process(capsys, model_dirs, seed=5)
    other_process = scores_in_subprocess(model_dirs, seed=5)
    other_seed = scores_in_process(capsys, model_dirs, seed=6)
    assert set(first) == set(STOCHASTIC)
    for key in STOCHASTIC:
        assert first[key] == again[key], key
        np.testing.assert_array_equal(first[key], other_process[key], err_msg=key)
        assert first[key] != other_seed[key], f"{key} ignores its seed"

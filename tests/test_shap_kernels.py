"""shap's Partition explainer on the Python helpers (explainers/_shap_kernels.py) gives the numbers
its numba-compiled helpers give: Owen values of a model with interactions, computed here on the
Python helpers and in a fresh process on shap's own compiled ones."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
WORDS = [
    "the",
    "plot",
    ",",
    "if",
    "there",
    "is",
    "one",
    ",",
    "moves",
    "slowly",
    ";",
    "but",
    "the",
    "actors",
    "are",
    "wonderful",
    "and",
    "the",
    "ending",
    "surprises",
]


def _model(present: np.ndarray) -> np.ndarray:
    """Not additive: pairs of words interact, and a squashing makes every word's effect depend on the rest."""
    weights = np.linspace(-1.0, 1.5, present.shape[1])
    pairs = present[:, :-1] * present[:, 1:] * np.cos(np.arange(present.shape[1] - 1))
    return np.tanh(present @ weights * 0.3 + pairs.sum(1) * 0.5)


def owen_values(python_kernels: bool, max_evals: int) -> list[float]:
    import shap
    from shap.maskers._text import partition_tree

    from explainers.partition_shap import _WordMasker  # importing swaps nothing: only partition_explainer does

    masker = _WordMasker(partition_tree(WORDS, []), len(WORDS))
    if python_kernels:
        from explainers._shap_kernels import partition_explainer

        explainer = partition_explainer(_model, masker)
    else:
        explainer = shap.PartitionExplainer(_model, masker)
    np.random.seed(0)
    explanation = explainer(np.ones((1, len(WORDS))), max_evals=max_evals, batch_size=max_evals, silent=True)
    return [float(v) for v in explanation.values[0]] + [float(np.asarray(explanation.base_values).reshape(-1)[0])]


def test_python_helpers_give_the_compiled_helpers_values() -> None:
    budgets = (40, 500)
    code = f"import json; from tests.test_shap_kernels import owen_values; print(json.dumps([owen_values(False, b) for b in {budgets}]))"
    compiled = json.loads(
        subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True, text=True).stdout
    )
    python = [owen_values(True, b) for b in budgets]
    from explainers._shap_kernels import KERNELS

    for module_name, names in KERNELS:  # the helpers in shap's modules are now plain Python
        module = sys.modules[module_name]
        assert all(not hasattr(getattr(module, name), "py_func") for name in names)
    for from_numba, from_python in zip(compiled, python):
        np.testing.assert_allclose(from_python, from_numba, rtol=1e-12, atol=1e-12)
    # The small budget stops part way down the tree, the large one explores it fully: different values.
    assert np.abs(np.subtract(compiled[0], compiled[1])).max() > 1e-3

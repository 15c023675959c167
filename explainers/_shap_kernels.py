"""shap's Partition explainer without numba's per-process compile.

shap (0.51) runs four small helpers of its Partition explainer through numba's JIT: building the
masks of each node of the word tree (``_init_masks``, ``_rec_fill_masks``), carrying the scored
outputs over the evaluation order (``_build_fixed_single_output``) and pushing Owen values down
the tree (``lower_credit``). Compiling them took 5 to 6 s at the first Partition SHAP call of
every process (2 CPU cores), against 1.2-1.5 s for the whole explanation of a 20-word sentence
once compiled. numba's on-disk cache cannot keep them: the two recursive ones crash when loaded
back from it (a segmentation fault, numba 0.68), and the output builder takes shap's link
function as an argument, which numba does not cache.

Over a sentence's or a document's words these helpers walk a tree of at most a few thousand
nodes and a list of at most ``n_evals`` evaluations, milliseconds in plain Python. So
``use_python_kernels`` puts each helper's own Python function (numba keeps it as ``py_func``) in
its place in shap's modules; the Python functions call each other through those module names,
so the recursion stays in Python too. The output builder calls shap's link on every
evaluation, so ``partition_explainer`` gives the explainer the identity link's Python function
as well. The results are the same numbers (tests/test_shap_kernels.py compares both). Any helper
that is missing or not a numba function (another shap version) is left as it is, and then the
explainer keeps shap's own link.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from typing import Any

# (module, helper names) of shap's JIT-compiled Partition helpers.
KERNELS = (
    ("shap.utils._masked_model", ("_init_masks", "_rec_fill_masks", "_build_fixed_single_output")),
    ("shap.explainers._partition", ("lower_credit",)),
)

_lock = threading.Lock()
_swapped: bool | None = None  # None: not tried yet in this process


def use_python_kernels() -> bool:
    """Replace shap's JIT-compiled Partition helpers by their Python functions, once per process;
    True when every one of them was swapped."""
    global _swapped
    with _lock:
        if _swapped is None:
            swapped = 0
            for module_name, names in KERNELS:
                module = importlib.import_module(module_name)
                for name in names:
                    python_function = getattr(getattr(module, name, None), "py_func", None)
                    if python_function is not None:
                        setattr(module, name, python_function)
                        swapped += 1
            _swapped = swapped == sum(len(names) for _, names in KERNELS)
        return _swapped


def partition_explainer(model: Callable, masker: Any) -> Any:
    """shap's ``PartitionExplainer`` over ``model`` and ``masker``, on the Python helpers. shap
    linearizes any link other than its own identity object; the identity's Python function needs
    no linearizing, so it is switched off, which is what shap does for its identity."""
    import shap

    if not use_python_kernels():
        return shap.PartitionExplainer(model, masker)
    return shap.PartitionExplainer(model, masker, link=shap.links.identity.py_func, linearize_link=False)

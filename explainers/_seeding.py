"""Seeded randomness for the library explainers that draw from global generators.

Captum's ``NoiseTunnel`` and ``GradientShap`` draw their noise from torch's global generator and
their baselines and path points from numpy's; shap's Partition explainer breaks priority ties
with numpy's. ``seeded`` forks torch's generators (CPU and the classifier's CUDA device), seeds
both libraries with ``seed`` and puts numpy's global state back afterwards, so a run is
reproducible and the caller's random state is left as it was. numpy's global state is one per
process, so the block holds a process-wide lock: two seeded runs in two threads never interleave.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch

from core.classifier import Classifier
from explainers._masking import rng_devices

_GLOBAL_NUMPY = threading.Lock()


@contextmanager
def seeded(seed: int, clf: Classifier) -> Iterator[None]:
    with _GLOBAL_NUMPY, torch.random.fork_rng(devices=rng_devices(clf)):
        state = np.random.get_state()
        torch.manual_seed(seed)
        np.random.seed(seed)
        try:
            yield
        finally:
            np.random.set_state(state)

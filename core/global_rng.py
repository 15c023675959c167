"""torch's and numpy's process-wide random generators, seeded for a block under one lock.

Library code that draws from the global generators (Captum's noise and baselines, shap's ties,
KernelSHAP's coalitions, a transformers model's ``_init_weights``) is made reproducible by seeding
them for the block. Two threads (two app sessions) doing so at once would reseed each other's
generators mid-draw, so every such block in the process holds one lock.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np
import torch

_GLOBAL_RNG = threading.RLock()  # re-entrant: a seeded block may call code that seeds its own


@contextmanager
def seeded_globals(seed: int, cuda_devices: Sequence[int] = ()) -> Iterator[None]:
    """The block with torch's CPU generator (and those of ``cuda_devices``) and numpy's global
    one seeded with ``seed``; each is put back as it was afterwards. Without ``cuda_devices`` no
    CUDA generator is touched."""
    with _GLOBAL_RNG, torch.random.fork_rng(devices=list(cuda_devices)):
        state = np.random.get_state()
        torch.default_generator.manual_seed(seed)
        for device in cuda_devices:
            with torch.cuda.device(device):
                torch.cuda.manual_seed(seed)
        np.random.seed(seed)
        try:
            yield
        finally:
            np.random.set_state(state)

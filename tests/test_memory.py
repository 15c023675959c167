"""Memory stays bounded while a server switches between every bundled model and the masked LM:
the model caches have explicit sizes, so cycling through them again and again does not grow the
resident memory past what the first cycle needed (plus a small allowance)."""

from __future__ import annotations

import gc
import os

import pytest

import services
from core.datasets import split_words
from core.models import bundled_names
from core.types import Example

# Resident memory may grow by at most this much after the first full cycle (allocator noise).
ALLOWANCE_MB = 150
# The bound a server with every bundled model and the masked LM loaded stays under (recorded in
# BENCHMARKS.md, "Reliability").
BOUND_MB = 3000


def resident_mb() -> float:
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


@pytest.mark.slow
def test_switching_models_keeps_memory_bounded() -> None:
    classifiers = [c.name for c in services.model_choices() if c.name in bundled_names()]
    assert len(classifiers) >= 4
    example = Example(segments=(split_words("a fine and moving film"),))
    readings = []
    for _cycle in range(3):
        for name in classifiers:
            result = services.explain(name, example, ["loo_empty"]) if not services.model_info(name).pair else None
            assert result is None or result.attributions
            services.masked_lm(services.DEFAULT_MLM)
        gc.collect()
        readings.append(resident_mb())
    print(f"resident memory after each cycle (MB): {[round(r) for r in readings]}")
    assert readings[-1] - readings[0] < ALLOWANCE_MB, readings
    assert max(readings) < BOUND_MB, readings

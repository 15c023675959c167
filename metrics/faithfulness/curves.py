"""The mean of several faithfulness curves with its pointwise 95% interval (a slice's mean
deletion, insertion or bin curve; ``engine.slice_report.mean_curves``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from metrics.base import lie_within, mean_interval


def mean_curve(
    curves: Sequence[Sequence[tuple[float, float]]],
    n_points: int = 21,
    bounds: tuple[float, float] | None = None,
) -> dict[str, list[float]]:
    """Pointwise mean and 95% interval of several curves: on their shared x when they all have
    the same x (bins), else on ``n_points`` evenly spaced x by linear interpolation. ``bounds``
    is the range of the curves' y (a probability's [0, 1]), which each point's interval is cut
    to as ``metrics.base.mean_interval`` cuts it, unless a curve passes it somewhere (a regression
    head's score)."""
    curves = [c for c in curves if c]
    if not curves:
        return {"x": [], "mean": [], "low": [], "high": []}
    xs = [tuple(x for x, _ in c) for c in curves]
    grid = (
        np.asarray(xs[0])
        if all(x == xs[0] for x in xs)
        else np.linspace(min(x[0] for x in xs), max(x[-1] for x in xs), n_points)
    )
    ys = np.stack([np.interp(grid, [x for x, _ in c], [y for _, y in c]) for c in curves])  # (curves, points)
    if bounds is not None and not lie_within(ys, bounds):
        bounds = None
    stats = [mean_interval(ys[:, j], bounds=bounds) for j in range(len(grid))]
    return {
        "x": grid.tolist(),
        "mean": [s[0] for s in stats],
        "low": [s[1] for s in stats],
        "high": [s[2] for s in stats],
    }

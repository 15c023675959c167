"""Do the methods even agree? An annotated methods x methods matrix of rank agreement."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from core.numbers import fixed
from ui.charts import diverging_scale, style
from ui.theme import current

MEASURE_LABELS = {
    "spearman": "Spearman ρ (signed scores)",
    "spearman_abs": "Spearman ρ (absolute scores)",
    "kendall": "Kendall τ (signed scores)",
    "top_k_overlap": "top-k overlap (absolute scores)",
}


# The cells' numbers: one decimal, in a font no larger than this (px), and none past this many
# methods; a narrow column (1,024 px with the sidebar, the presentation font) drew "-0.51" over
# its neighbours. Hovering a cell gives two decimals.
CELL_FONT_PX, MOST_NUMBERED = 13, 12


def agreement_figure(names: Sequence[str], matrix: np.ndarray, measure: str, title: str = "") -> go.Figure:
    """The matrix as an annotated heatmap on the heatmaps' diverging palette (-1 blue, 0 white,
    1 red; overlap runs 0..1); undefined entries are blank and marked "n/a"."""
    low = 0.0 if measure == "top_k_overlap" else -1.0
    text = [["n/a" if not np.isfinite(v) else fixed(v, 2) for v in row] for row in matrix]
    shown = [["n/a" if not np.isfinite(v) else fixed(v, 1) for v in row] for row in matrix]
    figure = go.Figure(
        go.Heatmap(
            z=np.where(np.isfinite(matrix), matrix, None).tolist(),
            x=list(names),
            y=list(names),
            zmin=low,
            zmax=1.0,
            colorscale=diverging_scale(low),
            text=shown,
            texttemplate="%{text}" if len(names) <= MOST_NUMBERED else "",
            customdata=text,
            hovertemplate="%{y} vs %{x}: %{customdata}<extra></extra>",
            colorbar={"title": {"text": MEASURE_LABELS.get(measure, measure), "side": "right"}},
        )
    )
    size = 80 + 48 * len(names)
    figure.update_layout(
        title=title or None,
        height=max(260, size),
        margin={"l": 10, "r": 10, "t": 40 if title else 10, "b": 10},
        yaxis={"autorange": "reversed"},
    )
    style(figure).data[0].textfont.size = min(current().font_size or CELL_FONT_PX, CELL_FONT_PX)
    return figure

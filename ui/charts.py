"""Small plotly charts shared by the pages."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from ui.heatmap import NEGATIVE, POSITIVE


def probability_chart(
    label_names: Sequence[str], probabilities: Sequence[float], predicted: int, target: int
) -> go.Figure:
    """Horizontal bars of the class probabilities; the predicted class in the palette's red,
    the explained target (when another class) outlined."""
    muted = f"rgb{tuple(round(0.35 * c + 0.65 * 200) for c in NEGATIVE)}"
    colours = [f"rgb{POSITIVE}" if i == predicted else muted for i in range(len(label_names))]
    outline = [2.5 if i == target and i != predicted else 0 for i in range(len(label_names))]
    figure = go.Figure(
        go.Bar(
            x=list(probabilities),
            y=list(label_names),
            orientation="h",
            marker={"color": colours, "line": {"color": "#1b1b1b", "width": outline}},
            text=[f"{p:.1%}" for p in probabilities],
            textposition="auto",
            hovertemplate="%{y}: %{x:.4f}<extra></extra>",
        )
    )
    figure.update_layout(
        height=40 + 32 * len(label_names),
        margin={"l": 0, "r": 10, "t": 10, "b": 10},
        xaxis={"range": [0, 1], "tickformat": ".0%", "fixedrange": True},
        yaxis={"autorange": "reversed", "fixedrange": True},
        showlegend=False,
    )
    return figure

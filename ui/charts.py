"""Small plotly charts shared by the pages."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from ui.heatmap import NEGATIVE, POSITIVE


def probability_chart(
    label_names: Sequence[str],
    probabilities: Sequence[float],
    predicted: int,
    target: int,
    head: str = "single_label",
    threshold: float = 0.5,
) -> go.Figure:
    """Horizontal bars of the explained outputs (``core.heads``); the prediction in the palette's
    red (the predicted class, or every label at or above ``threshold`` of a multi-label head, with
    the threshold drawn), the explained target (when not predicted) outlined. A regression head's
    score is drawn on its own scale."""
    muted = f"rgb{tuple(round(0.35 * c + 0.65 * 200) for c in NEGATIVE)}"
    chosen = {i for i, p in enumerate(probabilities) if p >= threshold} if head == "multi_label" else {predicted}
    colours = [f"rgb{POSITIVE}" if i in chosen else muted for i in range(len(label_names))]
    outline = [2.5 if i == target and i not in chosen else 0 for i in range(len(label_names))]
    figure = go.Figure(
        go.Bar(
            x=list(probabilities),
            y=list(label_names),
            orientation="h",
            marker={"color": colours, "line": {"color": "#1b1b1b", "width": outline}},
            text=[f"{p:.4f}" if head == "regression" else f"{p:.1%}" for p in probabilities],
            textposition="auto",
            hovertemplate="%{y}: %{x:.4f}<extra></extra>",
        )
    )
    figure.update_layout(
        height=40 + 32 * len(label_names),
        margin={"l": 0, "r": 10, "t": 10, "b": 10},
        xaxis={"fixedrange": True}
        if head == "regression"
        else {"range": [0, 1], "tickformat": ".0%", "fixedrange": True},
        yaxis={"autorange": "reversed", "fixedrange": True},
        showlegend=False,
    )
    if head == "multi_label":
        figure.add_vline(x=threshold, line_dash="dot", line_color="#1b1b1b")
    return figure

"""The one plotly styling every chart builder ends with, and the small charts shared by the pages.

``style(figure)`` puts the current theme (``ui.theme``) on a figure: its title size always and,
in the presentation setting, a template (thicker lines, larger markers, the theme's colours as
the colorway) plus the larger type on every text of the figure itself. The type goes on the
figure, not in the template, because on screen Streamlit's chart theme puts its own font sizes
into a figure's template; the figure's own settings win over it (tests/test_browser_teaching.py
reads 18 px off the page). Colours are the builders' own, taken from ``current()``.
"""

from __future__ import annotations

import html
import textwrap
from collections.abc import Sequence

import plotly.graph_objects as go
import plotly.io as pio

import services
from core.types import DEFAULT_THRESHOLD
from ui.theme import Theme, current


def template(theme: Theme) -> go.layout.Template:
    """The theme's trace defaults and colorway (traces that set their own keep them)."""
    return go.layout.Template(
        data={
            "scatter": [go.Scatter(line={"width": theme.line_width}, marker={"size": theme.marker_size})],
            "box": [go.Box(line={"width": theme.line_width})],
        },
        layout={"colorway": list(theme.series)},
    )


def style(figure: go.Figure) -> go.Figure:
    """``figure`` in the current theme (changed in place and returned)."""
    theme = current()
    figure.update_layout(title_font_size=theme.title_size)
    if theme.font_size is None:
        return figure
    size = theme.font_size
    figure.update_layout(
        template=pio.templates.merge_templates(figure.layout.template, template(theme)),
        font_size=size,
        legend_font_size=size,
        hoverlabel_font_size=size,
    )
    figure.update_xaxes(tickfont_size=size, title_font_size=size)
    figure.update_yaxes(tickfont_size=size, title_font_size=size)
    figure.update_annotations(font_size=size)
    for trace in figure.data:
        if "textfont" in trace:
            trace.textfont.size = size
        if "colorbar" in trace:
            trace.colorbar.update(tickfont_size=size, title_font_size=size)
    return figure


def curve_layout(figure: go.Figure, title: str, x_title: str, y_title: str, x_format: str = "") -> go.Figure:
    """A curve's layout; a title's tail in parentheses goes on a second, smaller line (at the
    presentation font, half the page's width holds about 20 characters of a title)."""
    main, _, tail = title.partition(" (")
    theme = current()
    size = theme.title_size
    subtitle = {"text": tail.removesuffix(")"), "font": {"size": round(0.7 * size)}} if tail else {}
    top = round((3.2 if tail else 2) * size) + 10
    figure.update_layout(
        title={"text": main, "subtitle": subtitle},
        margin={"l": 10, "r": 10, "t": top, "b": 10},
        xaxis={"title": x_title, "tickformat": x_format},
        yaxis={"title": y_title},
        hoverlabel={"align": "left"},
    )
    legend_under_axis(figure, 24 * size, top)  # 360 px; taller at the presentation font
    return style(figure)


def legend_under_axis(figure: go.Figure, height: int, top: int) -> go.Figure:
    """A horizontal legend under the x axis's ticks and title, the figure ``height`` px high (more
    where the plot would get shorter than 10 title sizes) with a top margin of ``top`` px.

    A legend's top is given as a share of the plot's height, and the legend pushes the bottom
    margin down to fit, so the more entries, the shorter the plot and the nearer the legend came
    to the axis (from 5 entries on a half-width chart it ran over the axis title). The share is
    taken of the plot's height with every entry on a line of its own (a narrow chart). The room
    counts the ticks level, so a share axis (a tick format ending in ``%``) gets at most 4 ticks:
    six labels ("10%") did not fit the 131 px of a slice view's curve at 1,024 px at the
    presentation font, and plotly stood them upright, which ran the legend over the axis title."""
    if (figure.layout.xaxis.tickformat or "").endswith("%"):
        figure.update_xaxes(nticks=4)
    theme = current()
    text = theme.font_size or 14
    lines = sum(1 + (trace.name or "").count("<br>") for trace in figure.data if trace.showlegend is not False)
    axis = round(4.5 * text)  # tick labels, axis title and a gap
    legend = lines * round(1.5 * text) + 8
    height = max(height, top + 10 + axis + legend + 10 * theme.title_size)
    figure.update_layout(height=height, legend={"orientation": "h", "y": -axis / (height - top - 10 - axis - legend)})
    return figure


def legend_name(name: str, value: float) -> str:
    """A legend entry ``name (value)``, escaped; where one line would run past a narrow chart (two
    side by side at 1,024 px with the sidebar open, at the presentation font: "integrated_gradients
    (0.244" was cut) the value goes on a line of its own and a long name is wrapped."""
    chars = round(360 / (current().font_size or 12))  # 20 characters at the presentation font, 30 otherwise
    text = f"{name} ({value:.3f})"
    if len(text) <= chars:
        return html.escape(text, quote=False)
    lines = [*textwrap.wrap(name, chars), f"({value:.3f})"]
    return "<br>".join(html.escape(line, quote=False) for line in lines)


def band_trace(
    x: Sequence[float],
    low: Sequence[float],
    high: Sequence[float],
    line: str,
    group: str,
    bounds: tuple[float, float] | None = None,
    alpha: float = 0.15,
) -> go.Scatter:
    """The shaded 95% band from ``low`` to ``high`` around a line of colour ``line`` (``#rrggbb``),
    in the line's legend group. With ``bounds`` the band is drawn clipped to the quantity's range:
    a t-interval over two or three seeds easily runs past an accuracy of 0 or 1, and a band there
    reads as nonsense (the tables and hovers keep the interval itself)."""
    if bounds is not None:
        lowest, highest = bounds
        low = [min(highest, max(lowest, v)) for v in low]
        high = [min(highest, max(lowest, v)) for v in high]
    r, g, b = (int(line[i : i + 2], 16) for i in (1, 3, 5))
    return go.Scatter(
        x=list(x) + list(x)[::-1],
        y=list(high) + list(low)[::-1],
        mode="lines",  # plotly's default marks every point of a short trace: the band's corners
        fill="toself",
        fillcolor=f"rgba({r},{g},{b},{alpha})",
        line={"width": 0},
        hoverinfo="skip",
        showlegend=False,
        legendgroup=group,
    )


def diverging_scale(low: float) -> list[list[float | str]]:
    """A plotly colour scale on the theme's heatmap palette: negative, neutral, positive from
    ``low`` = -1 to 1, or neutral to positive from ``low`` = 0."""
    theme = current()
    if low == 0.0:
        return [[0.0, theme.rgb("neutral")], [1.0, theme.rgb("positive")]]
    return [[0.0, theme.rgb("negative")], [0.5, theme.rgb("neutral")], [1.0, theme.rgb("positive")]]


def probability_chart(
    label_names: Sequence[str],
    probabilities: Sequence[float],
    predicted: int,
    target: int,
    head: str = "single_label",
    threshold: float = DEFAULT_THRESHOLD,
) -> go.Figure:
    """Horizontal bars of the explained outputs (``core.heads``); the prediction in the palette's
    red (the predicted class, or every label at or above ``threshold`` of a multi-label head, with
    the threshold drawn), the explained target (when not predicted) outlined. A regression head's
    score is drawn on its own scale."""
    theme = current()
    muted = f"rgb{tuple(round(0.35 * c + 0.65 * 200) for c in theme.colours.negative)}"
    chosen = set(services.label_set(head, probabilities, threshold)) if head == "multi_label" else {predicted}
    colours = [theme.rgb("positive") if i in chosen else muted for i in range(len(label_names))]
    outline = [2.5 if i == target and i not in chosen else 0 for i in range(len(label_names))]
    figure = go.Figure(
        go.Bar(
            x=list(probabilities),
            y=[html.escape(name, quote=False) for name in label_names],  # a config's names, not plotly's HTML
            orientation="h",
            marker={"color": colours, "line": {"color": theme.ink, "width": outline}},
            text=[f"{p:.4f}" if head == "regression" else f"{p:.1%}" for p in probabilities],
            textposition="auto",
            hovertemplate="%{y}: %{x:.4f}<extra></extra>",
        )
    )
    figure.update_layout(
        height=40 + 32 * len(label_names),
        margin={"l": 0, "r": 28, "t": 10, "b": 10},  # room for the 100% label at the right end
        xaxis={"fixedrange": True}
        if head == "regression"
        else {
            "range": [0, 1],
            "tickvals": [0, 0.25, 0.5, 0.75, 1],
            "ticklabeloverflow": "allow",
            "tickformat": ".0%",
            "fixedrange": True,
        },
        yaxis={"autorange": "reversed", "fixedrange": True},
        showlegend=False,
    )
    if head == "multi_label":
        figure.add_vline(x=threshold, line_dash="dot", line_color=theme.ink)
    return style(figure)

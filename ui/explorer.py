"""Figures of the dataset explorer: metric distributions per method, mean curves with 95% bands,
the correct/wrong filter of its table and one stored
example's heatmap."""

from __future__ import annotations

import html

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import services
from ui import sidebar
from ui.charts import band_trace, curve_layout, legend_name, style
from ui.heatmap import heatmap_html
from ui.theme import current
from ui.uploads import session_uploads

FILTERS = ("all", "correct", "wrong")  # the examples the table shows


@st.fragment(run_every=2.0)
def waiting_for_run(run_id: str) -> None:
    """The wait between a run's start and its first catalogue entry (its process loads the model
    first), checked every two seconds: the whole page reruns once the entry is there, and the end
    of the log shows if the process stopped before writing it."""
    if run_id in set(services.runs.catalogue(session_uploads()).get("run_id", ())):
        st.rerun(scope="app")
    failure = services.background.early_failure(run_id, wait_s=0)
    if failure is not None:
        st.session_state.pop("explorer.starting", None)
        st.error(f"Run `{run_id}` stopped before it stored anything; the end of its log:")
        st.code(failure, language=None)
        return
    st.info(f"Run `{run_id}` is starting: its process loads the model, then the run shows here with its progress.")


def graded(table: pd.DataFrame) -> bool:
    """Whether the table's examples can be filtered as correct or wrong: a single-label head's
    class against the gold label, where the split has gold labels."""
    return "correct" in table.columns and bool(table["correct"].notna().any())


def filtered(table: pd.DataFrame, show: str | None) -> pd.DataFrame:
    """The rows of ``table`` that ``show`` (one of ``FILTERS``; None: all) keeps."""
    return table if show in (None, "all") else table[table["correct"] == (show == "correct")]


def clicked_position(key: str, rows: list[int], positions: list[int]) -> int | None:
    """The example of the row just clicked in the table ``key`` (``rows``: its selection, indices
    into ``positions``), or None: a selection is applied once, when it changes (Streamlit keeps it
    over reruns, which would undo every later pick of the Example box), and one past the end of
    the table shown (a row of a longer table) is ignored."""
    now = (key, tuple(rows))
    if st.session_state.get("explorer.applied") == now:
        return None
    st.session_state["explorer.applied"] = now
    if rows and 0 <= rows[0] < len(positions):
        return int(positions[rows[0]])
    return None


def stored_example(run_id: str, info, position: int) -> None:
    """A stored example's heatmap with its run's own scores (nothing recomputed) and the button
    that opens it on the heatmap page; ``info`` is the run's catalogue entry."""
    stored = services.runs.stored_heatmap(run_id, position)
    example = stored.prediction.example
    st.markdown(f"**Example {position}**: the scores stored by `{run_id}` (nothing recomputed)")
    st.html(heatmap_html(example.words, example.segment_ids, stored.attributions, rationale=example.rationale))
    index = services.runs.dataset_index(info, position)
    if st.button(
        "Open on the heatmap page", key="explorer.open", on_click=_open_on_heatmaps,
        args=(run_id, info, position, index, list(stored.attributions)), disabled=index is None,
        help="Imported from the file's own text: not a dataset example" if index is None else None,
    ):  # fmt: skip
        st.switch_page("app_pages/heatmaps.py")


def _open_on_heatmaps(run_id: str, info, position: int, index: int, methods: list[str]) -> None:
    """Point the sidebar at the example, explained as the run explained it (its head, the config's
    or an override, and its autocast), so the page shows the stored scores (a callback: it runs
    before the widgets of the next run)."""
    sidebar.select_example(info.model, info.dataset, info.split, index)
    st.session_state["sidebar.head_type"] = info.selection.get("head_type") or "config"  # "config": the config's
    st.session_state["sidebar.autocast"] = info.selection.get("autocast") or "float32"  # float32: none
    st.session_state["heatmaps.stored"] = (run_id, position)
    known = {m.key for m in services.methods()}
    st.session_state["heatmaps.methods"] = [m for m in methods if m in known]


def distribution_figure(values: pd.DataFrame, metric: str) -> go.Figure:
    """One box (with the points) per method of ``values`` (columns method, value)."""
    theme = current()
    figure = go.Figure()
    for index, (method, group) in enumerate(values.groupby("method", sort=False)):
        figure.add_trace(
            go.Box(
                y=group["value"],
                name=method,
                boxpoints="outliers",
                marker_color=theme.method_colour(method, index),
                boxmean=True,
                hovertemplate=f"<b>{html.escape(method)}</b><br>%{{y:.3f}}<extra></extra>",
            )
        )
    figure.update_layout(
        title={"text": f"{metric} per example"},
        height=380,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        showlegend=False,
    )
    return style(figure)


STEP_AXIS = "step / steps (share of the budget)"
# (x axis, y axis, x tick format) of each faithfulness metric's curve, one example or a mean, for
# a head whose output is a probability (p)
CURVE_AXES = {
    "deletion": (STEP_AXIS, "p(target)", ""),
    "insertion": (STEP_AXIS, "p(target)", ""),
    "comprehensiveness": ("top words removed", "p(x) − p(x without them)", ".0%"),
    "sufficiency": ("top words kept", "p(x) − p(only them)", ".0%"),
}
# the y axis for a regression head, whose curves are of its raw score f
REGRESSION_Y = {
    "deletion": "score",
    "insertion": "score",
    "comprehensiveness": "f(x) − f(x without them)",
    "sufficiency": "f(x) − f(only them)",
}


def curve_axes(metric: str, head: str = "single_label") -> tuple[str, str, str]:
    """(x axis, y axis, x tick format) of ``metric``'s curve for a head of kind ``head``
    (``core.heads``): a regression head's curves are of its score, not a probability."""
    x_title, y_title, x_format = CURVE_AXES.get(metric, ("x", metric, ""))
    if head == "regression":
        y_title = REGRESSION_Y.get(metric, y_title)
    return x_title, y_title, x_format


def mean_curve_figure(
    curves: dict[str, dict[str, dict[str, list[float]]]],
    metric: str,
    summary: dict | None = None,
    head: str = "single_label",
    title: str = "",
) -> go.Figure:
    """The mean ``metric`` curve of every method with its 95% band
    (``engine.slice_report.mean_curves``); with ``summary`` (``[method][metric]`` ->
    ``metrics.base.Summary``) each legend entry shows the method's mean value and each point its
    band on hover; the bands come cut to a probability's range. ``head`` (``core.heads``) names
    the explained output, a regression head's score or a probability, for the y axis. ``title``:
    by default "mean <metric> curve (95% band)", its tail in parentheses on a line of its own
    (``ui.charts.curve_layout``)."""
    theme = current()
    figure = go.Figure()
    for index, (method, per) in enumerate(curves.items()):
        curve = per.get(metric)
        if not curve:
            continue
        line = theme.method_colour(method, index)
        figure.add_trace(band_trace(curve["x"], curve["low"], curve["high"], line, method))
        name, hover, band = method, f"<b>{html.escape(method)}</b><br>%{{y:.3f}}<extra></extra>", None
        if summary is not None:
            name = legend_name(method, summary[method][metric].mean)
            band = list(zip(curve["low"], curve["high"], strict=True))
            hover = (
                f"<b>{html.escape(method)}</b><br>mean %{{y:.3f}} "
                "[%{customdata[0]:.3f}, %{customdata[1]:.3f}]<extra></extra>"
            )
        figure.add_trace(
            go.Scatter(
                x=curve["x"],
                y=curve["mean"],
                mode="lines",
                name=name,
                legendgroup=method,
                line={"color": line, "dash": "dash" if method == "random" else "solid"},
                customdata=band,
                hovertemplate=hover,
            )
        )
    return curve_layout(figure, title or f"mean {metric} curve (95% band)", *curve_axes(metric, head))

"""Faithfulness: remove the words a method ranks highest and watch the prediction.

Deletion and insertion curves (Arras et al. 2017; paper 000's Deletion and Deletion_BERT),
comprehensiveness and sufficiency (ERASER, DeYoung et al. 2020; MaRC's 19 bins, paper 003) and
log-odds (AML, paper 004). Three views: the curves of one example, the mean curves and a method x
metric table over a dataset slice, and two removal modes side by side (paper 000, Table 1), which
shows when the ranking of the methods changes with the way words are removed.
"""

from __future__ import annotations

import html
import textwrap

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import services
from ui import state
from ui.params import methods_params_form, params_form
from ui.runs import requested, run_or_stop

DEFAULT_METHODS = ("loo_empty", "saliency", "integrated_gradients", "attention_rollout", "random")
REMOVALS = {
    "delete": "delete the words",
    "mask": "[MASK]",
    "unk": "[UNK]",
    "pad": "[PAD]",
    "mlm": "masked-LM fill-in (Deletion_BERT)",
}
BINS = {"eraser": "ERASER {1, 5, 10, 20, 50}%", "marc": "MaRC 5%, 10%, …, 95%"}
metric_infos = {m.key: m for m in services.metric_infos("faithfulness")}
TABLE_METRICS = tuple(k for k, m in metric_infos.items() if m.in_table)
LABELS = {k: m.label for k, m in metric_infos.items()}
VIEWS = ("This example", "Dataset slice", "Removal modes compared")
# Okabe-Ito, colour-blind safe; the random baseline is always grey and dashed.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")
RANDOM_COLOUR = "#8c8c8c"
BEST_STYLE = "font-weight:700;background-color:rgba(0,158,115,0.22)"


# --------------------------------------------------------------------------- helpers


def arrow(key: str) -> str:
    return "↑" if metric_infos[key].higher_is_better else "↓"


def column_name(key: str) -> str:
    return f"{LABELS.get(key, key)} {arrow(key)}"


def colour(method: str, index: int) -> str:
    return RANDOM_COLOUR if method == "random" else PALETTE[index % len(PALETTE)]


def rgba(hex_colour: str, alpha: float) -> str:
    r, g, b = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def hover_text(text: str, width: int = 70, lines: int = 8) -> str:
    """An input shown on hover: escaped, wrapped, at most ``lines`` lines."""
    wrapped = textwrap.wrap(text, width) or ["(empty input)"]
    if len(wrapped) > lines:
        wrapped = wrapped[:lines] + ["…"]
    return "<br>".join(html.escape(line) for line in wrapped)


def best_styles(shown: pd.DataFrame, numbers: dict[str, pd.Series]) -> pd.DataFrame:
    """CSS for the cells of ``shown``: in each column named after a metric (``numbers`` maps the
    column to the metric's values), the best value by the metric's direction is highlighted."""
    styles = pd.DataFrame("", index=shown.index, columns=shown.columns)
    for column, (key, values) in numbers.items():
        values = pd.to_numeric(values, errors="coerce")
        if values.notna().any():
            best = values.max() if metric_infos[key].higher_is_better else values.min()
            styles.loc[values == best, column] = BEST_STYLE
    return styles


def layout(figure: go.Figure, title: str, x_title: str, y_title: str, x_format: str = "") -> go.Figure:
    figure.update_layout(
        title={"text": title, "font": {"size": 15}},
        height=360,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        xaxis={"title": x_title, "tickformat": x_format},
        yaxis={"title": y_title},
        legend={"orientation": "h", "y": -0.25},
        hoverlabel={"align": "left"},
    )
    return figure


# --------------------------------------------------------------------------- one example


def example_curve(runs: dict[str, services.MetricsRun], key: str, n_words: int) -> go.Figure:
    """One metric's curve per method, overlaid; hovering a point shows the input at that step."""
    figure = go.Figure()
    for index, (method, run) in enumerate(runs.items()):
        result = run.results.get(key)
        if result is None or not result.curve:
            continue
        x, y = zip(*result.curve)
        if key in ("deletion", "insertion"):
            counts = [round(f * n_words) for f in result.extras["fraction_removed"]]
            notes = [f"{c} of {n_words} words removed" for c in counts]
        else:
            verb = "kept" if key == "sufficiency" else "removed"
            notes = [f"top {c} of {n_words} words {verb}" for c in result.extras["counts"]]
        custom = [[hover_text(text), note] for text, note in zip(result.extras["inputs"], notes)]
        figure.add_trace(
            go.Scatter(
                x=x,
                y=y,
                mode="lines+markers",
                name=f"{method} ({result.value:.3f})",
                line={"color": colour(method, index), "dash": "dash" if method == "random" else "solid"},
                customdata=custom,
                hovertemplate=f"<b>{html.escape(method)}</b> · %{{customdata[1]}}<br>"
                "value %{y:.3f}<br>%{customdata[0]}<extra></extra>",
            )
        )
    return figure


def example_view(selection: state.Selection, methods: list[str], metric_params: dict, method_params: dict) -> None:
    result = run_or_stop(
        services.faithfulness,
        selection.model,
        selection.example,
        methods,
        metric_params,
        target=selection.target,
        method_params=method_params,
        mlm_name=selection.mlm,
    )
    for key, message in result.errors.items():
        st.error(f"{key}: {message}")
    prediction = result.heatmap.prediction
    n_words = len(prediction.example.words)
    target = result.heatmap.target
    st.markdown(
        f"Explaining **{html.escape(prediction.label_names[target])}**: "
        f"p = {prediction.probabilities[target]:.3f} on the whole input of {n_words} words. "
        "Hover a point to see the input at that step."
    )
    if prediction.dropped_words:
        st.warning(f"The last {prediction.dropped_words} words do not fit the model and are left out.")
    runs = result.runs
    left, right = st.columns(2)
    x_title = "step / steps (share of the budget)"
    left.plotly_chart(
        layout(example_curve(runs, "deletion", n_words), "Deletion (lower area is better)", x_title, "p(target)"),
        key="faithfulness.example.deletion",
    )
    right.plotly_chart(
        layout(example_curve(runs, "insertion", n_words), "Insertion (higher area is better)", x_title, "p(target)"),
        key="faithfulness.example.insertion",
    )
    left, right = st.columns(2)
    left.plotly_chart(
        layout(
            example_curve(runs, "comprehensiveness", n_words),
            "Comprehensiveness per bin (higher is better)",
            "top words removed",
            "p(x) − p(x without them)",
            ".0%",
        ),
        key="faithfulness.example.comprehensiveness",
    )
    right.plotly_chart(
        layout(
            example_curve(runs, "sufficiency", n_words),
            "Sufficiency per bin (lower is better)",
            "top words kept",
            "p(x) − p(only them)",
            ".0%",
        ),
        key="faithfulness.example.sufficiency",
    )
    st.subheader("Scores")
    values = {m: {k: r.results[k].value for k in TABLE_METRICS if k in r.results} for m, r in runs.items()}
    numbers = pd.DataFrame.from_dict(values, orient="index").reindex(columns=list(TABLE_METRICS))
    table = numbers.rename(columns=column_name)
    table["attribution s"] = [result.heatmap.attributions[m].runtime_s for m in runs]
    table["attribution passes"] = [result.heatmap.attributions[m].forward_passes for m in runs]
    table["metric passes"] = [r.forward_passes for r in runs.values()]
    table["metric s"] = [r.runtime_s for r in runs.values()]
    best = {column_name(k): (k, numbers[k]) for k in TABLE_METRICS}
    styled = table.style.apply(lambda _: best_styles(table, best), axis=None).format(precision=3, na_rep="—")
    st.dataframe(styled, key="faithfulness.example.table")
    st.caption(
        "Best value per column highlighted; ↑ higher is better, ↓ lower is better. Areas use x = step / steps, "
        "so they are the mean probability along the curve. Metric passes are the distinct inputs scored in "
        "one batch per method (cached: changing the budget or removal recomputes only the metrics)."
    )


# --------------------------------------------------------------------------- dataset slice


def slice_controls(selection: state.Selection) -> tuple[int, bool, int, bool] | None:
    if selection.dataset is None:
        st.info("Pick a dataset and split in the sidebar to evaluate a slice of it.")
        return None
    size = services.dataset_size(selection.dataset, selection.split)
    first, second, third, fourth = st.columns([2, 2, 2, 2], vertical_alignment="bottom")
    n = int(first.number_input(f"Examples (1–{size})", 1, size, min(20, size), key="faithfulness.slice_n"))
    random_order = second.radio("Which", ("first N", "random N"), horizontal=True, key="faithfulness.slice_order")
    seed = int(third.number_input("Seed", 0, 2**31 - 1, 0, key="faithfulness.slice_seed"))
    pressed = fourth.button("Run on the slice", type="primary", key="faithfulness.slice_run")
    return n, random_order == "random N", seed, pressed


def run_slice(selection: state.Selection, examples, methods, metric_params, method_params) -> services.SliceResult:
    result = run_or_stop(
        services.evaluate_slice,
        selection.model,
        examples,
        methods,
        metric_params,
        method_params=method_params,
        mlm_name=selection.mlm,
    )
    for method, message in result.errors.items():
        st.error(f"{method}: {message}")
    return result


def mean_curve_figure(result: services.SliceResult, key: str) -> go.Figure:
    """Mean curve per method with its 95% band."""
    figure = go.Figure()
    for index, (method, per) in enumerate(result.mean_curves.items()):
        curve = per.get(key)
        if not curve:
            continue
        line = colour(method, index)
        figure.add_trace(
            go.Scatter(
                x=curve["x"] + curve["x"][::-1],
                y=curve["high"] + curve["low"][::-1],
                fill="toself",
                fillcolor=rgba(line, 0.15),
                line={"width": 0},
                hoverinfo="skip",
                showlegend=False,
                legendgroup=method,
            )
        )
        summary = result.summary[method][key]
        figure.add_trace(
            go.Scatter(
                x=curve["x"],
                y=curve["mean"],
                mode="lines",
                name=f"{method} ({summary.mean:.3f})",
                legendgroup=method,
                line={"color": line, "dash": "dash" if method == "random" else "solid"},
                customdata=list(zip(curve["low"], curve["high"])),
                hovertemplate=f"<b>{html.escape(method)}</b><br>mean %{{y:.3f}} "
                "[%{customdata[0]:.3f}, %{customdata[1]:.3f}]<extra></extra>",
            )
        )
    return figure


def summary_table(result: services.SliceResult, keys: list[str]) -> None:
    numbers = pd.DataFrame(
        {k: [result.summary[m][k].mean for m in result.summary] for k in keys}, index=list(result.summary)
    )
    text = pd.DataFrame(
        {
            column_name(k): [
                f"{s.mean:.3f} [{s.low:.3f}, {s.high:.3f}]" if s.n else "—"
                for s in (result.summary[m][k] for m in result.summary)
            ]
            for k in keys
        },
        index=list(result.summary),
    )
    text["n"] = [max(result.summary[m][k].n for k in keys) for m in result.summary]
    best = {column_name(k): (k, numbers[k]) for k in keys}
    styled = text.style.apply(lambda _: best_styles(text, best), axis=None)
    st.dataframe(styled, key="faithfulness.slice.table")
    st.caption("Mean [95% interval] over the slice; best mean per column highlighted; ↑ higher / ↓ lower is better.")


def slice_view(selection: state.Selection, methods: list[str], metric_params: dict, method_params: dict) -> None:
    controls = slice_controls(selection)
    if controls is None:
        return
    n, random_order, seed, pressed = controls
    request = {
        "model": selection.model,
        "data": [selection.dataset, selection.split, n, random_order, seed],
        "methods": methods,
        "metrics": metric_params,
        "method_params": method_params,
        "mlm": selection.mlm,
    }
    if not requested("faithfulness.slice_request", request, pressed):
        return
    examples = services.slice_examples(selection.dataset, selection.split, n, random_order=random_order, seed=seed)
    result = run_slice(selection, examples, methods, metric_params, method_params)
    st.caption(
        f"{len(examples)} examples of {selection.dataset}/{selection.split}, each explaining its predicted class · "
        f"{result.runtime_s:.1f} s · {result.forward_passes} forward passes for the metrics"
    )
    left, right = st.columns(2)
    x_title = "step / steps (share of the budget)"
    left.plotly_chart(
        layout(mean_curve_figure(result, "deletion"), "Mean deletion curve (95% band)", x_title, "p(target)"),
        key="faithfulness.slice.deletion",
    )
    right.plotly_chart(
        layout(mean_curve_figure(result, "insertion"), "Mean insertion curve (95% band)", x_title, "p(target)"),
        key="faithfulness.slice.insertion",
    )
    left, right = st.columns(2)
    left.plotly_chart(
        layout(mean_curve_figure(result, "comprehensiveness"), "Comprehensiveness per bin", "top words removed",
               "mean drop", ".0%"),
        key="faithfulness.slice.comprehensiveness",
    )  # fmt: skip
    right.plotly_chart(
        layout(mean_curve_figure(result, "sufficiency"), "Sufficiency per bin", "top words kept", "mean drop", ".0%"),
        key="faithfulness.slice.sufficiency",
    )
    summary_table(result, list(TABLE_METRICS))


# --------------------------------------------------------------------------- removal modes compared


def ranks(result: services.SliceResult, key: str) -> dict[str, int]:
    """1 = best mean under the metric's direction (methods without a value rank last)."""
    means = {m: result.summary[m][key].mean for m in result.summary if result.summary[m][key].n}
    ordered = sorted(means, key=lambda m: -means[m] if metric_infos[key].higher_is_better else means[m])
    return {m: i + 1 for i, m in enumerate(ordered)}


def compare_view(selection: state.Selection, methods: list[str], metric_params: dict, method_params: dict) -> None:
    st.caption(
        "Paper 000 (Table 1) shows that the verdict depends on how words are removed: a method that wins when "
        "removed words are replaced by a masked LM's fill-ins can lose when they are deleted."
    )
    if not {"im", "loo_empty"} <= set(methods):

        def add_paper_pair() -> None:
            chosen = st.session_state.get("faithfulness.methods", [])
            st.session_state["faithfulness.methods"] = list(dict.fromkeys([*chosen, "loo_empty", "im"]))

        st.button(
            "Add loo_empty and im (the pair paper 000 compares)",
            on_click=add_paper_pair,
            key="faithfulness.compare_add_im",
            help="Paper 000's Table 1: leave-one-out wins under deletion, IM under masked-LM deletion.",
        )
    first, second, third = st.columns(3)
    key = first.selectbox("Metric", TABLE_METRICS, format_func=column_name, key="faithfulness.compare_metric")
    mode_a = second.selectbox("Removal A", list(REMOVALS), format_func=REMOVALS.get, key="faithfulness.compare_a")
    mode_b = third.selectbox(
        "Removal B", list(REMOVALS), index=4, format_func=REMOVALS.get, key="faithfulness.compare_b"
    )
    controls = slice_controls(selection)
    if controls is None:
        return
    n, random_order, seed, pressed = controls
    params_a = {key: {**metric_params[key], "removal": mode_a}}
    params_b = {key: {**metric_params[key], "removal": mode_b}}
    request = {
        "model": selection.model,
        "data": [selection.dataset, selection.split, n, random_order, seed],
        "methods": methods,
        "metrics": [params_a, params_b],
        "method_params": method_params,
        "mlm": selection.mlm,
    }
    if not requested("faithfulness.compare_request", request, pressed):
        return
    examples = services.slice_examples(selection.dataset, selection.split, n, random_order=random_order, seed=seed)
    result_a = run_slice(selection, examples, methods, params_a, method_params)
    result_b = run_slice(selection, examples, methods, params_b, method_params)
    rank_a, rank_b = ranks(result_a, key), ranks(result_b, key)
    name_a, name_b = f"{LABELS[key]} · {mode_a}", f"{LABELS[key]} · {mode_b}"
    rows = {
        m: {
            name_a: result_a.summary[m][key].mean,
            f"rank ({mode_a})": rank_a.get(m),
            name_b: result_b.summary[m][key].mean,
            f"rank ({mode_b})": rank_b.get(m),
            "rank change": (rank_b[m] - rank_a[m]) if m in rank_a and m in rank_b else None,
        }
        for m in methods
    }
    frame = pd.DataFrame.from_dict(rows, orient="index")
    changed = frame["rank change"].fillna(0) != 0

    def style(_: pd.DataFrame) -> pd.DataFrame:
        styles = pd.DataFrame("", index=frame.index, columns=frame.columns)
        styles.loc[changed, "rank change"] = "font-weight:700;color:#D55E00"
        for name, ranking in ((name_a, rank_a), (name_b, rank_b)):
            best = [m for m, r in ranking.items() if r == 1]
            styles.loc[best, name] = BEST_STYLE
        return styles

    st.dataframe(frame.style.apply(style, axis=None).format(precision=3, na_rep="—"), key="faithfulness.compare.table")
    st.caption(
        f"{LABELS[key]}: {'higher' if metric_infos[key].higher_is_better else 'lower'} is better; rank 1 = best."
    )
    flips = [f"{m}: {rank_a[m]} → {rank_b[m]}" for m in frame.index[changed]]
    if flips:
        st.warning("The ranking changes with the removal: " + "; ".join(flips))
    else:
        st.success("The ranking of the methods is the same under both removals.")
    figure = go.Figure()
    for index, method in enumerate(m for m in methods if m in rank_a and m in rank_b):
        figure.add_trace(
            go.Scatter(
                x=[mode_a, mode_b],
                y=[rank_a[method], rank_b[method]],
                mode="lines+markers+text",
                text=[method, method],
                textposition=["middle left", "middle right"],
                name=method,
                line={"color": colour(method, index), "dash": "dash" if method == "random" else "solid"},
                hovertemplate=f"<b>{html.escape(method)}</b>: rank %{{y}}<extra></extra>",
            )
        )
    figure.update_yaxes(autorange="reversed", dtick=1)
    st.plotly_chart(
        layout(figure, "Rank of each method under the two removals", "removal", "rank (1 = best)"),
        key="faithfulness.compare.ranks",
    )


# --------------------------------------------------------------------------- page

selection = state.current()
st.title("Faithfulness")
st.caption(
    "Remove the words a method ranks highest and watch the probability of the explained class: it should "
    "fall fast (deletion, comprehensiveness) and the top words alone should keep it (insertion, sufficiency). "
    "The random baseline is computed with the same code."
)
if selection.error:
    st.error(selection.error)
    st.stop()

infos = {m.key: m for m in services.methods()}
view = st.segmented_control("View", VIEWS, default=VIEWS[0], key="faithfulness.view") or VIEWS[0]
methods = st.multiselect(
    "Methods",
    list(infos),
    default=[k for k in DEFAULT_METHODS if k in infos],
    format_func=lambda k: f"{k} — {infos[k].description}",
    key="faithfulness.methods",
    placeholder="Choose attribution methods",
)
first, second, third = st.columns(3)
removal = first.selectbox(
    "Removal",
    list(REMOVALS),
    format_func=REMOVALS.get,
    key="faithfulness.removal",
    help="How a removed word is taken away. The masked-LM fill-in uses the sidebar's masked LM and never puts the "
    "original word back.",
)
budget = second.slider(
    "Deletion / insertion budget (% of words)",
    5,
    100,
    20,
    step=5,
    key="faithfulness.budget",
    help="Paper 000 removes 20% of the words; 100% draws the full curve. k% of n words is ceil(k·n), at least one.",
)
bins = third.radio("Bins", list(BINS), format_func=BINS.get, horizontal=True, key="faithfulness.bins")
with st.expander("Log-odds and method parameters"):
    st.markdown("**log-odds** (AML: the top 20% words replaced by [MASK])")
    log_odds = params_form(metric_infos["log_odds"], "faithfulness")
    method_params = methods_params_form(infos, methods, "faithfulness")
metric_params = {
    "deletion": {"removal": removal, "fraction": budget / 100},
    "insertion": {"removal": removal, "fraction": budget / 100},
    "comprehensiveness": {"removal": removal, "bins": bins},
    "sufficiency": {"removal": removal, "bins": bins},
    "log_odds": log_odds,
}
if selection.head == "regression":  # log-odds need probabilities; a regression head has a raw score
    metric_params.pop("log_odds")
    st.caption("Log-odds are not defined for a regression head: the other metrics measure the change in score.")
if not methods:
    st.info("Choose at least one method.")
    st.stop()
if view == VIEWS[0]:
    example_view(selection, methods, metric_params, method_params)
elif view == VIEWS[1]:
    slice_view(selection, methods, metric_params, method_params)
else:
    compare_view(selection, methods, metric_params, method_params)

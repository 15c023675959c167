"""Figures and tables of the faithfulness page: per-example curves with the input at each step on
hover, mean curves with 95% bands, score tables with the best value per column highlighted, and
the rank chart of two removal modes (Pham et al. 2022, arXiv 2110.11929, Table 1).
"""

from __future__ import annotations

import html
import textwrap

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import services
from ui.charts import curve_layout, legend_name
from ui.downloads import show_figure
from ui.explorer import curve_axes, mean_curve_figure
from ui.params import methods_params_form, params_form
from ui.share import setting_from_link, setting_to_link
from ui.text import clipped
from ui.theme import current

REMOVALS = {
    "delete": "delete the words",
    "mask": "[MASK]",
    "unk": "[UNK]",
    "pad": "[PAD]",
    "mlm": "masked-LM fill-in",  # Pham et al.'s Deletion_BERT (the help says so): a longer name was cut at 1,024 px
}
BINS = {"eraser": "ERASER {1, 5, 10, 20, 50}%", "marc": "MaRC 5%, 10%, …, 95%"}
BUDGETS = range(5, 101, 5)  # the deletion / insertion budget slider's values (% of words)
RANK_LABEL_CHARS = 24  # a longer method name is cut to this beside the rank chart's lines
INFOS = {m.key: m for m in services.metric_infos("faithfulness")}
TABLE_METRICS = tuple(k for k, m in INFOS.items() if m.in_table)
LABELS = {k: m.label for k, m in INFOS.items()}
# (metric, title of one example's curve, title of a slice's mean curve)
# (a title's parenthesised tail is its subtitle line: two curves side by side at 1,024 px cut one line)
TITLES = (
    ("deletion", "Deletion (lower area is better)", "Deletion (mean curve, 95% band)"),
    ("insertion", "Insertion (higher area is better)", "Insertion (mean curve, 95% band)"),
    (
        "comprehensiveness",
        "Comprehensiveness (per bin, higher is better)",
        "Comprehensiveness (mean per bin, 95% band)",
    ),
    ("sufficiency", "Sufficiency (per bin, lower is better)", "Sufficiency (mean per bin, 95% band)"),
)


def higher_is_better(key: str) -> bool:
    return INFOS[key].higher_is_better


def column_name(key: str) -> str:
    return f"{LABELS.get(key, key)} {'↑' if higher_is_better(key) else '↓'}"


def hover_text(text: str, width: int = 70, lines: int = 8) -> str:
    """An input shown on hover: escaped, wrapped, at most ``lines`` lines."""
    wrapped = textwrap.wrap(text, width) or ["(empty input)"]
    if len(wrapped) > lines:
        wrapped = wrapped[:lines] + ["…"]
    return "<br>".join(html.escape(line) for line in wrapped)


def best_styles(shown: pd.DataFrame, numbers: dict[str, tuple[str, pd.Series]]) -> pd.DataFrame:
    """CSS for the cells of ``shown``: in each column named after a metric (``numbers`` maps the
    column to the metric and its values), the best value by the metric's direction is
    highlighted."""
    styles = pd.DataFrame("", index=shown.index, columns=shown.columns)
    for column, (key, values) in numbers.items():
        values = pd.to_numeric(values, errors="coerce")
        if values.notna().any():
            best = values.max() if higher_is_better(key) else values.min()
            styles.loc[values == best, column] = current().highlight
    return styles


def example_curves(runs: dict[str, services.MetricsRun], n_words: int, head: str) -> dict[str, go.Figure]:
    """The four curves of one example, each with one line per method, for a head of kind
    ``head``."""
    return {
        key: curve_layout(example_curve(runs, key, n_words), title, *curve_axes(key, head)) for key, title, _ in TITLES
    }


def slice_curves(result: services.SliceResult, head: str) -> dict[str, go.Figure]:
    """The four mean curves of a slice with their 95% bands, for a head of kind ``head``."""
    return {key: mean_curve_figure(result.mean_curves, key, result.summary, head, title) for key, _, title in TITLES}


def example_curve(runs: dict[str, services.MetricsRun], key: str, n_words: int) -> go.Figure:
    """One metric's curve per method, overlaid; hovering a point shows the input at that step."""
    theme = current()
    figure = go.Figure()
    for index, (method, run) in enumerate(runs.items()):
        result = run.results.get(key)
        if result is None or not result.curve:
            continue
        x, y = zip(*result.curve, strict=True)
        if key in ("deletion", "insertion"):
            counts = [round(f * n_words) for f in result.extras["fraction_removed"]]
            notes = [f"{c} of {n_words} words removed" for c in counts]
        else:
            verb = "kept" if key == "sufficiency" else "removed"
            notes = [f"top {c} of {n_words} words {verb}" for c in result.extras["counts"]]
        custom = [[hover_text(text), note] for text, note in zip(result.extras["inputs"], notes, strict=True)]
        figure.add_trace(
            go.Scatter(
                x=x,
                y=y,
                mode="lines+markers",
                name=legend_name(method, result.value),
                line={"color": theme.method_colour(method, index), "dash": "dash" if method == "random" else "solid"},
                customdata=custom,
                hovertemplate=f"<b>{html.escape(method)}</b> · %{{customdata[1]}}<br>"
                "value %{y:.3f}<br>%{customdata[0]}<extra></extra>",
            )
        )
    return figure


def table_metrics(metric_params: dict) -> list[str]:
    """The table's metrics among those computed (a regression head has no log-odds)."""
    return [k for k in TABLE_METRICS if k in metric_params]


def example_table(result: services.FaithfulnessResult) -> tuple[pd.DataFrame, object]:
    """The scores of one example (one row per method, costs included) and its styled view."""
    runs = result.runs
    keys = [k for k in TABLE_METRICS if any(k in r.results for r in runs.values())]
    values = {m: {k: r.results[k].value for k in keys if k in r.results} for m, r in runs.items()}
    numbers = pd.DataFrame.from_dict(values, orient="index").reindex(columns=keys)
    table = numbers.rename(columns=column_name)
    table["attribution s"] = [result.heatmap.attributions[m].runtime_s for m in runs]
    table["attribution passes"] = [result.heatmap.attributions[m].forward_passes for m in runs]
    table["metric passes"] = [r.forward_passes for r in runs.values()]
    table["metric s"] = [r.runtime_s for r in runs.values()]
    best = {column_name(k): (k, numbers[k]) for k in keys}
    return table, table.style.apply(lambda _: best_styles(table, best), axis=None).format(precision=3, na_rep="—")


def summary_table(result: services.SliceResult, keys: list[str]) -> tuple[pd.DataFrame, object]:
    """Mean [95% interval] per method and metric over a slice, and its styled view."""
    methods = list(result.summary)
    numbers = pd.DataFrame({k: [result.summary[m][k].mean for m in methods] for k in keys}, index=methods)
    text = pd.DataFrame(
        {column_name(k): [result.summary[m][k].text() for m in methods] for k in keys},
        index=methods,
    )
    text["n"] = [max(result.summary[m][k].n for k in keys) for m in methods]
    best = {column_name(k): (k, numbers[k]) for k in keys}
    return text, text.style.apply(lambda _: best_styles(text, best), axis=None)


def ranks(result: services.SliceResult, key: str) -> dict[str, int]:
    """1 = best mean under the metric's direction (methods without a value are left out)."""
    means = {m: result.summary[m][key].mean for m in result.summary if result.summary[m][key].n}
    ordered = sorted(means, key=lambda m: -means[m] if higher_is_better(key) else means[m])
    return {m: i + 1 for i, m in enumerate(ordered)}


def compare_table(
    methods: list[str], key: str, modes: tuple[str, str], results: tuple[services.SliceResult, services.SliceResult]
) -> tuple[pd.DataFrame, object, list[str], tuple[dict[str, int], dict[str, int]]]:
    """The two removal modes side by side: means, ranks and the rank change per method (empty
    where a method has no value under a removal: the second set scores the first set's stored
    attributions, so a method that failed on every example is not in it); returns the table, its
    styled view, the flips ("method: 1 → 3") and both rankings."""
    (mode_a, mode_b), (result_a, result_b) = modes, results
    rank_a, rank_b = ranks(result_a, key), ranks(result_b, key)
    name_a, name_b = f"{LABELS[key]} · {mode_a}", f"{LABELS[key]} · {mode_b}"

    def mean(result: services.SliceResult, method: str) -> float | None:
        found = result.summary.get(method, {}).get(key)
        return found.mean if found is not None and found.n else None

    rows = {
        m: {
            name_a: mean(result_a, m),
            f"rank ({mode_a})": rank_a.get(m),
            name_b: mean(result_b, m),
            f"rank ({mode_b})": rank_b.get(m),
            "rank change": (rank_b[m] - rank_a[m]) if m in rank_a and m in rank_b else None,
        }
        for m in methods
    }
    frame = pd.DataFrame.from_dict(rows, orient="index")
    changed = frame["rank change"].fillna(0) != 0

    theme = current()

    def cell_styles(_: pd.DataFrame) -> pd.DataFrame:
        styles = pd.DataFrame("", index=frame.index, columns=frame.columns)
        styles.loc[changed, "rank change"] = f"font-weight:700;color:{theme.series[1]}"
        for name, ranking in ((name_a, rank_a), (name_b, rank_b)):
            styles.loc[[m for m, r in ranking.items() if r == 1], name] = theme.highlight
        return styles

    flips = [f"{m}: {rank_a[m]} → {rank_b[m]}" for m in frame.index[changed]]
    styled = frame.style.apply(cell_styles, axis=None).format(precision=3, na_rep="—")
    return frame, styled, flips, (rank_a, rank_b)


def rank_figure(
    methods: list[str], modes: tuple[str, str], rankings: tuple[dict[str, int], dict[str, int]]
) -> go.Figure:
    """Each method's rank under the two removals, joined by a line, its name written at the
    right-hand end (in the right margin, sized for the longest name: at 1,024 px with the sidebar
    open a name at each end of a clipped axis range lost up to 47 px, "ated_gradients")."""
    (mode_a, mode_b), (rank_a, rank_b) = modes, rankings
    theme = current()
    figure = go.Figure()
    shown = [m for m in methods if m in rank_a and m in rank_b]
    labels = {m: clipped(m, RANK_LABEL_CHARS) for m in shown}  # the legend and the hover name it in full
    for index, method in enumerate(shown):
        figure.add_trace(
            go.Scatter(
                x=[0, 1],
                y=[rank_a[method], rank_b[method]],
                mode="lines+markers+text",
                text=["", html.escape(labels[method], quote=False)],
                textposition="middle right",
                cliponaxis=False,
                name=html.escape(method, quote=False),
                line={"color": theme.method_colour(method, index), "dash": "dash" if method == "random" else "solid"},
                hovertemplate=f"<b>{html.escape(method)}</b>: rank %{{y}}<extra></extra>",
            )
        )
    figure.update_yaxes(autorange="reversed", dtick=1)
    figure = curve_layout(figure, "Rank of each method under the two removals", "removal", "rank (1 = best)")
    # an average character of a name is taken as 0.62 of the font size, plus the gap to the marker
    longest = max((len(label) for label in labels.values()), default=0)
    figure.update_layout(margin={"r": round(0.62 * (theme.font_size or 12) * longest) + 24})
    names = [REMOVALS.get(mode, mode) for mode in (mode_a, mode_b)]  # as the Removal pickers name them
    return figure.update_xaxes(tickvals=[0, 1], ticktext=names, range=[-0.25, 1.08], zeroline=False)


def show_curves(figures: dict[str, go.Figure], prefix: str) -> None:
    """The four curves in two rows of two, each with its download row."""
    for pair in (("deletion", "insertion"), ("comprehensiveness", "sufficiency")):
        for column, key in zip(st.columns(2), pair, strict=True):
            show_figure(figures[key], key=f"{prefix}.{key}", name=f"{prefix}-{key}", container=column)


def settings_form(infos: dict, methods: list[str], removal_shown: bool = True) -> tuple[dict, dict]:
    """Removal, budget, bins, log-odds and method parameters; returns the parameters of every
    metric and of every chosen method. Without ``removal_shown`` (a view that sets the removal
    itself) the removal picker is left out and its last choice kept."""
    # two columns, the bins on a row of their own: in three, the Removal picker showed "delete the w" at
    # 1,024 px with the sidebar open, at the presentation font
    first, second = st.columns(2)
    if removal_shown:
        setting_from_link("faithfulness.removal", "removal", list(REMOVALS), next(iter(REMOVALS)))
        removal = first.selectbox(
            "Removal", list(REMOVALS), format_func=REMOVALS.get, key="faithfulness.removal", persist_state="session",
            help="How a removed word is taken away. The masked-LM fill-in (Pham et al.'s Deletion_BERT) uses the "
            "sidebar's masked LM and never puts the original word back.",
        )  # fmt: skip
        setting_to_link("removal", removal, next(iter(REMOVALS)))
    else:
        removal = st.session_state.get("faithfulness.removal", next(iter(REMOVALS)))
        first.caption("Removal: the two compared below (Removal A and B).")
    setting_from_link("faithfulness.budget", "budget", BUDGETS, 20)
    budget = second.slider(
        "Deletion / insertion budget (% of words)", 5, 100, step=5, key="faithfulness.budget", persist_state="session",
        help="Pham et al. 2022 remove 20% of the words; 100% draws the full curve. k% of n words is ceil(k·n), "
        "at least one.",
    )  # fmt: skip
    setting_to_link("budget", budget, 20)
    setting_from_link("faithfulness.bins", "bins", list(BINS), next(iter(BINS)))
    bins = st.radio(
        "Bins", list(BINS), format_func=BINS.get, horizontal=True, key="faithfulness.bins", persist_state="session"
    )
    setting_to_link("bins", bins, next(iter(BINS)))
    with st.expander("Log-odds and method parameters"):
        heading = st.empty()  # above the form, worded with the form's values
        log_odds = params_form(INFOS["log_odds"], "faithfulness")
        share, removal_name = float(log_odds["fraction"]), REMOVALS.get(log_odds["removal"], log_odds["removal"])
        heading.markdown(f"**log-odds** (AML: the top {share:.0%} of the words removed, {removal_name})")
        method_params = methods_params_form(infos, methods, "faithfulness")
    curve = {"removal": removal, "fraction": budget / 100}
    aopc = {"removal": removal, "bins": bins}
    metrics = {
        "deletion": curve,
        "insertion": curve,
        "comprehensiveness": aopc,
        "sufficiency": aopc,
        "log_odds": log_odds,
    }
    return metrics, method_params


def _add_paper_pair() -> None:
    chosen = st.session_state.get("faithfulness.methods", [])
    st.session_state["faithfulness.methods"] = list(dict.fromkeys([*chosen, "loo_empty", "im"]))


def paper_pair_button() -> None:
    """A button that adds the pair Pham et al. 2022 compare (loo_empty and im) to the chosen
    methods."""
    st.button(
        "Add loo_empty and im (the pair Pham et al. 2022 compare)", on_click=_add_paper_pair,
        key="faithfulness.compare_add_im",
        help="Pham et al.'s Table 1: leave-one-out wins under deletion, IM under masked-LM deletion.",
    )  # fmt: skip

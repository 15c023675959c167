"""Human rationales: the words people highlighted, next to the words each method selects.

Agreement as in paper 000 (negatives zeroed, divide by the maximum, binarize at tau: IoU,
precision, recall, F1, coverage; the optimal tau over 0.05..0.95), ERASER (DeYoung et al. 2020;
paper 003: token F1 of the top-k words, span IOU-F1 at IoU 0.5, AUPRC) and the thesis (paper 002:
ground-truth overlap, mean rank). Two views: one example with its human and binarized maps, and a
dataset slice with a table per method, the annotators' agreement among themselves as the human
ceiling, and the examples where each method agrees least with the humans.
"""

from __future__ import annotations

import html
import math

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import services
from ui import state
from ui.heatmap import cost_rows, heatmap_html
from ui.runs import explain_selected, requested, run_or_stop

DEFAULT_METHODS = ("loo_empty", "saliency", "integrated_gradients", "attention_rollout", "random")
metric_infos = {m.key: m for m in services.metric_infos("plausibility")}
METRICS = tuple(k for k, m in metric_infos.items() if m.in_table)
LABELS = {k: m.label for k, m in metric_infos.items()}
THRESHOLD_METRICS = tuple(k for k in METRICS if metric_infos[k].thresholded)
# The ERASER metrics' document convention, from their parameter dataclass (metrics/eraser_documents.py).
CONVENTION = {f.name: f for k in METRICS for f in metric_infos[k].fields}.get("convention")
CONVENTION_METRICS = tuple(k for k in METRICS if any(f.name == "convention" for f in metric_infos[k].fields))
CONVENTION_LABELS = {"ours": "a pair is one document", "eraser": "ERASER: premise and hypothesis are two documents"}
VIEWS = ("This example", "Dataset slice")
CEILING_ROW = "humans (each vs the others)"
BEST_STYLE = "font-weight:700;background-color:rgba(0,158,115,0.22)"
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")


# --------------------------------------------------------------------------- helpers


def column_name(key: str) -> str:
    if key == "coverage":
        return "coverage ≈ humans"
    return f"{LABELS[key]} {'↑' if metric_infos[key].higher_is_better else '↓'}"


def annotator_label(value: str) -> str:
    if value == "majority":
        return "majority of the annotators"
    if value == "any":
        return "any annotator (union)"
    return f"annotator {value}"


def best_styles(shown: pd.DataFrame, numbers: pd.DataFrame, human_coverage: float) -> pd.DataFrame:
    """Highlight the best method per metric column (the ceiling row never competes); for coverage
    the method closest to the humans' share of words."""
    styles = pd.DataFrame("", index=shown.index, columns=shown.columns)
    methods = [m for m in numbers.index if m != CEILING_ROW]
    for key in numbers.columns:
        values = pd.to_numeric(numbers.loc[methods, key], errors="coerce")
        if not values.notna().any():
            continue
        if key == "coverage":
            if math.isnan(human_coverage):
                continue
            distance = (values - human_coverage).abs()
            best_rows = distance[distance == distance.min()].index
        else:
            best = values.max() if metric_infos[key].higher_is_better else values.min()
            best_rows = values[values == best].index
        styles.loc[best_rows, column_name(key)] = BEST_STYLE
    return styles


def interval(summary) -> str:
    return f"{summary.mean:.3f} [{summary.low:.3f}, {summary.high:.3f}]" if summary.n else "—"


def open_example(index: int) -> None:
    """Show one example of the slice in the example view (the sidebar follows the index)."""
    st.session_state["sidebar.index"] = index
    st.session_state["rationales.view"] = VIEWS[0]


# --------------------------------------------------------------------------- one example


def example_view(selection: state.Selection, methods: list[str], metric_params: dict, annotator: str) -> None:
    example = selection.example
    if example.rationale is None and not example.rationales:
        st.info(
            "This example has no human rationale, so the metrics skip it. Human highlights come with e-SNLI "
            "(split dev_highlighted), ERASER movies and HateXplain (posts judged normal have none)."
        )
        return
    result = explain_selected(selection, methods)
    for key, message in result.errors.items():
        st.error(f"{key}: {message}")
    prediction = result.prediction
    fitted = prediction.example
    target = result.target
    gold = f" · gold: **{html.escape(fitted.gold_name)}**" if fitted.gold_name else ""
    st.markdown(
        f"Explaining **{html.escape(prediction.label_names[target])}** "
        f"(p = {prediction.probabilities[target]:.3f}; predicted "
        f"**{html.escape(prediction.label_names[prediction.predicted])}**){gold}"
    )
    if prediction.dropped_words:
        st.warning(f"The last {prediction.dropped_words} words do not fit the model and are left out.")
    scores = services.rationale_scores(fitted, result.attributions, metric_params)
    ceiling = services.rationale_ceiling(fitted, metric_params)
    threshold = metric_params["iou"]["threshold"]
    rows = services.human_rows(fitted)
    rows.update({f"{m} · τ {threshold:.2f}": services.binarized(a, threshold) for m, a in result.attributions.items()})
    mask = services.human_outline(fitted, annotator)
    st.subheader("Human highlights and the words each method selects")
    st.html(heatmap_html(fitted.words, fitted.segment_ids, rows, rationale=mask))
    st.caption(
        f"Red cells: words highlighted by the humans (rows “human · …”) or selected by a method at τ = "
        f"{threshold:.2f} (its positive scores divided by its largest score, kept when at least τ). Outlined: the "
        f"human mask compared against ({annotator_label(annotator)})."
    )
    with st.expander("Continuous scores with the human outline"):
        st.html(heatmap_html(fitted.words, fitted.segment_ids, result.attributions, rationale=mask))
    st.subheader("Agreement with the humans")
    metric_table(scores, ceiling)
    st.dataframe(pd.DataFrame(cost_rows(result.attributions)), hide_index=True, key="rationales.example.costs")


def metric_table(scores: dict, ceiling: dict) -> None:
    numbers = pd.DataFrame(
        {key: [scores[m][key].value for m in scores] for key in METRICS if key in next(iter(scores.values()), {})},
        index=list(scores),
    )
    if ceiling and any(not math.isnan(r.value) for r in ceiling.values()):
        numbers.loc[CEILING_ROW] = [ceiling[k].value if k in ceiling else math.nan for k in numbers.columns]
    shown = numbers.rename(columns=column_name)
    first = next(iter(scores.values()), {})
    human_coverage = first["coverage"].extras.get("human_coverage", math.nan) if "coverage" in first else math.nan
    styled = shown.style.apply(lambda _: best_styles(shown, numbers, human_coverage), axis=None).format(
        precision=3, na_rep="—"
    )
    st.dataframe(styled, key="rationales.example.table")
    skipped = {r.extras["skipped"] for per in scores.values() for r in per.values() if "skipped" in r.extras}
    notes = [f"Human coverage: {human_coverage:.3f}." if not math.isnan(human_coverage) else ""]
    if skipped:
        notes.append(f"Skipped ({'; '.join(sorted(skipped))}): the human mask is empty.")
    if CEILING_ROW in numbers.index:
        notes.append(f"“{CEILING_ROW}”: each annotator's mask scored against each other annotator's.")
    st.caption(
        "Best method per column highlighted (coverage: closest to the humans); ↑ higher / ↓ lower is better. "
        + " ".join(n for n in notes if n)
    )


# --------------------------------------------------------------------------- dataset slice


def slice_view(selection: state.Selection, methods: list[str], metric_params: dict, annotator: str) -> None:
    if selection.dataset is None:
        st.info("Pick a dataset with human rationales in the sidebar (e-SNLI dev_highlighted, movies, HateXplain).")
        return
    size = services.dataset_size(selection.dataset, selection.split)
    first, second, third, fourth, fifth = st.columns([2, 2, 2, 2, 2], vertical_alignment="bottom")
    n = int(first.number_input(f"Examples (1–{size})", 1, size, min(50, size), key="rationales.slice_n"))
    order = second.radio("Which", ("first N", "random N"), horizontal=True, key="rationales.slice_order")
    seed = int(third.number_input("Seed", 0, 2**31 - 1, 0, key="rationales.slice_seed"))
    correct_only = fourth.checkbox(
        "Correct predictions only", key="rationales.correct_only", help="Paper 000 scores correctly predicted examples."
    )
    pressed = fifth.button("Run on the slice", type="primary", key="rationales.slice_run")
    objective = st.radio(
        "Optimal τ maximises",
        ("iou", "f1"),
        format_func=LABELS.get,
        horizontal=True,
        key="rationales.objective",
        help="Paper 000 reports each method at the τ in 0.05, 0.10, …, 0.95 with the best mean agreement.",
    )
    request = {
        "model": selection.model,
        "data": [selection.dataset, selection.split, n, order, seed, correct_only],
        "methods": methods,
        "metrics": metric_params,
        "objective": objective,
        "mlm": selection.mlm,
    }
    if not requested("rationales.slice_request", request, pressed):
        return
    indices = services.slice_indices(selection.dataset, selection.split, n, random_order=order == "random N", seed=seed)
    result = run_or_stop(
        services.rationale_slice,
        selection.model,
        selection.dataset,
        selection.split,
        indices,
        methods,
        metric_params,
        correct_only=correct_only,
        objective=objective,
        mlm_name=selection.mlm,
    )
    for method, message in result.errors.items():
        st.error(f"{method}: {message}")
    skipped = result.human_coverage.skipped
    st.caption(
        f"{len(result.items)} examples of {selection.dataset}/{selection.split} (predicted class explained"
        f"{', correct predictions only' if correct_only else ''}) · {skipped} without a human rationale "
        f"({annotator_label(annotator)}), counted apart · {result.runtime_s:.1f} s · "
        f"{result.forward_passes} forward passes for the explanations"
    )
    summary_table(result, metric_params["iou"]["threshold"])
    if metric_params[CONVENTION_METRICS[0]].get("convention") == "eraser":
        st.caption(
            f"{', '.join(LABELS[k] for k in CONVENTION_METRICS)}: ERASER's convention, premise and hypothesis "
            "scored as two documents and averaged over the slice's documents as ERASER's scoring code does (n "
            "counts documents; IOU-F1 is the F1 of the mean precision and mean recall, so it has no interval)."
        )
    micro_table(result)
    threshold_table(result, objective)
    worst_examples(result)


def summary_table(result, threshold: float) -> None:
    st.subheader(f"Per method at τ = {threshold:.2f}")
    keys = [k for k in METRICS if k in next(iter(result.summary.values()), {})]
    numbers = pd.DataFrame(
        {k: [result.summary[m][k].mean for m in result.summary] for k in keys}, index=list(result.summary)
    )
    text = pd.DataFrame(
        {column_name(k): [interval(result.summary[m][k]) for m in result.summary] for k in keys},
        index=list(result.summary),
    )
    text["n"] = [max(result.summary[m][k].n for k in keys) for m in result.summary]
    text["skipped"] = [max(result.summary[m][k].skipped for k in keys) for m in result.summary]
    ceiling = {k: s for k, s in result.ceiling.items() if k in keys}
    if any(s.n for s in ceiling.values()):
        numbers.loc[CEILING_ROW] = [ceiling[k].mean if k in ceiling else math.nan for k in keys]
        text.loc[CEILING_ROW] = [interval(ceiling[k]) if k in ceiling else "—" for k in keys] + [
            max(s.n for s in ceiling.values()),
            max(s.skipped for s in ceiling.values()),
        ]
    styled = text.style.apply(lambda _: best_styles(text, numbers, result.human_coverage.mean), axis=None)
    st.dataframe(styled, key="rationales.slice.table")
    ceiling_note = (
        f"“{CEILING_ROW}”: every annotator's mask scored against every other's, over the examples with two or more."
        if CEILING_ROW in text.index
        else "One human mask per example here, so there is no human ceiling row."
    )
    st.caption(
        f"Mean [95% interval]; best method per column highlighted (coverage: closest to the humans' "
        f"{result.human_coverage.mean:.3f}); ↑ higher / ↓ lower is better. {ceiling_note}"
    )


def micro_table(result) -> None:
    """ERASER's own aggregate: counts summed over the slice before precision, recall and F1."""
    rows = {(m, column_name(k)): values for m, per in result.micro.items() for k, values in per.items()}
    if not rows:
        return
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index = pd.MultiIndex.from_tuples(frame.index, names=["method", "metric"])
    with st.expander("ERASER micro averages (matches summed over the slice)"):
        st.dataframe(frame.style.format(precision=3), key="rationales.slice.micro")
        st.caption(
            "The table above averages each example's F1; ERASER's scoring code also reports this micro "
            "average, where long documents with many highlighted words weigh more."
        )


def threshold_table(result, objective: str) -> None:
    st.subheader("At each method's optimal τ (paper 000)")
    rows = {
        m: {"optimal τ": search.best, **{column_name(k): interval(result.at_best[m][k]) for k in THRESHOLD_METRICS}}
        for m, search in result.thresholds.items()
    }
    if not rows:
        st.info("No method could be scored on this slice.")
        return
    st.dataframe(pd.DataFrame.from_dict(rows, orient="index"), key="rationales.slice.best_tau")
    figure = go.Figure()
    for index, (method, search) in enumerate(result.thresholds.items()):
        taus = list(search.means)
        figure.add_trace(
            go.Scatter(
                x=taus,
                y=[search.means[t] for t in taus],
                mode="lines+markers",
                name=f"{method} (τ* {search.best:.2f})",
                line={"color": "#8c8c8c" if method == "random" else PALETTE[index % len(PALETTE)]},
                hovertemplate=f"<b>{html.escape(method)}</b><br>τ %{{x:.2f}}: %{{y:.3f}}<extra></extra>",
            )
        )
    figure.update_layout(
        height=340,
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
        xaxis={"title": "threshold τ"},
        yaxis={"title": f"mean {LABELS[objective]}"},
        legend={"orientation": "h", "y": -0.3},
    )
    st.plotly_chart(figure, key="rationales.slice.tau_curve")


def worst_examples(result, count: int = 5) -> None:
    st.subheader("Where each method agrees least with the humans")
    keys = [k for k in METRICS if k != "coverage" and k in next(iter(result.values.values()), {})]
    key = st.selectbox("By", keys, format_func=column_name, key="rationales.worst_metric")
    higher_is_better = metric_infos[key].higher_is_better
    columns = st.columns(min(3, max(1, len(result.values))))
    for position, (method, per) in enumerate(result.values.items()):
        scored = [(v, i) for i, v in enumerate(per[key]) if v is not None]
        scored.sort(key=lambda pair: pair[0] if higher_is_better else -pair[0])
        with columns[position % len(columns)]:
            st.markdown(f"**{html.escape(method)}**")
            for value, i in scored[:count]:
                item = result.items[i]
                words = " ".join(item.example.words)
                preview = words if len(words) <= 70 else words[:69] + "…"
                st.button(
                    f"#{item.index} · {LABELS[key]} {value:.2f} · {preview}",
                    key=f"rationales.open.{method}.{item.index}",
                    on_click=open_example,
                    args=(item.index,),
                    help="Open this example in the example view",
                    width="stretch",
                )


# --------------------------------------------------------------------------- page

selection = state.current()
st.title("Human rationales")
st.caption(
    "Compare the words a method ranks highest with the words people highlighted (e-SNLI highlights, ERASER movie "
    "evidence, HateXplain annotators). Agreement is plausibility, not faithfulness: a map can match the humans and "
    "still misdescribe the model."
)
if selection.error:
    st.error(selection.error)
    st.stop()

infos = {m.key: m for m in services.methods()}
st.session_state.setdefault("rationales.view", VIEWS[0])
view = st.segmented_control("View", VIEWS, key="rationales.view") or VIEWS[0]
methods = st.multiselect(
    "Methods",
    list(infos),
    default=[k for k in DEFAULT_METHODS if k in infos],
    format_func=lambda k: f"{k} — {infos[k].description}",
    key="rationales.methods",
    placeholder="Choose attribution methods",
)
annotators = 0
if selection.dataset is not None:
    annotators = services.annotator_count(selection.dataset, selection.split)
elif selection.example is not None:
    annotators = len(selection.example.rationales)
options = ["majority", "any", *(str(i) for i in range(annotators if annotators > 1 else 0))]
first, second, third, fourth = st.columns(4)
threshold = first.slider(
    "Threshold τ",
    0.05,
    0.95,
    0.5,
    step=0.05,
    key="rationales.threshold",
    help="Paper 000: negative scores set to zero, divided by the largest score, words at or above τ selected.",
)
annotator = second.selectbox("Human mask", options, format_func=annotator_label, key="rationales.annotator")
selection_mode = third.radio(
    "Token F1 / IOU-F1 select",
    ("top_k", "threshold"),
    format_func=lambda s: "top-k words" if s == "top_k" else "words at or above τ",
    horizontal=True,
    key="rationales.selection",
)
k = int(
    fourth.number_input(
        "k (0 = as many as the humans)", 0, 512, 0, key="rationales.k", help="Top-k size for token F1 and IOU-F1."
    )
)
convention = st.radio(
    f"Documents for {', '.join(LABELS[k] for k in CONVENTION_METRICS)}",
    CONVENTION.choices if CONVENTION else ("ours",),
    format_func=CONVENTION_LABELS.get,
    horizontal=True,
    key="rationales.convention",
    help=CONVENTION.help if CONVENTION else None,
)
metric_params = {
    key: {"annotator": annotator}
    | ({"threshold": threshold} if key in THRESHOLD_METRICS else {})
    | ({"selection": selection_mode, "k": k, "threshold": threshold} if key in ("token_f1", "iou_f1") else {})
    | ({"convention": convention} if key in CONVENTION_METRICS else {})
    for key in METRICS
}
if not methods:
    st.info("Choose at least one method.")
    st.stop()
if view == VIEWS[0]:
    example_view(selection, methods, metric_params, annotator)
else:
    slice_view(selection, methods, metric_params, annotator)

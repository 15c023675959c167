"""Tables, figures and the settings form of the human-rationales page.

Agreement as in Pham et al. 2022 (arXiv 2110.11929: negatives zeroed, divide by the
maximum, binarize at tau; the optimal tau over 0.05..0.95), ERASER (DeYoung et al. 2020, arXiv
1911.03429: token F1, IOU-F1, AUPRC, and its micro average) and the thesis "Assessing the
Interpretability of Large Language Models" (Oxford MSc, 2022: ground-truth overlap, mean rank).
The best method per column is highlighted; the human ceiling row never competes.
"""

from __future__ import annotations

import html
import math

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import services
from ui.charts import legend_under_axis, style
from ui.downloads import show_figure, show_table
from ui.share import setting_from_link, setting_to_link
from ui.text import breakable, clipped, plain
from ui.theme import current

INFOS = {m.key: m for m in services.metric_infos("plausibility")}
METRICS = tuple(k for k, m in INFOS.items() if m.in_table)
LABELS = {k: m.label for k, m in INFOS.items()}
THRESHOLD_METRICS = tuple(k for k in METRICS if INFOS[k].thresholded)
# The ERASER metrics' document convention, from their parameter dataclass (metrics/eraser_documents.py).
CONVENTION = {f.name: f for k in METRICS for f in INFOS[k].fields}.get("convention")
CONVENTION_METRICS = tuple(k for k in METRICS if any(f.name == "convention" for f in INFOS[k].fields))
CONVENTION_LABELS = {"ours": "a pair is one document", "eraser": "ERASER: premise and hypothesis are two documents"}
# for single texts, where a document is an example and the conventions differ in averaging only
SINGLE_TEXT_LABELS = {"ours": "mean of the examples' scores", "eraser": "ERASER: pooled over documents"}
CEILING_ROW = "humans (each vs the others)"
READER_ROW = "you (vs each annotator)"  # the reader's own highlight beside the annotators'
NOT_METHODS = (CEILING_ROW, READER_ROW)
HUMAN_MASK = "the human mask"


def column_name(key: str) -> str:
    if key == "coverage":
        return "coverage ≈ humans"
    return f"{LABELS[key]} {'↑' if INFOS[key].higher_is_better else '↓'}"


def annotator_label(value: str) -> str:
    if value == "majority":
        return "majority of the annotators"
    if value == "any":
        return "any annotator (union)"
    return f"annotator {value}"


def best_styles(shown: pd.DataFrame, numbers: pd.DataFrame, human_coverage: float) -> pd.DataFrame:
    """Highlight the best method per metric column (the human rows never compete); for coverage
    the method closest to the humans' share of words. ``shown``'s first columns are ``numbers``'
    under their shown names, in the same order."""
    styles = pd.DataFrame("", index=shown.index, columns=shown.columns)
    methods = [m for m in numbers.index if m not in NOT_METHODS]
    for position, key in enumerate(numbers.columns):
        values = pd.to_numeric(numbers.loc[methods, key], errors="coerce")
        if not values.notna().any():
            continue
        if key == "coverage":
            if math.isnan(human_coverage):
                continue
            distance = (values - human_coverage).abs()
            best_rows = distance[distance == distance.min()].index
        else:
            best = values.max() if INFOS[key].higher_is_better else values.min()
            best_rows = values[values == best].index
        styles.loc[best_rows, shown.columns[position]] = current().highlight
    return styles


TAUS = tuple(round(0.05 * i, 2) for i in range(1, 20))  # the threshold slider's values
SELECTIONS = ("top_k", "threshold")


def settings_form(options: list[str], own: bool = False, pairs: bool = True) -> tuple[dict, str]:
    """Threshold, human mask, selection mode, k and the ERASER metrics' document convention (said
    in terms of single texts when the examples are not ``pairs``); returns every metric's
    parameters and the human mask compared against. ``own``: the reader marks the words
    (``ui.highlight``), so there are no annotators to pick from."""
    # two rows: in four columns at 1,024 px the Human mask left "majority of the annotators" 91 px;
    first, second = st.columns([2, 3])  # the first row is 2:3, as in halves it still lacked 3 px
    third, fourth = st.columns(2)
    # no defaults of their own: setting_from_link seeds them (a link sets them)
    setting_from_link("rationales.threshold", "tau", TAUS, 0.5)
    threshold = first.slider(
        "Threshold τ", 0.05, 0.95, step=0.05, key="rationales.threshold", persist_state="session",
        help="Pham et al. 2022: negative scores set to zero, divided by the largest score, words at or above τ "
        "selected.",
    )  # fmt: skip
    setting_to_link("tau", round(threshold, 2), 0.5)
    annotator = options[0]
    if not own:
        setting_from_link("rationales.annotator", "mask", options, options[0])
        annotator = second.selectbox(
            "Human mask", options, format_func=annotator_label, key="rationales.annotator", persist_state="session"
        )
        setting_to_link("mask", annotator, options[0])
    setting_from_link("rationales.selection", "select", SELECTIONS, SELECTIONS[0])
    mode = third.radio(
        "Token F1 / IOU-F1 select", SELECTIONS, horizontal=True, key="rationales.selection", persist_state="session",
        format_func=lambda s: "top-k words" if s == "top_k" else "words at or above τ",
    )  # fmt: skip
    setting_to_link("select", mode, SELECTIONS[0])
    setting_from_link("rationales.k", "k", range(513), 0)
    k = int(
        fourth.number_input(
            f"k (0 = as many as {'you mark' if own else 'the humans'})",
            0,
            512,
            key="rationales.k",
            persist_state="session",
            help="Top-k size for token F1 and IOU-F1.",
        )
    )
    setting_to_link("k", k, 0)
    convention = st.radio(
        f"Documents for {', '.join(LABELS[k] for k in CONVENTION_METRICS)}",
        CONVENTION.choices if CONVENTION else ("ours",),
        format_func=(CONVENTION_LABELS if pairs else SINGLE_TEXT_LABELS).get,
        horizontal=True,
        # One widget per set of labels: a radio keeps its choice as the label shown, so the same key
        # with the other labels (a tour from pairs to a typed text) showed no option selected.
        key="rationales.convention" if pairs else "rationales.convention_single",
        persist_state="session",
        help=CONVENTION.help if CONVENTION else None,
    )
    params = {
        key: {"annotator": annotator}
        | ({"threshold": threshold} if key in THRESHOLD_METRICS else {})
        | ({"selection": mode, "k": k, "threshold": threshold} if key in ("token_f1", "iou_f1") else {})
        | ({"convention": convention} if key in CONVENTION_METRICS else {})
        for key in METRICS
    }
    return params, annotator


def convention_note(metric_params: dict, pairs: bool = True) -> None:
    """Say which document convention the slice's ERASER figures use when it is ERASER's."""
    if CONVENTION_METRICS and metric_params[CONVENTION_METRICS[0]].get("convention") == "eraser":
        documents = "premise and hypothesis scored as two documents and" if pairs else "each text one document,"
        st.caption(
            f"{', '.join(LABELS[k] for k in CONVENTION_METRICS)}: ERASER's convention, {documents} averaged over "
            "the slice's documents as ERASER's scoring code does (n counts documents; IOU-F1 is the F1 of the mean "
            "precision and mean recall, so it has no interval)."
        )


def example_table(scores: dict, ceiling: dict, mask_name: str = HUMAN_MASK, reader: dict | None = None) -> None:
    """One example's agreement with the human mask (``mask_name``: it, or the reader's own
    highlight), per method, then the human ceiling row and, with ``reader``, the row of the
    reader's own highlight against the annotators."""
    numbers = pd.DataFrame(
        {key: [scores[m][key].value for m in scores] for key in METRICS if key in next(iter(scores.values()), {})},
        index=list(scores),
    )
    for row, values in ((CEILING_ROW, ceiling), (READER_ROW, reader or {})):
        if values and any(not math.isnan(r.value) for r in values.values()):
            numbers.loc[row] = [values[k].value if k in values else math.nan for k in numbers.columns]
    shown = numbers.rename(columns=column_name)
    if mask_name != HUMAN_MASK:
        shown = shown.rename(columns={column_name("coverage"): f"coverage ≈ {mask_name}"})
    first = next(iter(scores.values()), {})
    human_coverage = first["coverage"].extras.get("human_coverage", math.nan) if "coverage" in first else math.nan
    styled = shown.style.apply(lambda _: best_styles(shown, numbers, human_coverage), axis=None).format(
        precision=3, na_rep="—"
    )
    show_table(shown, shown=styled, key="rationales.example.table", name="rationales-example")
    skipped = {r.extras["skipped"] for per in scores.values() for r in per.values() if "skipped" in r.extras}
    coverage = f"{mask_name[0].upper()}{mask_name[1:]} covers {human_coverage:.3f} of the words."
    notes = [coverage if not math.isnan(human_coverage) else ""]
    if skipped:
        notes.append(f"Skipped ({'; '.join(sorted(skipped))}): {mask_name} is empty.")
    if CEILING_ROW in numbers.index:
        notes.append(f"“{CEILING_ROW}”: each annotator's mask scored against each other annotator's.")
    if READER_ROW in numbers.index:
        notes.append(f"“{READER_ROW}”: your highlight scored against each annotator's, the mean.")
    st.caption(
        f"Best method per column highlighted (coverage: closest to {mask_name}); ↑ higher / ↓ lower is "
        "better. " + " ".join(n for n in notes if n)
    )


def summary_table(result, threshold: float) -> None:
    st.subheader(f"Per method at τ = {threshold:.2f}")
    keys = [k for k in METRICS if k in next(iter(result.summary.values()), {})]
    methods = list(result.summary)
    numbers = pd.DataFrame({k: [result.summary[m][k].mean for m in methods] for k in keys}, index=methods)
    examples = {m: min(result.summary[m][k].n for k in keys) for m in methods}

    def cell(method: str, key: str) -> str:
        """The mean [interval], and its own n where it counts something else (ERASER's
        documents)."""
        summary = result.summary[method][key]
        return summary.text() + (f" n={summary.n}" if summary.n != examples[method] else "")

    text = pd.DataFrame({column_name(k): [cell(m, k) for m in methods] for k in keys}, index=methods)
    text["n"] = [examples[m] for m in methods]
    text["skipped"] = [max(result.summary[m][k].skipped for k in keys) for m in methods]
    ceiling = {k: s for k, s in result.ceiling.items() if k in keys}
    if any(s.n for s in ceiling.values()):
        numbers.loc[CEILING_ROW] = [ceiling[k].mean if k in ceiling else math.nan for k in keys]
        text.loc[CEILING_ROW] = [ceiling[k].text() if k in ceiling else "—" for k in keys] + [
            max(s.n for s in ceiling.values()),
            max(s.skipped for s in ceiling.values()),
        ]
    styled = text.style.apply(lambda _: best_styles(text, numbers, result.human_coverage.mean), axis=None)
    show_table(text, shown=styled, key="rationales.slice.table", name="rationales-slice-summary")
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
        show_table(frame, shown=frame.style.format(precision=3), key="rationales.slice.micro", name="rationales-micro")
        st.caption(
            "The table above averages each example's F1; ERASER's scoring code also reports this micro "
            "average, where long documents with many highlighted words weigh more."
        )


def threshold_table(result, objective: str) -> None:
    st.subheader("At each method's optimal τ (Pham et al. 2022)")
    rows = {
        m: {"optimal τ": search.best, **{column_name(k): result.at_best[m][k].text() for k in THRESHOLD_METRICS}}
        for m, search in result.thresholds.items()
    }
    if not rows:
        st.info("No method could be scored on this slice.")
        return
    frame = pd.DataFrame.from_dict(rows, orient="index")
    show_table(frame, key="rationales.slice.best_tau", name="rationales-optimal-tau")
    show_figure(threshold_figure(result, objective), key="rationales.slice.tau_curve", name="rationales-tau-curve")


def threshold_figure(result, objective: str) -> go.Figure:
    """Mean agreement of each method at every threshold τ."""
    theme = current()
    figure = go.Figure()
    for index, (method, search) in enumerate(result.thresholds.items()):
        taus = list(search.means)
        figure.add_trace(
            go.Scatter(
                x=taus,
                y=[search.means[t] for t in taus],
                mode="lines+markers",
                name=f"{method} (τ* {search.best:.2f})",
                line={"color": theme.method_colour(method, index)},
                hovertemplate=f"<b>{html.escape(method)}</b><br>τ %{{x:.2f}}: %{{y:.3f}}<extra></extra>",
            )
        )
    figure.update_layout(
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
        xaxis={"title": "threshold τ"},
        yaxis={"title": f"mean {LABELS[objective]}"},
    )
    legend_under_axis(figure, 340, 30)
    return style(figure)


def worst_examples(result, open_example, count: int = 5) -> None:
    """Per method, the ``count`` examples it agrees least with the humans on, each its score and
    text over a button that calls ``open_example(index)`` (in a third of the page at 1,024 px a
    button holding the text showed "#0 · IoU 0.25 · The scr…")."""
    st.subheader("Where each method agrees least with the humans")
    keys = [k for k in METRICS if k != "coverage" and k in next(iter(result.values.values()), {})]
    key = st.selectbox("By", keys, format_func=column_name, key="rationales.worst_metric", persist_state="session")
    higher_is_better = INFOS[key].higher_is_better
    columns = st.columns(min(3, max(1, len(result.values))))
    for position, (method, per) in enumerate(result.values.items()):
        scored = [(v, i) for i, v in enumerate(per[key]) if v is not None]
        scored.sort(key=lambda pair: pair[0] if higher_is_better else -pair[0])
        with columns[position % len(columns)]:
            st.markdown(f"**{breakable(method)}**")
            for value, i in scored[:count]:
                item = result.items[i]
                words = " ".join(item.example.words)
                st.caption(plain(f"#{item.index} · {LABELS[key]} {value:.2f} · {clipped(words, 70)}"))
                st.button(
                    f"Open #{item.index}",
                    key=f"rationales.open.{method}.{item.index}",
                    on_click=open_example,
                    args=(item.index,),
                    help="Open this example in the example view",
                )

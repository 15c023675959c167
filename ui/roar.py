"""Figures and tables of the ROAR page: performance vs share removed with 95% bands (random
dashed, the 100% floor dotted), the Eq. 3 and t-test tables, the sparsity plot and an example's
text at each removal level with the removed words visible (Madsen et al. 2022, Figures 1 and 2)."""

from __future__ import annotations

import html
import math
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from ui.charts import band_trace, legend_under_axis, style
from ui.text import plain
from ui.theme import current

SHARED = "*"
# The job picker's values: "bundled:<name>", "stored:<run id>" or this; its labels (with a stored
# job's live progress) come from ``source_labels``, so a job that moves on stays selected.
SYNTHETIC_SOURCE = "synthetic"
# A job's removal (``experiments.roar.removal.REMOVALS``) by name, in the job form's order: the
# form offers these and stores the key; a job's caption names its removal so too.
REMOVALS = {
    "delete": "delete the words (Pham et al.'s ROAR)",
    "mlm": "masked-LM fill-in (ROAR_BERT)",
    "mask": "[MASK] (Madsen et al.)",
}


def source_labels(bundled: list[str], stored: list[Any]) -> dict[str, str]:
    """The job picker's options (stable values) and their labels: the bundled jobs, the store's
    jobs with their status and progress (``RunInfo``), and the synthetic task."""
    labels = {f"bundled:{name}": f"Bundled: {name}" for name in bundled}
    for info in stored:
        labels[f"stored:{info.run_id}"] = (
            f"Stored: {info.run_id} ({info.shown_status}, {info.units_done}/{info.units_total} units)"
        )
    labels[SYNTHETIC_SOURCE] = "Synthetic task (Madsen et al. 2022, Eq. 1)"
    return labels


def _interval(cell: dict[str, Any]) -> str:
    """A level's 95% interval over seeds for the hover, unclipped (empty with a single seed)."""
    if cell["low"] is None or cell["high"] is None:
        return ""
    return f" [{cell['low']:.3f}, {cell['high']:.3f}]"


def curve_figure(summary: dict[str, Any], title: str, x_title: str = "share of words removed") -> go.Figure:
    """One line per method with its 95% band over seeds (drawn inside [0, 1], the range of both
    metrics, accuracy and macro-F1); the random baseline dashed. With no line yet (a job being
    written) the axes span [0, 1]."""
    theme = current()
    figure = go.Figure()
    for index, (method, cells) in enumerate(summary["curves"].items()):
        cells = [c for c in cells if c["mean"] is not None]
        if not cells:
            continue
        x = [c["x"] for c in cells]
        colour = theme.method_colour(method, index)
        banded = [c for c in cells if c["low"] is not None and c["high"] is not None]
        if banded:
            figure.add_trace(
                band_trace(
                    [c["x"] for c in banded],
                    [c["low"] for c in banded],
                    [c["high"] for c in banded],
                    colour,
                    method,
                    bounds=(0.0, 1.0),
                )
            )
        figure.add_trace(
            go.Scatter(
                x=x,
                y=[c["mean"] for c in cells],
                mode="lines+markers",
                name=method,
                legendgroup=method,
                line={"color": colour, "dash": "dash" if method == "random" else "solid"},
                customdata=[[c["level"], c["n"], _interval(c)] for c in cells],
                hovertemplate=f"<b>{html.escape(method)}</b> %{{customdata[0]}}<br>%{{y:.3f}}%{{customdata[2]}}"
                " over %{customdata[1]} seed(s)<extra></extra>",
            )
        )
    if summary.get("floor") is not None:
        figure.add_hline(
            y=summary["floor"],
            line={"dash": "dot", "color": theme.muted},
            annotation_text="100% removed",
            annotation_position="bottom left",
        )
    percent = all(c["level"].endswith("%") for cells in summary["curves"].values() for c in cells)
    empty = not figure.data  # a job with only its 100% unit stored: the metric's own range, not plotly's -1..4
    figure.update_layout(
        title={"text": html.escape(title)},
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        xaxis={"title": x_title, "tickformat": ".0%" if percent else None, "range": [0, 1] if empty else None},
        yaxis={"title": summary["metric"], "range": [0, 1] if empty else None},
    )
    legend_under_axis(figure, 400, 40)
    return style(figure)


def _fmt(value: float | None, digits: int = 1) -> str:
    return "–" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def faithfulness_table(summary: dict[str, Any]) -> pd.DataFrame:
    """Madsen et al.'s Eq. 3 per method: mean over seeds, 95% interval and the verdict."""
    rows = []
    for method, f in summary["faithfulness"].items():
        mean = f["mean"]
        rows.append(
            {
                "method": method,
                "Eq. 3 (%)": _fmt(mean),
                "95% interval": f"[{_fmt(f['low'])}, {_fmt(f['high'])}]",
                "seeds": f["n"],
                "reading": f["reading"],  # engine.roar.report.eq3_reading, as the command line prints it
            }
        )
    return pd.DataFrame(rows)


def few_seeds_note(seeds: int) -> str:
    """Why a job of two to four seeds has wide intervals: its t quantile is 3.2 to 12.7 (none for
    one seed, which has no interval, nor from five on, where the quantile is below 2.8)."""
    if not 2 <= seeds <= 4:
        return ""
    from scipy import stats

    half = stats.t.ppf(0.975, seeds - 1)
    return (
        f"With {seeds} seeds a 95% interval reaches {half:.1f} standard errors either side of the mean (Student's t "
        f"with {seeds - 1} degree{'s' * (seeds > 2)} of freedom), so it is wide: more seeds (the job form's Seeds, "
        "`--seeds` on the command line) narrow it."
    )


def t_test_table(summary: dict[str, Any]) -> pd.DataFrame:
    """Pham et al.'s Welch t-test between every two methods at each level."""
    return pd.DataFrame(
        [
            {"level": t["level"], "methods": f"{t['a']} vs {t['b']}", "t": _fmt(t["t"], 2), "p": _fmt(t["p"], 4)}
            for t in summary["t_tests"]
        ]
    )


def leakage_lines(summary: dict[str, Any]) -> list[str]:
    """One sentence per rise of a curve (Madsen et al.'s class-leakage warning)."""
    return [
        f"{leak['method']} rises by {leak['rise']:+.3f} from {leak['from']} to {leak['to']}"
        + (" (beyond both 95% intervals)" if leak["significant"] else " (within the intervals)")
        for leak in summary["leakage"]
    ]


def sparsity_figure(shares: dict[str, dict[str, float | None]]) -> go.Figure:
    """Madsen et al.'s Appendix E: the share of an example's total importance in its top words."""
    theme = current()
    figure = go.Figure()
    for index, (method, by_level) in enumerate(shares.items()):
        figure.add_trace(
            go.Bar(
                x=list(by_level),
                y=list(by_level.values()),
                name=method,
                marker_color=theme.method_colour(method, index),
            )
        )
    figure.update_layout(
        barmode="group",
        height=320,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        title={"text": "Importance in the top words (step 0)"},  # the y axis says it is a share
        # levels such as "1 token" and "10%" are names, not numbers: plotly read "10%" ... "50%" as a
        # numeric axis with an empty place at 40
        xaxis={"type": "category", "title": {"text": "top words (a count, or a share of the example's words)"}},
        yaxis={"tickformat": ".0%", "range": [0, 1], "title": {"text": "share of total |importance|"}},
    )
    return style(figure)


def removal_html(words: list[str], shown: dict[str, str]) -> str:
    """The example's words with the removed ones visible: deleted words struck through, replaced
    ones struck through with their replacement ([MASK] or the masked LM's fill-in) after them.
    Every word is escaped for HTML and for Markdown (``ui.text.plain``: the page renders it with
    ``st.markdown``, where ``$x$``, ``*a*`` or ``:smile:`` would become math, emphasis or an emoji);
    the colours are the current theme's (removed: the palette's red)."""
    theme = current()
    removed, added = theme.rgb("positive"), theme.series[0]
    parts = []
    for i, word in enumerate(words):
        replacement = shown.get(str(i))
        if replacement is None:
            parts.append(plain(word))
        elif replacement == "":
            parts.append(f'<s style="color:{removed}">{plain(word)}</s>')
        else:
            parts.append(
                f'<s style="color:{removed}">{plain(word)}</s>'
                f'<span style="color:{added}">&nbsp;→&nbsp;{plain(replacement)}</span>'
            )
    return '<span style="line-height:1.9">' + " ".join(parts) + "</span>"


def removal_rows(example: dict[str, Any], label_names: list[str]) -> list[tuple[str, str, str]]:
    """(method, level, HTML) for every method and level stored for ``example`` (seed 0)."""
    out = []
    for method, levels in example["levels"].items():
        if method == SHARED:
            continue
        for level, stored in levels.items():
            predicted = stored.get("predicted")
            name = label_names[predicted] if predicted is not None and predicted < len(label_names) else predicted
            level_text = plain(f"{level} · predicts {name}")  # a data file's class names, shown as typed
            out.append((method, level_text, removal_html(example["words"], stored["shown"])))
    return out

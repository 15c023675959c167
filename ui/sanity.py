"""Figures, thumbnails and tables of the sanity-checks page: cascading and independent layer
randomisation (Adebayo et al. 2018, arXiv 1810.03292, as the thesis runs it) and the
classifier-head reset of Pham et al. 2022 (arXiv 2110.11929, Table A5).
"""

from __future__ import annotations

import html
import math

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from core.numbers import fixed
from services.experiments import POOLED  # the rank correlations: drawn on [-1, 1], pooled over words
from ui.charts import style
from ui.heatmap import cell_colours, peak, scaled
from ui.text import THESIS
from ui.theme import current

MEASURES = {
    "spearman": "Spearman ρ (signed scores)",
    "spearman_abs": "Spearman ρ (absolute scores)",
    "topk_overlap": "top-k overlap",
    "sign_change": "share of words changing sign",
    "mean_abs_change": "mean |change| (method's unit)",
}


def how_to_read() -> None:
    st.markdown(
        "- Each point compares the explanation of the randomised model with the original one (the first point, "
        "*original*, is 1 by definition). A **faithful method's correlation should fall** as more of the model is "
        "randomised; a curve that stays near 1 means the method does not depend on those weights.\n"
        "- **Cascading** randomises cumulatively, from the top (*head*, *block L*, …) down to the *embeddings*; "
        "**independent** randomises one component at a time and keeps every other weight.\n"
        "- Weights are re-drawn with the model's own initializer; the same seed gives the same random weights in "
        "both modes. The shared model is never modified: every step works on a copy.\n"
        "- Attention scores do not use the classifier head, so they cannot change at the *head* step.\n"
        "- The top-k overlap compares the words with the k highest **signed** scores (the agreement matrix "
        "on the heatmap page ranks by |score|); an explanation that comes out constant has no rank "
        "correlation, and its example is left out of that step's mean (the table gives each mean's n).\n"
        f"- {THESIS[0].upper()}{THESIS[1:]} reports gradient methods near 0 after one or two blocks and attention "
        "methods falling "
        "gradually (on the bundled MiniLM models saliency can keep a correlation near 0.8 for several blocks: "
        "the curves above are this model's answer, not the thesis's); Pham et al. 2022 report, after "
        "re-initialising the head, the share of words whose score changes sign and the mean absolute change "
        "(higher is better, table below the curves)."
    )


def curve_figure(result, summary: list, names: list[str], measure: str) -> go.Figure:
    """One line per method: the mean ``measure`` after each step, with 95% error bars over several
    examples."""
    theme = current()
    figure = go.Figure()
    for i, method in enumerate(result.methods):
        means = [step[method][measure][0] for step in summary]
        trace = {
            "x": names,
            "y": means,
            "name": method,
            "mode": "lines+markers",
            "line": {"color": theme.method_colour(method, i)},
            "hovertemplate": f"{method}<br>%{{x}}: %{{y:.3f}}<extra></extra>",
        }
        if len(result.examples) > 1:
            trace["error_y"] = {
                "type": "data",
                "array": [step[method][measure][2] - m for step, m in zip(summary, means)],
                "arrayminus": [m - step[method][measure][1] for step, m in zip(summary, means)],
                "thickness": 1,
            }
        figure.add_trace(go.Scatter(**trace))
    figure.add_hline(y=0, line_dash="dot", line_color=theme.muted)
    correlation = measure in POOLED
    figure.update_layout(
        height=380,
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
        xaxis={"title": "randomised from the top down" if result.mode == "cascading" else "component randomised alone"},
        yaxis={"title": MEASURES[measure], "range": [-1.05, 1.05] if correlation else None},
        legend={"orientation": "h", "y": 1.1},
    )
    if measure in ("topk_overlap", "sign_change"):
        figure.update_yaxes(range=[-0.02, 1.02])
    return style(figure)


def thumbnail(title: str, value: float, words, scores, measure: str) -> str:
    """One step's heatmap as a small card, scaled to its own largest |score|, with the measure."""
    scale = peak(scores)
    spans = "".join(_thumb_word(word, float(score), scale) for word, score in zip(words, scores))
    shown = "n/a" if math.isnan(value) else fixed(value, 2, signed=True)
    return (
        '<div class="sanity-thumb" style="flex:0 0 13rem;border:1px solid #ddd;border-radius:4px;padding:4px;'
        'font-size:0.68rem;line-height:1.35">'
        f'<div style="font-weight:600;margin-bottom:2px">{html.escape(title)} '
        f'<span style="font-weight:400;color:#555">{html.escape(MEASURES[measure].split(" (")[0])} {shown}</span></div>'
        f"{spans}</div>"
    )


def _thumb_word(word: str, score: float, scale: float) -> str:
    """One word of a thumbnail, coloured as a heatmap cell (white text on strong cells)."""
    background, text_colour = cell_colours(scaled(score, scale))
    return (
        f'<span title="{html.escape(f"{word}: {score:+.4g}")}" style="background:{background};color:{text_colour};'
        f'padding:0 2px;margin:1px;border-radius:2px;display:inline-block">{html.escape(word)}</span>'
    )


def step_rows(result, names: list[str], row, measure: str) -> None:
    """One row of thumbnails per method, one card per step, wrapping onto more lines where the
    column is narrower than the steps (the steps past the first few were hidden off to the
    right)."""
    words = row.example.words
    for method in result.methods:
        cards = "".join(
            thumbnail(name, getattr(similar[method], measure), words, attributions[method].scores, measure)
            for name, attributions, similar in zip(names, row.attributions, row.similarities, strict=True)
        )
        st.html(
            f'<div style="font-weight:600;margin:0.4rem 0 0.2rem 0">{html.escape(method)}</div>'
            f'<div class="sanity-row" data-method="{html.escape(method)}" style="display:flex;flex-wrap:wrap;gap:6px">'
            f"{cards}</div>"
        )


def head_table(result, summary: list, head: int) -> pd.DataFrame:
    """Pham et al.'s Table A5 measures after the classifier head is re-drawn (as numbers: an
    undefined ρ, of a one-word text, is NaN rather than a column of ``None``)."""
    frame = pd.DataFrame(
        [
            {
                "method": method,
                "words changing sign (%)": 100 * summary[head][method]["sign_change"][0],
                "mean |change|": summary[head][method]["mean_abs_change"][0],
                "Spearman ρ": summary[head][method]["spearman"][0],
            }
            for method in result.methods
        ]
    )
    return frame.astype({"Spearman ρ": float})


def number_columns(frame: pd.DataFrame) -> dict:
    """One format per number column of a sanity table: percentages with one decimal, every other
    measure with three (Streamlit's own shows ``47.619`` next to ``0``)."""
    return {
        name: st.column_config.NumberColumn(format="%.1f" if "%" in name else "%.3f")
        for name in frame.columns
        if frame[name].dtype.kind == "f"
    }


def all_measures(summary: list, names: list[str]) -> pd.DataFrame:
    """Every measure of every method after every step (means)."""
    return pd.DataFrame(
        [
            {"step": name, "method": method, **{m: values[m][0] for m in MEASURES}, "n": values["spearman"][3]}
            for name, step in zip(names, summary, strict=True)
            for method, values in step.items()
        ]
    )

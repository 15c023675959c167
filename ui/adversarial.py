"""Tables, figures and texts of the adversarial page: the thesis's embedding attack and the
masked-LM substitution attack on explanations (after Ghorbani, Abid & Zou 2019, arXiv 1710.10547),
with Rank Change, Top-k Sum Change, Probability Change, Spearman's rho and success per method.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from core.numbers import fixed
from ui.charts import style
from ui.heatmap import heatmap_html, peak
from ui.text import THESIS, plain
from ui.theme import current

ATTACKS = {
    "embedding": "embedding perturbation (thesis)",
    "substitution": "word substitution (masked LM)",
}
OBJECTIVES = {
    "unconstrained": "unconstrained: keep the class",
    "constrained": "constrained: also keep the probability",
}
_MARK = "background:#fff3b0;border-bottom:2px solid #d55e00;font-weight:600;padding:0 2px;border-radius:2px;"
_TOP = "border:2px solid #1b1b1b;padding:0 2px;border-radius:3px;"


def how_to_read() -> None:
    st.markdown(
        f"- **Embedding perturbation** (the attack of {THESIS}): a perturbation of each word's input embedding, at most "
        "ε per coordinate, found by gradient ascent on *minus the attacked explanation's scores of the original "
        "top-k words* (k = 15% of the words, rounded down, at least 1). **Unconstrained** rejects any step that "
        "changes the predicted class; **constrained** (the thesis's objective) subtracts the squared change of the "
        "predicted class's probability. Only the gradient methods are differentiable and can be attacked this way. "
        "The attacked text shows each perturbed word as its nearest vocabulary word (cosine similarity): the text "
        "the perturbation is closest to, not the model's real input.\n"
        "- **Word substitution**: replaces up to a budget of words, never the original top-k words, by the masked "
        "LM's fill-ins, keeping the class and the probability within a tolerance, and keeps the substitutions that "
        "push the top-k words furthest down. A fill-in must be a word (no bare punctuation) whose input embedding "
        "is close to the replaced word's (cosine at least *min similarity*, 0.2 by default); antonyms can pass "
        "that check, so the kept prediction is the guard against meaning flips. "
        "Every method can be attacked; perturbation methods cost more. "
        "Each round explains 12 of the candidates, drawn at random (set *explained per round* to 0 for every one).\n"
        "- **Rank Change**: share of the k top positions holding another word afterwards (higher: more fragile). "
        "**Top-k Sum Change**: drop of the scores at the original top-k words, in the method's own unit (not "
        "comparable across methods). **Probability Change**: original minus attacked probability of the predicted "
        "class (near 0: a fair attack). **Success**: the class is kept and at least one top-k position changed.\n"
        "- The thesis reports Rank Change above 40% (often 80–100%) for all three gradient methods, and the "
        "constrained objective keeping the probability change near 0. The *paper* preset uses its 500 steps; "
        "*quick* runs 60 steps for interactive use."
    )


def output_names(head: str) -> tuple[str, str]:
    """(symbol, change measure) of the explained output: a probability p and the thesis's
    Probability Change, or a regression head's score f and its Score Change."""
    return ("f", "Score Change") if head == "regression" else ("p", "Probability Change")


def measure_columns(head: str = "single_label") -> dict:
    """How the measure tables show their numbers, as the line under each method does: Rank Change
    and success rate in percent, signed changes and rho with their sign."""
    change = output_names(head)[1]
    number = st.column_config.NumberColumn
    return {
        "Rank Change": number(format="percent"),
        "success rate": number(format="percent"),
        "Top-k Sum Change": number(format="%+.3g"),
        change: number(format="%+.4f"),
        f"|{change}|": number(format="%.4f"),
        "Spearman ρ": number(format="%+.2f"),
    }


def shown_measures(frame: pd.DataFrame, head: str = "single_label") -> pd.DataFrame:
    """The measure table as shown: the signed change rounded to the four decimals it is shown at,
    so that a change of -1e-6 reads +0.0000 rather than -0.0000. The download keeps the exact
    numbers."""
    change = output_names(head)[1]
    if change not in frame:
        return frame
    return frame.assign(**{change: frame[change].round(4) + 0.0})


def measure_rows(per_method: dict, label: Callable[[int], str], head: str = "single_label") -> list[dict]:
    symbol, change = output_names(head)
    rows = []
    for method, result in per_method.items():
        measures = result.measures()
        rows.append(
            {
                "method": method,
                "Rank Change": measures["rank_change"],
                "Top-k Sum Change": measures["topk_sum_change"],
                change: measures["probability_change"],
                "Spearman ρ": measures["spearman"],
                "success": measures["success"],
                "k": result.k,
                "class": label(result.target),
                f"{symbol} before": result.original_probabilities[result.target],
                f"{symbol} after": result.attacked_probabilities[result.target],
                "class after": label(result.attacked_predicted),
                "steps": result.steps,
                "runtime (s)": round(result.runtime_s, 2),
                "forward passes": result.forward_passes,
                "backward passes": result.backward_passes,
            }
        )
    return rows


def text_html(words: Sequence[str], marked: Sequence[bool], style: str, title: str) -> str:
    """The words as plain escaped text, the marked ones highlighted."""
    spans = " ".join(
        f'<span style="{style}" title="{html.escape(title)}">{html.escape(w)}</span>' if m else html.escape(w)
        for w, m in zip(words, marked)
    )
    return f'<div class="adv-text" style="font-size:1.05rem;line-height:1.9;margin:0.2rem 0">{spans}</div>'


def show_example(per_method: dict, label: Callable[[int], str], head: str = "single_label") -> None:
    """Per method: original text and heatmap, then attacked text (changes marked) and heatmap."""
    symbol, change = output_names(head)
    for method, result in per_method.items():
        example_words = result.original.words
        segment_ids = result.example.segment_ids
        st.markdown(f"#### {plain(method)}")
        measures = result.measures()
        rho = "n/a" if measures["spearman"] is None else fixed(measures["spearman"], 2, signed=True)
        st.caption(
            f"Rank Change {measures['rank_change']:.0%} · Top-k Sum Change {measures['topk_sum_change']:+.3g} · "
            f"{change} {fixed(measures['probability_change'], 4, signed=True)} · Spearman ρ {rho} · "
            f"{'success' if measures['success'] else 'no success'} · k = {result.k} · "
            f"{result.runtime_s:.1f} s, {result.forward_passes:,} forward / {result.backward_passes:,} backward passes"
        )
        top = set(result.top_k)
        st.markdown(
            f"**Original** — {plain(label(result.target))} {symbol} = "
            f"{result.original_probabilities[result.target]:.3f}; "
            "outlined: the top-k words under attack"
        )
        st.html(text_html(example_words, [i in top for i in range(len(example_words))], _TOP, "original top-k word"))
        scale = max(peak(result.original.scores), peak(result.attacked.scores))
        st.caption(f"Both heatmaps share one colour scale: the larger of their two peaks (±{scale:.3g}).")
        st.html(heatmap_html(example_words, segment_ids, {"original": result.original}, scale=scale))
        note = (
            "nearest vocabulary words of the perturbed embeddings"
            if result.attack == "embedding"
            else "substituted words"
        )
        st.markdown(f"{attacked_line(result, label, head)}; marked: {note}")
        st.html(text_html(result.attacked.words, result.changed, _MARK, "changed by the attack"))
        st.html(heatmap_html(result.attacked.words, segment_ids, {"attacked": result.attacked}, scale=scale))


def attacked_line(result, label: Callable[[int], str], head: str = "single_label") -> str:
    """The attacked text's explained output, named by the label it belongs to (the attacked
    label), and the label the model now ranks first where that changed."""
    symbol = output_names(head)[0]
    line = f"**Attacked** — {plain(label(result.target))} {symbol} = {result.attacked_probabilities[result.target]:.3f}"
    if head != "regression" and result.attacked_predicted != result.target:
        first = "predicted class" if head == "single_label" else "most probable label"
        line += f" (the {first} is now {plain(label(result.attacked_predicted))})"
    return line


def trace_figure(per_method: dict, head: str = "single_label") -> go.Figure:
    """Each method's attack distance (solid) and the explained output (dotted) per step: the
    predicted class's probability in [0, 1], or a regression head's score on its own scale."""
    theme = current()
    figure = go.Figure()
    for i, (method, result) in enumerate(per_method.items()):
        colour = theme.method_colour(method, i)
        for series, dash in (("distance", "solid"), ("probability", "dot")):
            values = result.trace.get(series, ())
            figure.add_trace(
                go.Scatter(
                    y=list(values),
                    name=f"{method}: {series}",
                    mode="lines",
                    line={"color": colour, "dash": dash},
                    yaxis="y2" if series == "probability" else "y",
                )
            )
    figure.update_layout(
        height=320,
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
        xaxis={"title": "step (a gap: a retry screened out without being explained)"},
        yaxis={"title": "attack distance D (solid)"},
        yaxis2={"overlaying": "y", "side": "right"}
        | (
            {"title": "score (dotted)"}
            if head == "regression"
            else {"title": "predicted-class probability (dotted)", "range": [0, 1]}
        ),
        legend={"orientation": "h", "y": 1.15},
    )
    return style(figure)


def summary_rows(summary: dict, head: str = "single_label") -> list[dict]:
    """One row per method of ``services.attack_summary``, the most fragile first."""
    change = output_names(head)[1]
    rows = []
    for method in sorted(summary, key=lambda m: summary[m]["fragility_rank"]):
        row = summary[method]
        rows.append(
            {
                "fragility rank": row["fragility_rank"],
                "method": method,
                "Rank Change": row["rank_change"]["mean"],
                "Top-k Sum Change": row["topk_sum_change"]["mean"],
                change: row["probability_change"]["mean"],
                f"|{change}|": row["abs_probability_change"],
                "Spearman ρ": row["spearman"]["mean"],
                "success rate": row["success_rate"],
                "n": row["n"],
                "runtime (s)": round(row["runtime_s"], 1),
                "forward passes": row["forward_passes"],
            }
        )
    return rows


def rank_change_figure(rows: list[dict], summary: dict) -> go.Figure:
    """Mean Rank Change per method with its 95% interval and the thesis's 40% line."""
    theme = current()

    def reach(r: dict, end: str) -> float:
        """How far the interval's ``end`` lies from the mean; none drawn without an interval (one
        example)."""
        mean, bound = r["Rank Change"], summary[r["method"]]["rank_change"][end]
        return 0.0 if mean is None or bound is None else abs(bound - mean)

    bars = go.Figure(
        go.Bar(
            x=[r["method"] for r in rows],
            y=[r["Rank Change"] for r in rows],
            error_y={
                "type": "data",
                "array": [reach(r, "high") for r in rows],
                "arrayminus": [reach(r, "low") for r in rows],
            },
            marker_color=theme.series[0],
        )
    )
    bars.add_hline(y=0.4, line_dash="dot", line_color=theme.muted, annotation_text="thesis: lowest value above 40%")
    bars.update_layout(
        height=300, margin={"l": 10, "r": 10, "t": 30, "b": 10}, yaxis={"title": "mean Rank Change", "range": [0, 1.05]}
    )
    return style(bars)


def cost_text(attack: str, attack_params: dict) -> str:
    """What one method and example cost under ``attack``, in passes or explanations."""
    steps = attack_params.get("steps")
    return (
        f"about {steps} forward and backward passes per method and example (integrated gradients: × its attack-time "
        f"steps {attack_params.get('ig_n_steps')})"
        if attack == "embedding"
        else f"one explanation per candidate text: up to {attack_params.get('budget')} rounds × the words × "
        f"{attack_params.get('n_candidates')} fill-ins"
    )

"""Panels for the mask-optimisation explainers on the heatmap page (MaRC, Brinner & Zarrieß 2023;
AML, Barkan et al. 2024).

Their attributions carry ``extras`` the other methods do not have: the rationale spans (runs of
kept words), the optimisation trace (each loss term, the target probability on the masked and on
the complement input, the mean mask, per step) and, for AML, the pre-training summary and the
fine-tuning step that was kept. These helpers draw them: the spans as highlighted phrases, the
trace as a plotly chart, and the input with the masked words greyed out. Every word is escaped.
"""

from __future__ import annotations

import html
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

import services
from core.types import Attribution
from ui.charts import legend_under_axis, style
from ui.text import plain
from ui.theme import current

_PHRASE = "background:#fbe3e6;border:2px solid rgb{colour};border-radius:4px;padding:1px 4px;margin:0 1px;"
_WORD = "padding:1px 2px;"
_SEGMENT_BREAK = "<span style='display:inline-block;width:1.2rem;color:#777'>‖</span>"


def has_mask_extras(attribution: Attribution) -> bool:
    """True for attributions that carry a mask trace and rationale spans (``marc``, ``aml``)."""
    return "trace" in attribution.extras and "rationale_spans" in attribution.extras


def mask_extras_problem(attribution: Attribution) -> str | None:
    """What is wrong with the spans, trace and summary an attribution carries, or None when they
    can be drawn. The explainers' own are always well formed; one read from a file (a session
    bundle) may hold anything."""
    extras, n_words = attribution.extras, len(attribution.words)
    spans, trace = extras["rationale_spans"], extras["trace"]
    if not isinstance(spans, list) or not all(_is_span(span, n_words) for span in spans):
        return f"its rationale spans are not ranges of its {n_words} words"
    if not isinstance(trace, dict) or not all(_is_numbers(values) for values in trace.values()):
        return "its optimisation trace is not a table of numbers"
    if not np.all(np.isfinite(np.asarray(attribution.scores, dtype=float))):
        return "its mask scores are not all finite numbers"
    wrong = [name for name, kind in _SUMMARY_TYPES.items() if name in extras and not _is_a(extras[name], kind)]
    pretraining = extras.get("pretraining")
    if pretraining and not (
        isinstance(pretraining, dict)
        and all(_is_a(pretraining.get(name), kind) for name, kind in _PRETRAINING_TYPES.items())
    ):
        wrong.append("pretraining")
    return f"malformed {', '.join(wrong)}" if wrong else None


_NUMBER = numbers.Real
_SUMMARY_TYPES: dict[str, Any] = {
    "span_threshold": _NUMBER,
    "selected_step": numbers.Integral,
    "select_by": (str, type(None)),
    "early_stopped": numbers.Integral,
    "p_masked": _NUMBER,
    "p_complement": _NUMBER,
    "trace_terms": "strings",
    "rationale": "numbers",
}
_PRETRAINING_TYPES: dict[str, Any] = {"n_examples": numbers.Integral, "source": str, "runtime_s": _NUMBER}


def _is_a(value: object, kind: Any) -> bool:
    if kind == "numbers":
        return _is_numbers(value)
    if kind == "strings":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    return isinstance(value, kind)


def _is_numbers(values: object) -> bool:
    return isinstance(values, list) and all(isinstance(v, _NUMBER) for v in values)


def _is_span(span: object, n_words: int) -> bool:
    """A [start, end) word range with 0 <= start < end <= n_words."""
    return (
        isinstance(span, (list, tuple))
        and len(span) == 2
        and all(isinstance(bound, int) for bound in span)
        and 0 <= span[0] < span[1] <= n_words
    )


def _breaks(segment_ids: Sequence[int] | None, n: int) -> set[int]:
    """Word indices that start a new segment (the hypothesis of a pair)."""
    if not segment_ids:
        return set()
    return {i for i in range(1, n) if segment_ids[i] != segment_ids[i - 1]}


def spans_html(
    words: Sequence[str],
    spans: Sequence[Sequence[int]],
    scores: Sequence[float],
    segment_ids: Sequence[int] | None = None,
) -> str:
    """The text with each rationale span drawn as one boxed phrase (its mean mask on hover); a
    span that is not a word range, or overlaps an earlier one, is drawn as plain words."""
    starts = {int(s): int(e) for s, e in spans if 0 <= int(s) < int(e) <= len(words)}
    breaks = _breaks(segment_ids, len(words))
    parts: list[str] = []
    i = 0
    while i < len(words):
        if i in breaks:
            parts.append(_SEGMENT_BREAK)
        if i in starts:
            end = starts[i]
            phrase = " ".join(html.escape(w) for w in words[i:end])
            mean = float(np.mean(scores[i:end]))
            frame = _PHRASE.format(colour=current().colours.positive)
            parts.append(f"<span style='{frame}' title='words {i + 1}-{end}, mean mask {mean:.3f}'>{phrase}</span>")
            i = end
            continue
        parts.append(f"<span style='{_WORD}'>{html.escape(words[i])}</span>")
        i += 1
    return f"<div style='line-height:2.1;font-size:0.95rem'>{' '.join(parts)}</div>"


def masked_preview_html(
    words: Sequence[str],
    mask: Sequence[float],
    threshold: float = 0.5,
    fill: str | None = None,
    segment_ids: Sequence[int] | None = None,
) -> str:
    """The input as the classifier sees it under the mask: kept words in full colour, the others
    greyed out in proportion to how much of them is removed (or shown as ``fill``, e.g. "[PAD]",
    when the mask is below ``threshold``)."""
    breaks = _breaks(segment_ids, len(words))
    parts: list[str] = []
    for i, (word, value) in enumerate(zip(words, mask)):
        if i in breaks:
            parts.append(_SEGMENT_BREAK)
        value = float(np.clip(value, 0.0, 1.0))
        shown = fill if fill is not None and value < threshold else word
        grey = round(170 * (1 - value))
        decoration = "line-through" if value < threshold and fill is None else "none"
        css = f"{_WORD}color:rgb({grey},{grey},{grey});text-decoration:{decoration};opacity:{0.35 + 0.65 * value:.2f}"
        title = html.escape(f"{word}: mask {value:.3f}", quote=True)
        parts.append(f"<span style='{css}' title='{title}'>{html.escape(shown)}</span>")
    return f"<div style='line-height:2.1;font-size:0.95rem'>{' '.join(parts)}</div>"


def trace_figure(trace: dict[str, list[float]], terms: Sequence[str], selected_step: int | None = None) -> go.Figure:
    """Two panels over the optimisation steps: the loss and its terms (top); the target
    probability on the masked and the complement input, the mean mask and, for fAML, the selection
    metric (bottom). A dotted line marks the kept step."""
    theme = current()
    steps = trace.get("step", [])
    figure = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.08,
        subplot_titles=("loss terms", "probabilities and mask"),
    )
    figure.add_trace(
        go.Scatter(x=steps, y=trace.get("loss", []), name="loss", line={"color": theme.ink, "width": 3}), 1, 1
    )
    for colour, term in zip(theme.series, terms):
        if term in trace:
            figure.add_trace(go.Scatter(x=steps, y=trace[term], name=term, line={"color": colour}), 1, 1)
    lower = (
        ("p_masked", "p(target | masked)", theme.rgb("positive"), "solid"),
        ("p_complement", "p(target | complement)", theme.rgb("negative"), "solid"),
        ("mean_mask", "mean mask", theme.muted, "dash"),
        ("selection_metric", "selection metric", theme.series[2], "dot"),
    )
    for key, name, colour, dash in lower:
        if key in trace:
            figure.add_trace(go.Scatter(x=steps, y=trace[key], name=name, line={"color": colour, "dash": dash}), 2, 1)
    if selected_step is not None and len(steps) > 1:
        for row in (1, 2):
            figure.add_vline(x=selected_step, line={"dash": "dot", "color": theme.muted}, row=row, col=1)
    figure.update_layout(margin={"l": 0, "r": 10, "t": 30, "b": 10})
    legend_under_axis(figure, 460, 30)
    figure.update_xaxes(title_text="step", row=2, col=1)
    return style(figure)


def summary_rows(attribution: Attribution) -> list[dict[str, Any]]:
    """What the optimisation did, as label/value rows (steps run, early stop, kept step,
    pre-training)."""
    extras = attribution.extras
    trace = extras.get("trace", {})
    rows = [
        {"": "steps", "value": str(len(trace.get("step", [])))},
        {"": "rationale spans", "value": str(len(extras.get("rationale_spans", [])))},
        {"": "words kept (mask ≥ threshold)", "value": str(int(np.sum(extras.get("rationale", []))))},
    ]
    at = extras.get("selected_step", -1)
    for name, label in (("p_masked", "p(target | masked input)"), ("p_complement", "p(target | complement input)")):
        value = extras.get(name, trace[name][at] if trace.get(name) else None)
        if value is not None:
            rows.append({"": label, "value": f"{value:.3f}"})
    if "early_stopped" in extras:
        rows.append({"": "early stop", "value": "yes" if extras["early_stopped"] else "no (step budget)"})
    if "selected_step" in extras:
        how = f" by {extras['select_by']}" if extras.get("select_by") else ""
        rows.append({"": "kept step", "value": f"{extras['selected_step']}{how}"})
    pretraining = extras.get("pretraining")
    if pretraining:
        rows.append({"": "pre-trained on", "value": f"{pretraining['n_examples']} examples of {pretraining['source']}"})
        rows.append({"": "pre-training time", "value": f"{pretraining['runtime_s']:.1f} s (once per model)"})
    return rows


def render_mask_extras(attribution: Attribution, segment_ids: Sequence[int] | None = None) -> None:
    """One expander for a MaRC or AML attribution: its rationale spans drawn as phrases, the input
    with the masked words greyed out (and as the classifier sees it), the trace chart and a
    summary."""
    extras = attribution.extras
    key = attribution.method
    problem = mask_extras_problem(attribution)
    if problem is not None:
        st.caption(f"{plain(key)}: its optimisation details are not shown: {problem}.")
        return
    threshold = extras.get("span_threshold", 0.5)
    pretraining = extras.get("pretraining") or {}
    if pretraining.get("on_explained_example"):
        st.warning(
            f"{key}: no training split was found for this model (set ATTRIBUTION_DATA_DIR to the data folder), so "
            "the attribution model was pre-trained on the explained example itself. That is not Barkan et al.'s pAML: "
            "treat this map as a per-example fit."
        )
    with st.expander(f"{key}: rationale spans, masked input and optimisation trace"):
        st.markdown(f"**Rationale spans** (words with mask ≥ {threshold:.2f}, drawn as phrases)")
        st.html(spans_html(attribution.words, extras["rationale_spans"], attribution.scores, segment_ids))
        st.markdown("**Masked input** (greyed words are blended toward the filler token; hover for the mask)")
        st.html(masked_preview_html(attribution.words, attribution.scores, threshold, None, segment_ids))
        filler = next((m.mask_filler for m in services.methods() if m.key == key), None)
        if filler is not None:
            st.caption("As the classifier sees it, words below the threshold replaced:")
            st.html(masked_preview_html(attribution.words, attribution.scores, threshold, filler, segment_ids))
        st.plotly_chart(
            trace_figure(extras["trace"], extras.get("trace_terms", ()), extras.get("selected_step")),
            key=f"heatmaps.trace.{key}",
            config={"displayModeBar": False},
        )
        st.dataframe(summary_rows(attribution), hide_index=True, key=f"heatmaps.mask_summary.{key}")

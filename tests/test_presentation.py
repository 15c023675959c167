"""The presentation setting reaches every chart and colour-coded view (issue 18 item 3).

Every chart builder is run in both themes and its figure read back: in the presentation theme
its type is 18 px (titles 24), its scatter traces default to 3.5 px lines and every colour it
draws is one of ``ui.theme.PRESENTATION``'s; in the default theme the type is left to
Streamlit (titles 15) and every colour is one of ``DEFAULT``'s. The coloured HTML (heatmaps,
sanity thumbnails, mask spans, best-cell highlights) and the exports follow the same theme, and
two pages opened with ``?present=1`` send the presentation figures to the browser.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
from streamlit.testing.v1 import AppTest

import services
from core.types import Attribution
from metrics.base import MetricResult, Summary
from ui import adversarial, agreement, explorer, faithfulness, mask_panels, rationales, roar, sanity, theme
from ui.charts import band_trace, curve_layout, probability_chart
from ui.export import Heatmap, heatmap_document, heatmap_latex
from ui.heatmap import colour, heatmap_html

APP = Path(__file__).resolve().parents[1] / "app.py"
THEMES = (theme.DEFAULT, theme.PRESENTATION)
COLOUR = re.compile(r"#[0-9a-fA-F]{6}|#[0-9a-fA-F]{3}|rgba?\([^)]*\)")


def rgb(text: str) -> tuple[int, int, int]:
    """``#rrggbb``, ``#rgb``, ``rgb(r, g, b)`` or ``rgba(r, g, b, a)`` as its three channels."""
    if text.startswith("#") and len(text) == 4:
        return tuple(17 * int(digit, 16) for digit in text[1:])  # type: ignore[return-value]
    if text.startswith("#"):
        return tuple(int(text[i : i + 2], 16) for i in (1, 3, 5))  # type: ignore[return-value]
    r, g, b = (int(float(part)) for part in text[text.index("(") + 1 : text.index(")")].split(",")[:3])
    return r, g, b


def drawn_colours(value: Any, key: str = "") -> set[tuple[int, int, int]]:
    """Every colour a figure's own JSON sets (traces, shapes, layout; the template left out)."""
    found: set[tuple[int, int, int]] = set()
    if isinstance(value, dict):
        for name, item in value.items():
            if name != "template":
                found |= drawn_colours(item, name)
    elif isinstance(value, (list, tuple)):
        for item in value:
            found |= drawn_colours(item, key)
    elif isinstance(value, str) and "color" in key and COLOUR.fullmatch(value):
        found.add(rgb(value))
    return found


def allowed(chosen: theme.Theme) -> set[tuple[int, int, int]]:
    named = [*chosen.series, chosen.baseline, chosen.ink, chosen.muted]
    return {rgb(c) for c in named} | {getattr(chosen.colours, end) for end in ("negative", "neutral", "positive")}


def curves_summary() -> dict:
    cell = {"x": 0.0, "level": "0%", "mean": 0.9, "low": 0.85, "high": 0.95, "n": 3}
    later = {**cell, "x": 0.5, "level": "50%", "mean": 0.7, "low": 0.6, "high": 0.8}
    return {"curves": {"loo_empty": [cell, later], "random": [cell, later]}, "floor": 0.5, "metric": "accuracy"}


def metric_run(value: float) -> Any:
    curve = ((0.0, 0.9), (0.5, value))
    extras = {"fraction_removed": [0.0, 0.5], "inputs": ["a b", "a"]}
    return SimpleNamespace(results={"deletion": MetricResult(value, curve, extras)})


BUILDERS: dict[str, Callable[[], go.Figure]] = {
    "probabilities": lambda: probability_chart(["negative", "positive"], [0.2, 0.8], 1, 0),
    "agreement": lambda: agreement.agreement_figure(["a", "b"], np.array([[1.0, -0.4], [-0.4, 1.0]]), "spearman"),
    "distribution": lambda: explorer.distribution_figure(
        pd.DataFrame({"method": ["loo_empty", "loo_empty", "random"], "value": [0.1, 0.3, 0.2]}), "deletion"
    ),
    "mean curves": lambda: explorer.mean_curve_figure(
        {
            m: {"deletion": {"x": [0, 1], "mean": [0.9, 0.4], "low": [0.8, 0.3], "high": [1.0, 0.5]}}
            for m in ("im", "random")
        },
        "deletion",
    ),
    "faithfulness curve": lambda: curve_layout(
        faithfulness.example_curve({"loo_empty": metric_run(0.3), "random": metric_run(0.6)}, "deletion", 2),
        faithfulness.TITLES[0][1],
        *explorer.curve_axes("deletion"),
    ),
    "faithfulness ranks": lambda: faithfulness.rank_figure(
        ["loo_empty", "im"], ("delete", "mlm"), ({"loo_empty": 1, "im": 2}, {"loo_empty": 2, "im": 1})
    ),
    "rationale thresholds": lambda: rationales.threshold_figure(
        SimpleNamespace(thresholds={"lime": SimpleNamespace(means={0.1: 0.3, 0.5: 0.4}, best=0.5)}), "token_f1"
    ),
    "sanity curves": lambda: sanity.curve_figure(
        SimpleNamespace(methods=("saliency", "random"), examples=(1, 2), mode="cascading"),
        [
            {m: {"spearman": (1.0, 1.0, 1.0)} for m in ("saliency", "random")},
            {m: {"spearman": (0.2, 0.1, 0.3)} for m in ("saliency", "random")},
        ],
        ["original", "head"],
        "spearman",
    ),
    "attack trace": lambda: adversarial.trace_figure(
        {"saliency": SimpleNamespace(trace={"distance": [0.0, 0.4], "probability": [0.9, 0.88]})}
    ),
    "rank change": lambda: adversarial.rank_change_figure(
        [{"method": "saliency", "Rank Change": 0.6}], {"saliency": {"rank_change": {"low": 0.5, "high": 0.7}}}
    ),
    "roar curves": lambda: roar.curve_figure(curves_summary(), "ROAR"),
    "roar sparsity": lambda: roar.sparsity_figure({"loo_empty": {"10%": 0.4, "20%": 0.6}}),
    "mask trace": lambda: mask_panels.trace_figure(
        {
            "step": [0, 1],
            "loss": [1.0, 0.5],
            "sufficiency": [0.4, 0.2],
            "p_masked": [0.6, 0.8],
            "p_complement": [0.5, 0.3],
            "mean_mask": [0.5, 0.4],
        },
        ("sufficiency",),
        1,
    ),
}


@pytest.mark.parametrize("chosen", THEMES, ids=lambda t: t.name)
@pytest.mark.parametrize("name", BUILDERS)
def test_every_chart_builder_draws_in_the_current_theme(name: str, chosen: theme.Theme) -> None:
    with theme.using(chosen):
        figure = BUILDERS[name]()
    layout = figure.layout
    assert layout.title.font.size == chosen.title_size
    assert layout.font.size == chosen.font_size and layout.legend.font.size == chosen.font_size
    assert layout.xaxis.tickfont.size == chosen.font_size and layout.yaxis.title.font.size == chosen.font_size
    if chosen.font_size is not None:
        assert all(a.font.size == chosen.font_size for a in layout.annotations)
        assert layout.template.data.scatter[0].line.width == chosen.line_width == 3.5
        assert list(layout.template.layout.colorway) == list(chosen.series)
    colours = drawn_colours(figure.to_plotly_json())
    if name == "probabilities":  # the other classes' bars: the palette's blue washed toward grey
        washed = tuple(round(0.35 * c + 0.65 * 200) for c in chosen.colours.negative)
        assert colours == {chosen.colours.positive, washed, rgb(chosen.ink)}
    else:
        assert colours and colours <= allowed(chosen), colours - allowed(chosen)


@pytest.mark.parametrize("name", BUILDERS)
def test_the_two_themes_colour_every_chart_differently(name: str) -> None:
    drawn = {}
    for chosen in THEMES:
        with theme.using(chosen):
            drawn[chosen.name] = drawn_colours(BUILDERS[name]().to_plotly_json())
    assert not drawn["default"] & drawn["presentation"]


def test_method_colours_random_band_and_theme_reset() -> None:
    assert theme.PRESENTATION.method_colour("lime", 0) == "#004488"
    assert theme.PRESENTATION.method_colour("lime", 9) == theme.PRESENTATION.series[1]
    assert theme.DEFAULT.method_colour("random", 0) == "#8c8c8c"
    assert band_trace([0], [0], [1], "#004488", "lime").fillcolor == "rgba(0,68,136,0.15)"
    with theme.using(theme.PRESENTATION):
        assert theme.current() is theme.PRESENTATION
    assert theme.current() is theme.DEFAULT


def test_a_roar_band_is_drawn_inside_zero_and_one_and_its_hover_keeps_the_interval() -> None:
    """Two seeds give t-intervals past an accuracy of 0 and 1: the band is drawn clipped, the
    line's hover still gives the interval itself."""
    summary = curves_summary()
    wide = {"x": 0.5, "level": "50%", "mean": 0.6, "low": -0.35, "high": 1.55, "n": 2}
    summary["curves"] = {"loo_empty": [summary["curves"]["loo_empty"][0], wide]}
    band, line = roar.curve_figure(summary, "ROAR").data
    assert list(band.y) == [0.95, 1.0, 0.0, 0.85]  # high edge out, low edge back
    assert list(band.x) == [0.0, 0.5, 0.5, 0.0]
    assert band.mode == "lines"  # no marker at the band's corners
    assert line.customdata[1][2] == " [-0.350, 1.550]"
    assert "%{customdata[2]}" in line.hovertemplate
    assert list(band_trace([0, 1], [-2.0, 0.2], [3.0, 0.4], "#004488", "m").y) == [3.0, 0.4, 0.2, -2.0]


def test_a_roar_chart_with_only_the_100_percent_line_spans_the_metrics_range() -> None:
    """A job being written may have only its 0% and 100% units: no curve has two points yet, and
    plotly's own range for an empty plot (-1 to 4) put the 100% line at the bottom of nothing."""
    summary = {
        **curves_summary(),
        "curves": {"loo_empty": [{**curves_summary()["curves"]["loo_empty"][1], "mean": None}]},
    }
    figure = roar.curve_figure(summary, "ROAR")
    assert not figure.data and list(figure.layout.yaxis.range) == [0, 1] and list(figure.layout.xaxis.range) == [0, 1]
    assert figure.layout.shapes[0].y0 == 0.5  # the 100% line
    assert roar.curve_figure(curves_summary(), "ROAR").layout.yaxis.range is None  # with lines: fitted to them


def test_the_rank_chart_writes_each_name_in_a_right_margin_sized_for_the_longest() -> None:
    """The names at the lines' right-hand ends are drawn unclipped into a right margin that grows with
    the longest name and the font (a name at each end of a clipped axis range lost up to 47 px at
    1,024 px, ``tests/test_browser_layout.py``); a long name is cut, and every name is escaped."""
    figure = BUILDERS["faithfulness ranks"]()
    axis = figure.layout.xaxis
    assert list(axis.ticktext) == ["delete the words", "masked-LM fill-in"] and list(axis.tickvals) == [0, 1]
    assert axis.range[0] < 0 and axis.range[1] > 1  # the markers and the ticks' labels inside the plot
    assert [(tuple(t.text), t.textposition, t.cliponaxis) for t in figure.data] == [
        (("", "loo_empty"), "middle right", False),
        (("", "im"), "middle right", False),
    ]

    def margin(names: list[str]) -> int:
        ranks = {name: i + 1 for i, name in enumerate(names)}
        return faithfulness.rank_figure(names, ("delete", "mlm"), (ranks, ranks)).layout.margin.r

    short, long = ["im", "lime"], ["im", "integrated_gradients"]
    assert margin(short) < margin(long)
    with theme.using(theme.PRESENTATION):
        larger = margin(long)
    assert larger > margin(long)
    odd = "<b>" + "x" * 40
    drawn = faithfulness.rank_figure([odd], ("delete", "mlm"), ({odd: 1}, {odd: 1})).data[0]
    assert drawn.text[1] == "&lt;b&gt;" + "x" * (faithfulness.RANK_LABEL_CHARS - 4) + "…"
    assert drawn.name == "&lt;b&gt;" + "x" * 40  # the legend names it in full


def test_a_mean_curve_is_labelled_with_what_its_metric_plots() -> None:
    """A comprehensiveness curve plots a drop per bin of top words, not the class probability over
    a fraction of the words; the explorer and the faithfulness page label each metric alike."""
    curve = {"x": [0.05, 0.5], "mean": [0.1, 0.4], "low": [0.0, 0.3], "high": [0.2, 0.5]}
    labels = {}
    for metric in ("deletion", "comprehensiveness", "sufficiency"):
        layout = explorer.mean_curve_figure({"im": {metric: curve}}, metric).layout
        labels[metric] = (layout.xaxis.title.text, layout.yaxis.title.text, layout.xaxis.tickformat)
    assert labels["comprehensiveness"] == ("top words removed", "p(x) − p(x without them)", ".0%")
    assert labels["sufficiency"] == ("top words kept", "p(x) − p(only them)", ".0%")
    assert labels["deletion"][1] == "p(target)" and labels["deletion"][2] in (None, "")
    slices = faithfulness.slice_curves(slice_result({"im": {m: curve for m in labels}}), "single_label")
    slice_axes = {
        m: (f.layout.xaxis.title.text, f.layout.yaxis.title.text, f.layout.xaxis.tickformat) for m, f in slices.items()
    }
    assert all(slice_axes[m] == labels[m][:2] + (labels[m][2] or "",) for m in labels)


def test_a_regression_heads_curves_are_of_its_score() -> None:
    """A regression head explains a raw score: its curves are labelled as a score (the bands'
    range is the engine's business: ``tests/test_metrics_contract.py``)."""
    wide = {"x": [0.0, 1.0], "mean": [1.1, 0.5], "low": [0.9, -0.1], "high": [1.3, 1.1]}
    figure = explorer.mean_curve_figure({"im": {"deletion": wide}}, "deletion", head="regression")
    assert list(figure.data[0].y) == [1.3, 1.1, -0.1, 0.9]
    assert figure.layout.yaxis.title.text == "score"
    curves = {m: wide for m in ("deletion", "comprehensiveness", "sufficiency")}
    slices = faithfulness.slice_curves(slice_result({"im": curves}), "regression")
    assert slices["comprehensiveness"].layout.yaxis.title.text == "f(x) − f(x without them)"
    assert slices["sufficiency"].layout.yaxis.title.text == "f(x) − f(only them)"
    assert slices["comprehensiveness"].layout.xaxis.tickformat == ".0%"  # the x axis is still a share
    assert all("p(" not in f.layout.yaxis.title.text for f in slices.values())


def slice_result(curves: dict) -> services.SliceResult:
    """A slice result holding only mean curves (and their summaries), as the curve figures read it."""
    summary = {m: {k: Summary(0.5, 0.4, 0.6, 3) for k in per} for m, per in curves.items()}
    return services.SliceResult({}, summary, curves, {}, 0.0, 0)


def attribution(words: tuple[str, ...], scores: list[float]) -> Attribution:
    return Attribution(method="m", example_id="t", target=1, words=words, scores=np.array(scores))


def test_heatmaps_and_coloured_html_follow_the_theme() -> None:
    words = ("good", "bad")
    rows = {"m": attribution(words, [1.0, -1.0])}
    with theme.using(theme.PRESENTATION):
        body = heatmap_html(words, (0, 0), rows)
        thumb = sanity.thumbnail("head", 0.5, words, np.array([1.0, -1.0]), "spearman")
        spans = mask_panels.spans_html(words, [(0, 1)], [0.9, 0.1])
        styles = faithfulness.best_styles(pd.DataFrame({"c": [0.1, 0.2]}), {"c": ("deletion", pd.Series([0.1, 0.2]))})
    for html in (body, thumb):
        assert "#67001f" in html and "#053061" in html  # high_contrast's ends
        assert colour(1.0, "default") not in html and colour(-1.0, "default") not in html
    assert "rgb(103, 0, 31)" in spans
    with theme.using(theme.PRESENTATION):
        removed = roar.removal_html(["good", "film"], {"0": "", "1": "movie"})
    assert removed.count("rgb(103, 0, 31)") == 2 and "color:#004488" in removed
    assert list(styles["c"]) == [theme.PRESENTATION.highlight, ""]  # deletion: lower is better
    plain = heatmap_html(words, (0, 0), rows)
    assert "#b2182b" in plain and "#67001f" not in plain


def shown_layout(drawn: str, column_px: float) -> str:
    """The layout a page's column of ``column_px`` shows: the last whose container rule applies."""
    import re

    limits = [float(px) for px in re.findall(r"@container \(max-width:([0-9.]+)px\)\{\.hm-\w+>\.hm-fit-", drawn)]
    layouts = drawn.split('<div class="hm-fit hm-fit-')[1:]
    shown = max((k + 1 for k, limit in enumerate(limits) if column_px <= limit), default=0)
    return layouts[shown]


def test_heatmap_lines_fit_the_column_they_are_shown_in() -> None:
    """Lines broke at a fixed number of characters, so at 1,024 px (a 564 px column) a line ran
    past the column, and at the presentation font only 4 of a line's words were in sight: the
    page now draws the heatmap in several line widths and shows the widest that fits its column,
    each layout holding every word once per row."""
    words = tuple(f"word{i:02d}" for i in range(40))  # 6 characters each
    rows = {"m": attribution(words, list(np.linspace(-1.0, 1.0, 40))), "random": attribution(words, [0.5] * 40)}
    per_line = {}
    for drawn in THEMES:
        with theme.using(drawn):
            page = heatmap_html(words, (0,) * 40, rows)
            assert heatmap_html(words, (0,) * 40, rows, line_chars=100).count("hm-fit") == 0  # a file: one layout
        for layout in page.split('<div class="hm-fit hm-fit-')[1:]:
            assert all(layout.count(f'title="{word}: ') == 2 for word in words)  # every word once in each row
        for column_px in (1000, 564, 380):
            layout = shown_layout(page, column_px)
            per_line[drawn.name, column_px] = len(words) / layout.count('class="hm-block"')
            # a word cell is about 0.45 of the font wide per character and 13 px of padding; the label
            # 11 rem, 6.5 rem in a column of 700 px or less
            font_px = drawn.root_px * drawn.heatmap_rem
            needed = (11 if column_px > 700 else 6.5) * drawn.root_px + per_line[drawn.name, column_px] * (
                6 * 0.45 * font_px + 13
            )
            assert needed <= column_px or per_line[drawn.name, column_px] <= 2, (drawn.name, column_px, needed)
    for column_px in (1000, 564, 380):
        assert per_line["presentation", column_px] < per_line["default", column_px]
    assert per_line["default", 1000] > per_line["default", 564] > per_line["default", 380]


def test_an_exported_heatmap_keeps_the_palette_it_was_drawn_in() -> None:
    words = ("good", "bad")
    with theme.using(theme.PRESENTATION):
        drawn = Heatmap(words, (0, 0), {"m": attribution(words, [1.0, -1.0])})
    assert drawn.palette == "high_contrast"
    # exported later, outside the run that drew it: still the presentation colours
    assert "#67001f" in heatmap_document(drawn) and "#b2182b" not in heatmap_document(drawn)
    assert "103,0,31" in heatmap_latex(drawn) and "178,24,43" not in heatmap_latex(drawn)
    assert Heatmap(words, (0, 0), {}).palette == "default"


# --------------------------------------------------------------------------- pages


def chart_specs(at: AppTest) -> dict[str, dict]:
    return {chart.key: json.loads(chart.proto.spec) for chart in at.get("plotly_chart")}


def spec_colours(spec: dict) -> set[tuple[int, int, int]]:
    return drawn_colours({"data": spec["data"], "layout": spec["layout"]})


@pytest.mark.parametrize("present", [True, False], ids=["present", "plain"])
def test_the_roar_page_sends_the_themed_figures(present: bool, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("ATTRIBUTION_RESULTS_DIR", str(tmp_path / "empty-results"))
    at = AppTest.from_file(str(APP), default_timeout=300)
    if present:
        at.query_params["present"] = "1"
    at.session_state["heatmaps.methods"] = []  # the home page computes nothing
    at.run()
    at.switch_page("app_pages/roar.py").run()
    assert not at.exception, at.exception
    chosen = theme.PRESENTATION if present else theme.DEFAULT
    specs = chart_specs(at)
    assert {"roar.job.curve", "roar.sparsity"} <= set(specs)
    for spec in specs.values():
        assert spec["layout"]["title"]["font"]["size"] == chosen.title_size
        assert spec["layout"].get("font", {}).get("size") == chosen.font_size
        assert spec_colours(spec) <= allowed(chosen)
    assert rgb(chosen.series[0]) in spec_colours(specs["roar.job.curve"])


def test_the_faithfulness_page_in_presentation_mode(toy_bert_folder: str) -> None:
    at = AppTest.from_file(str(APP), default_timeout=300)
    at.query_params["present"] = "1"
    at.session_state["sidebar.model_path"] = toy_bert_folder
    at.session_state["heatmaps.methods"] = ["loo_empty", "random"]
    at.run()
    assert not at.exception, at.exception
    heatmap_page = chart_specs(at)  # the probability bars and the agreement matrix
    assert {"heatmaps.probabilities", "heatmaps.agreement"} <= set(heatmap_page)
    matrix = heatmap_page["heatmaps.agreement"]["data"][0]
    assert [rgb(c) for _, c in matrix["colorscale"]] == [(5, 48, 97), (255, 255, 255), (103, 0, 31)]
    assert any("#67001f" in h.value for h in at.html if 'data-role="heatmap"' in h.value)
    at.switch_page("app_pages/faithfulness.py").run()
    at.multiselect(key="faithfulness.methods").set_value(["loo_empty", "random"]).run()
    assert not at.exception and not at.error
    specs = chart_specs(at)
    assert len(specs) == 4
    for spec in specs.values():
        assert spec["layout"]["font"]["size"] == 18 and spec["layout"]["xaxis"]["tickfont"]["size"] == 18
        lines = {rgb(t["line"]["color"]) for t in spec["data"]}
        assert lines == {rgb("#004488"), rgb(theme.PRESENTATION.baseline)}  # loo_empty, random

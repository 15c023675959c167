"""Rendering fixes: non-finite mask scores, flags in the cost notes, infinite scores at full colour,
``&`` in plain text, thumbnails' text contrast, the legend's note on unsigned methods, explicit
shared scales and method cards that match the explainers' defaults."""

from __future__ import annotations

import math

import numpy as np

from core.types import Attribution
from ui import mask_panels, sanity
from ui.export import Heatmap, _rgb, heatmap_latex
from ui.heatmap import colour, cost_rows, heatmap_html, legend_html, scaled
from ui.method_notes import NOTES
from ui.text import plain

WHITE_TEXT = "color:#ffffff"


def record(method: str, words: tuple[str, ...], scores: list[float], **extras) -> Attribution:
    return Attribution(method, "x", 1, words, np.array(scores, dtype=np.float64), extras=extras)


def test_a_nan_mask_score_is_named_not_drawn() -> None:
    base = {"trace": {"step": [0], "loss": [1.0]}, "rationale_spans": [[0, 1]]}
    nan = record("marc", ("a", "b"), [0.9, math.nan], **base)
    assert mask_panels.mask_extras_problem(nan) == "its mask scores are not all finite numbers"
    assert mask_panels.mask_extras_problem(record("marc", ("a", "b"), [0.9, 0.1], **base)) is None


def test_flags_in_the_cost_notes_read_yes_or_no() -> None:
    row = record("marc", ("a",), [1.0], early_stopped=True, exact=False, steps=300)
    [cost] = cost_rows({"marc": row})
    assert cost["notes"] == "early stopped yes, exact no, steps 300"


def test_infinite_scores_are_drawn_at_full_colour_and_nan_neutral() -> None:
    assert scaled(math.inf, 2.0) == 1.0 and scaled(-math.inf, 2.0) == -1.0 and scaled(math.inf, 0.0) == 1.0
    assert scaled(math.nan, 2.0) == 0.0 and scaled(1.0, 2.0) == 0.5 and scaled(1.0, 0.0) == 0.0
    words = ("up", "down", "gap", "one")
    drawn = heatmap_html(words, (0,) * 4, {"m": record("m", words, [math.inf, -math.inf, math.nan, 1.0])})
    cells = drawn.split('class="hm-cell"')[1:5]
    assert f"background:{colour(1.0)};" in cells[0] and WHITE_TEXT in cells[0]
    assert f"background:{colour(-1.0)};" in cells[1] and WHITE_TEXT in cells[1]
    assert f"background:{colour(0.0)};" in cells[2] and WHITE_TEXT not in cells[2]


def test_infinite_scores_are_full_colour_in_the_latex_export() -> None:
    words = ("up", "down", "zero")
    latex = heatmap_latex(Heatmap(words, (0, 0, 0), {"m": record("m", words, [math.inf, -math.inf, 0.0])}))
    assert rf"\colorbox[RGB]{{{_rgb(colour(1.0))}}}{{\strut\textcolor{{white}}{{up}}}}" in latex
    assert rf"\colorbox[RGB]{{{_rgb(colour(-1.0))}}}{{\strut\textcolor{{white}}{{down}}}}" in latex


def test_plain_escapes_ampersands_so_entities_show_as_typed() -> None:
    assert plain("&amp;") == r"\&amp;"
    assert plain("R&D <b>") == r"R\&D \<b\>"


def test_sanity_thumbnails_put_white_text_on_strong_cells() -> None:
    thumb = sanity.thumbnail("head", 0.5, ("strong", "weak"), np.array([1.0, 0.01]), "spearman")
    strong, weak = thumb.split("<span title=")[1:3]
    assert f"background:{colour(1.0)};{WHITE_TEXT}" in strong
    assert WHITE_TEXT not in weak and "color:#1b1b1b" in weak


def test_the_legend_says_unsigned_methods_are_red_only() -> None:
    legend = legend_html(False, 1.0, None)
    assert "blue: against the target, red: for it; methods without a sign (saliency's norm, attention, random)" in (
        legend
    )
    assert "are red only: size, not direction" in legend


def test_an_explicit_scale_colours_every_row_on_it() -> None:
    words = ("a", "b")
    rows = {"m": record("m", words, [1.0, -0.5])}
    drawn = heatmap_html(words, (0, 0), rows, scale=2.0, line_chars=80)
    cells = drawn.split('class="hm-cell"')[1:3]
    assert f"background:{colour(0.5)};" in cells[0] and f"background:{colour(-0.25)};" in cells[1]
    assert "+2" in drawn and "one scale for all rows" in drawn
    own = heatmap_html(words, (0, 0), rows, line_chars=80)
    assert f"background:{colour(1.0)};" in own.split('class="hm-cell"')[1]


def test_method_cards_match_the_explainers_defaults() -> None:
    assert r"z_c(e) - z_c(e')" in NOTES["deeplift"].formula and "logit" in NOTES["deeplift"].computes
    marc = NOTES["marc"]
    assert r"\mathrm{sigmoid}" in marc.formula and r"\bar{m}^2" in marc.formula and "PAD" in marc.formula
    assert r"\log\big(1 - p_c" in marc.formula and r"\lVert m \rVert_1" not in marc.formula
    assert r"\log(1 - a_i)" in NOTES["aml"].formula and r"\lVert" not in NOTES["aml"].formula
    occlusion = NOTES["occlusion"].computes
    assert "Window 1 is leave-one-out." not in occlusion and "log-odds" in occlusion and "[MASK]" in occlusion

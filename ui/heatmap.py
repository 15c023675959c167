"""Token heatmaps as HTML: one row per method under the same words, every token escaped.

Colours follow a diverging, colour-blind-safe palette (the ends and middle of ColorBrewer's
RdBu; the presentation setting's is darker, ``ui.theme``): red cells support the target class,
blue cells speak against it, white is zero. The raw
score shows on hover (``title``), words of the human rationale are outlined, and a sentence pair
is drawn as two blocks, premise then hypothesis. Long texts wrap into blocks of whole words, each
block showing every method's row so the rows stay aligned word by word.
"""

from __future__ import annotations

import dataclasses
import hashlib
import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.types import Attribution, shared_words
from ui.theme import PALETTES, current

SEGMENT_NAMES = ("Premise", "Hypothesis")

_TABLE = "border-collapse:separate;border-spacing:3px 4px;margin:0 0 0.5rem 0;"
_HEAD = "text-align:right;padding:2px 8px 2px 0;font-weight:600;"
# The label's own box sets the column's width (a table cell's min- and max-width are only hints): as wide
# as the longest label of the table between 11 and 16 rem; a longer label wraps inside it, never over the words.
_LABEL = "width:max-content;min-width:11rem;max-width:16rem;margin-left:auto;overflow-wrap:break-word;"
_CELL = "padding:2px 5px;border-radius:3px;white-space:nowrap;text-align:center;"
_RATIONALE = "outline:2px solid #1b1b1b;outline-offset:-2px;"


@dataclass(frozen=True)
class _Column:
    text: str  # the word, or the subword in the subword view
    word: int
    subword: int | None  # index into subword_scores (None: the column is a whole word)


def colour(value: float, palette: str | None = None) -> str:
    """Background for a score scaled to [-1, 1] in one of ``ui.theme.PALETTES`` (default: the
    current theme's)."""
    chosen = PALETTES[palette or current().palette]
    value = 0.0 if not math.isfinite(value) else max(-1.0, min(1.0, value))
    end = chosen.positive if value > 0 else chosen.negative
    t = abs(value) ** chosen.gamma
    r, g, b = (round(n + t * (e - n)) for n, e in zip(chosen.neutral, end))
    return f"#{r:02x}{g:02x}{b:02x}"


def _text_colour(value: float, palette: str | None = None) -> str:
    white = PALETTES[palette or current().palette].white_text
    return "#ffffff" if math.isfinite(value) and abs(value) > white else "#1b1b1b"


def _reference(attributions: Mapping[str, Attribution]) -> Attribution | None:
    """The first attribution with subword scores: it defines the subword columns."""
    return next((a for a in attributions.values() if a.subword_scores is not None and a.subwords), None)


def _units(words: Sequence[str], reference: Attribution | None) -> list[list[_Column]]:
    """Columns grouped by word: one per word, or one per subword in the subword view."""
    if reference is None:
        return [[_Column(word, w, None)] for w, word in enumerate(words)]
    units: list[list[_Column]] = [[] for _ in words]
    for i, (text, w) in enumerate(zip(reference.subwords, reference.subword_word_ids)):
        units[w].append(_Column(text, w, i))
    return [unit or [_Column(words[w], w, None)] for w, unit in enumerate(units)]


def _is_subword_row(attribution: Attribution, reference: Attribution | None) -> bool:
    return (
        reference is not None
        and attribution.subword_scores is not None
        and attribution.subword_word_ids == reference.subword_word_ids
    )


def _row_values(attribution: Attribution, reference: Attribution | None) -> np.ndarray:
    return attribution.subword_scores if _is_subword_row(attribution, reference) else attribution.scores


def peak(values: np.ndarray) -> float:
    """Largest finite absolute value (0 when there is none)."""
    finite = np.abs(values[np.isfinite(values)])
    return float(finite.max()) if finite.size else 0.0


def _chunks(units: list[list[_Column]], segment_ids: Sequence[int], line_chars: int) -> list[list[list[_Column]]]:
    """Whole words per block: each segment starts a block and wraps into lines of about equal
    width, none much wider than ``line_chars`` characters."""
    chunks: list[list[list[_Column]]] = []
    for segment in dict.fromkeys(segment_ids):
        members = [u for u in units if segment_ids[u[0].word] == segment]
        widths = [sum(len(c.text) + 2 for c in unit) for unit in members]
        budget = math.ceil(sum(widths) / math.ceil(sum(widths) / line_chars))
        chunks.append([])
        width = 0
        for unit, unit_width in zip(members, widths):
            if chunks[-1] and width + unit_width / 2 > budget:
                chunks.append([])
                width = 0
            chunks[-1].append(unit)
            width += unit_width
    return chunks


def scaled(value: float, scale: float) -> float:
    """A score on the colour scale: ``value / scale`` in [-1, 1]; +inf / -inf at full colour (+1 /
    -1, larger than any finite peak), NaN and a zero scale neutral (0)."""
    if math.isnan(value):
        return 0.0
    if math.isinf(value):
        return math.copysign(1.0, value)
    return max(-1.0, min(1.0, value / scale)) if scale > 0 else 0.0


def cell_colours(value: float, palette: str | None = None) -> tuple[str, str]:
    """Background and text colour of a cell whose score is ``value`` on the [-1, 1] scale: strong
    cells get white text."""
    return colour(value, palette), _text_colour(value, palette)


def _cell(text: str, title: str, value: float, scale: float, outlined: bool, palette: str, colspan: int = 1) -> str:
    background, text_colour = cell_colours(scaled(value, scale), palette)
    style = f"{_CELL}background:{background};color:{text_colour};{_RATIONALE if outlined else ''}"
    span = f' colspan="{colspan}"' if colspan > 1 else ""
    return f'<td class="hm-cell"{span} style="{style}" title="{html.escape(title)}">{html.escape(text)}</td>'


def _format(value: float) -> str:
    return f"{value:+.4g}" if math.isfinite(value) else str(value)


def _row(
    key: str,
    attribution: Attribution,
    chunk: list[list[_Column]],
    reference: Attribution | None,
    words: Sequence[str],
    rationale: Sequence[int] | None,
    scale: float,
    palette: str,
) -> str:
    row_peak = peak(_row_values(attribution, reference))
    head = (
        f'<th style="{_HEAD}" title="largest |score| {row_peak:.4g}"><div style="{_LABEL}">{html.escape(key)}'
        f'<span style="font-weight:400;font-size:0.72rem;color:#777;margin-left:0.35rem;white-space:nowrap">'
        f"±{row_peak:.2g}</span></div></th>"
    )
    cells = []
    subword_row = _is_subword_row(attribution, reference)
    for unit in chunk:
        w = unit[0].word
        outlined = bool(rationale is not None and rationale[w])
        if subword_row:
            for column in unit:
                value = float(attribution.subword_scores[column.subword]) if column.subword is not None else math.nan
                title = f"{column.text} ({words[w]}): {_format(value)}"
                cells.append(_cell(column.text, title, value, scale, outlined, palette))
        else:
            value = float(attribution.scores[w])
            cells.append(_cell(words[w], f"{words[w]}: {_format(value)}", value, scale, outlined, palette, len(unit)))
    return f'<tr class="hm-row" data-method="{html.escape(key)}">{head}{"".join(cells)}</tr>'


def heatmap_html(
    words: Sequence[str],
    segment_ids: Sequence[int],
    attributions: Mapping[str, Attribution],
    *,
    rationale: Sequence[int] | None = None,
    subwords: bool = False,
    shared_scale: bool = False,
    line_chars: int | None = None,
    palette: str | None = None,
    hover_hint: bool = True,
    binary: tuple[str, str] | None = None,
    outline_name: str = "human rationale",
    scale: float | None = None,
) -> str:
    """The legend and the heatmap of every attribution (all over the same ``words``) as HTML.

    ``subwords`` shows subword columns where some method has subword scores (the others span
    their word's subwords); ``shared_scale`` colours every row on one scale instead of each on
    its own largest absolute score; ``palette`` is a key of ``ui.theme.PALETTES`` (default: the
    current theme's, so the presentation setting reaches every heatmap); ``hover_hint`` says in the
    legend that a word's title holds its raw score (not in a picture); ``line_chars``: about how
    many characters a line of words holds. Without it (on a page), the heatmap is drawn in
    several line widths and the page shows the one that fits its column (``_layouts``).
    ``binary``: every row is 0/1 (a human rationale, the words a method selects), so the legend
    shows the two values with what they mean (on, off) instead of a colour scale.
    ``outline_name``: what the outlined words (``rationale``) are, as the legend names them.
    ``scale``: colour every row on this one scale (implies ``shared_scale``), e.g. the larger peak
    of two heatmaps drawn apart that should be read on the same scale.
    """
    if not attributions:
        return ""
    palette = palette or current().palette
    reference = _reference(attributions) if subwords else None
    units = _units(words, reference)
    peaks = {key: peak(_row_values(a, reference)) for key, a in attributions.items()}
    shared = max(peaks.values()) if scale is None else scale
    shared_scale = shared_scale or scale is not None
    theme = current()
    table = f"{_TABLE}font-size:{theme.heatmap_rem}rem;"

    def blocks(chunks: list[list[list[_Column]]]) -> str:
        parts, previous = [], None
        for chunk in chunks:
            segment = segment_ids[chunk[0][0].word]
            if len(set(segment_ids)) > 1 and segment != previous:
                parts.append(
                    f'<div class="hm-segment" style="font-weight:600;margin:0.3rem 0">{SEGMENT_NAMES[segment]}</div>'
                )
            previous = segment
            rows = [
                _row(key, a, chunk, reference, words, rationale, shared if shared_scale else peaks[key], palette)
                for key, a in attributions.items()
            ]
            parts.append(f'<table class="hm-block" style="{table}">{"".join(rows)}</table>')
        return "".join(parts)

    if binary is None:
        legend = legend_html(shared_scale, shared, outline_name if rationale is not None else None, palette, hover_hint)
    else:
        legend = binary_legend_html(
            binary, f"{outline_name} compared against" if rationale is not None else None, palette
        )
    if line_chars is not None:
        layouts = [_Layout(_chunks(units, segment_ids, line_chars), 0.0, False)]
    else:
        layouts = _layouts(units, segment_ids, list(attributions), theme)
    if len(layouts) == 1:
        return f'{legend}<div class="hm" data-role="heatmap" style="overflow-x:auto">{blocks(layouts[0].chunks)}</div>'
    drawn = [blocks(layout.chunks) for layout in layouts]
    name = "hm-" + hashlib.sha1("".join(drawn).encode()).hexdigest()[:10]
    rules = [f".{name}>.hm-fit{{display:none}}.{name}>.hm-fit-0{{display:block}}"]
    for k in range(1, len(layouts)):  # a narrower column than layout k-1 needs shows layout k
        below = f"@container (max-width:{layouts[k - 1].needs_px - 0.5:.0f}px)"
        rules.append(f"{below}{{.{name}>.hm-fit-{k - 1}{{display:none}}.{name}>.hm-fit-{k}{{display:block}}}}")
        if layouts[k].narrow_labels and not layouts[k - 1].narrow_labels:  # from here on the labels wrap
            rules.append(
                f"{below}{{.{name} th>div{{min-width:0!important;max-width:{_NARROW_LABEL_REM}rem!important}}}}"
            )
    fits = "".join(f'<div class="hm-fit hm-fit-{k}">{body}</div>' for k, body in enumerate(drawn))
    return (
        f'{legend}<div class="hm {name}" data-role="heatmap" style="overflow-x:auto;container-type:inline-size">'
        f"<style>{''.join(rules)}</style>{fits}</div>"
    )


# Widths in CSS pixels of the heatmap's column the layouts are made for (``_layouts``), and how
# wide a character of a word and a label are in the heatmap's font (measured in chromium with
# Streamlit's font, rounded up: 0.41-0.44 of the font size for words, bold labels near 0.55).
# wide, 1,440 px with the sidebar, 1,024 px without and with it, a tablet, a phone (320 px: 288 px, less in a box)
_COLUMN_PX = (1400, 1000, 760, 560, 400, 240)
# The most layouts a text of more than LONG_TEXT words is drawn in: each holds the whole heatmap
# (about 1.3 KiB per word of 7 methods), so a long review would send megabytes on every rerun.
_LONG_TEXT, _LONG_TEXT_LAYOUTS = 60, 3
_CHAR_EM, _LABEL_EM, _SLACK_PX = 0.45, 0.55, 12
_NARROW_PX, _NARROW_LABEL_REM = 700, 6.5  # columns this narrow or less get labels at most this wide


@dataclass(frozen=True)
class _Layout:
    chunks: list[list[list[_Column]]]  # the lines (blocks) of units
    needs_px: float  # the column width its longest line needs
    narrow_labels: bool  # made for a column where the labels wrap at _NARROW_LABEL_REM


def _layouts(units: list[list[_Column]], segment_ids: Sequence[int], labels: list[str], theme) -> list[_Layout]:
    """The line breaks of the heatmap for columns of several widths, widest first, each with the
    width in pixels its longest line needs: the page shows the widest layout that fits its column
    (a CSS container query), so lines never run past a narrow window or a projector's column.
    Layouts that break the same way are drawn once; a long text gets at most a few."""
    font_px = theme.root_px * theme.heatmap_rem
    unit_px = _CHAR_EM * font_px
    wide_label_px = min(max(max(map(len, labels)) * _LABEL_EM * font_px, 11 * theme.root_px), 16 * theme.root_px) + 8
    narrow_label_px = min(wide_label_px, _NARROW_LABEL_REM * theme.root_px + 8)
    layouts: list[_Layout] = []
    line_chars = theme.line_chars
    for column_px in _COLUMN_PX:
        narrow = column_px <= _NARROW_PX
        label_px = narrow_label_px if narrow else wide_label_px
        line_chars = max(8, min(line_chars, int((column_px - label_px - _SLACK_PX) / unit_px)))
        chunks = _chunks(units, segment_ids, line_chars)
        if layouts and chunks == layouts[-1].chunks:
            continue
        longest = max(sum(len(c.text) + 2 for unit in chunk for c in unit) for chunk in chunks)
        layouts.append(_Layout(chunks, label_px + _SLACK_PX + longest * unit_px, narrow))
    if len(units) > _LONG_TEXT and len(layouts) > _LONG_TEXT_LAYOUTS:
        step = (len(layouts) - 1) / (_LONG_TEXT_LAYOUTS - 1)
        layouts = [layouts[round(k * step)] for k in range(_LONG_TEXT_LAYOUTS)]
    return layouts


_LEGEND = (
    '<div class="hm-legend" style="display:flex;flex-wrap:wrap;align-items:center;gap:0.45rem;'
    'font-size:0.85rem;margin:0.3rem 0 0.6rem 0">'
)


def _key(style: str, text: str) -> str:
    """One entry of a legend: a sample cell drawn in ``style``, then what it means."""
    return f'<span><span style="{_CELL}{style}">word</span> {html.escape(text)}</span>'


def legend_html(
    shared_scale: bool, scale: float, outline: str | None, palette: str | None = None, hover_hint: bool = True
) -> str:
    """Colour bar from 'against the target' (blue) to 'for the target' (red), a note that unsigned
    methods are red only, and what the outlined words are (``outline``; None: no outline)."""
    low, high = (f"−{scale:.3g}", f"+{scale:.3g}") if shared_scale else ("−max", "+max")
    note = "one scale for all rows" if shared_scale else "each row scaled to its largest |score|"
    stops = ",".join(colour(v, palette) for v in (-1.0, -0.5, 0.0, 0.5, 1.0))
    gradient = f"linear-gradient(to right,{stops})"
    return (
        f"{_LEGEND}<span>{low}</span>"
        f'<span style="display:inline-block;width:10rem;height:0.9rem;border:1px solid #ccc;background:{gradient}"></span>'
        f"<span>{high}</span>"
        f'<span style="color:#555;margin:0 1rem 0 0.3rem">blue: against the target, red: for it; '
        f"methods without a sign (saliency's norm, attention, random) are red only: size, not direction ({note}"
        f"{'; hover a word for its raw score' if hover_hint else ''})</span>"
        f"{_key(_RATIONALE, outline) if outline else ''}</div>"
    )


def binary_legend_html(labels: tuple[str, str], outline: str | None, palette: str | None = None) -> str:
    """The legend of rows that are 0/1: a cell of each value with what it means (``labels``: 1,
    0), and what the outlined words are (``outline``; None: no outline)."""
    on, off = (f"background:{colour(v, palette)};color:{_text_colour(v, palette)};" for v in (1.0, 0.0))
    keys = _key(on, labels[0]) + _key(off + "border:1px solid #ccc;", labels[1])
    return f"{_LEGEND}{keys}{_key(_RATIONALE, outline) if outline else ''}</div>"


def cost_rows(attributions: Mapping[str, Attribution]) -> list[dict[str, Any]]:
    """Runtime and passes per method, with scalar extras in words (e.g. "convergence delta
    2.024e-06", "mlm forward passes 20")."""
    rows = []
    for key, a in attributions.items():
        notes = ", ".join(_note(k, v) for k, v in a.extras.items() if isinstance(v, int | float))
        rows.append(
            {
                "method": key,
                "runtime (s)": round(a.runtime_s, 3),
                "forward passes": a.forward_passes,
                "backward passes": a.backward_passes,
                "notes": notes,
            }
        )
    return rows


def _note(name: str, value: float) -> str:
    """One scalar extra of an attribution as the cost table shows it (a flag as yes / no)."""
    if isinstance(value, bool):
        shown = "yes" if value else "no"
    else:
        shown = f"{value:,}" if isinstance(value, int) else f"{float(value):.4g}"
    return f"{name.replace('_', ' ')} {shown}"


def side_by_side(
    first: Mapping[str, Attribution], second: Mapping[str, Attribution], labels: tuple[str, str] = ("A", "B")
) -> tuple[int, dict[str, Attribution]]:
    """Two models' rows of every method, the first model's above the second's, keyed
    ``"<method> · <label>"``; a method only one model has keeps its one row. Returns the number
    of first words all rows share (a model with a shorter maximum length may have cut the text;
    ``core.types.shared_words``) and the rows, cut to those words (subword scores dropped from a
    cut row)."""
    rows = [*first.values(), *second.values()]
    n_words = shared_words(rows)

    def cut(attribution: Attribution) -> Attribution:
        if len(attribution.words) == n_words:
            return attribution
        return dataclasses.replace(
            attribution,
            words=attribution.words[:n_words],
            scores=attribution.scores[:n_words],
            subwords=(),
            subword_scores=None,
            subword_word_ids=(),
        )

    paired: dict[str, Attribution] = {}
    for method in dict.fromkeys([*first, *second]):
        for label, rows_of in zip(labels, (first, second)):
            if method in rows_of:
                paired[f"{method} · {label}"] = cut(rows_of[method])
    return n_words, paired

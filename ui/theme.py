"""The colours and type sizes of every chart and colour-coded view, one theme per setting.

``DEFAULT`` is what every page draws; ``PRESENTATION`` is the presentation setting's (issue 18
item 3: a projector): larger type, thicker lines and a high-contrast palette, both for the
heatmaps (``PALETTES["high_contrast"]``: ColorBrewer RdBu's darkest ends on pure white, small
scores lifted by a 0.6 exponent) and for the method colours (Paul Tol's high-contrast scheme,
blue / red / yellow, completed with the darkest of his "muted" colours and black; Tol 2021,
https://personal.sron.nl/~pault/data/colourschemes.pdf). The default method colours are Okabe &
Ito's (2008) colour-blind-safe set.

The current theme is a context variable: ``ui.presentation.render`` sets it at the top of every
run of the app (a script run is one thread, so sessions never see each other's), and the
chart builders, the heatmap renderer and the coloured HTML read it with ``current()``, so no
page passes it around. Outside a run (the Python API, tests) it is ``DEFAULT`` unless
``using(...)`` says otherwise. A figure built in a run keeps its colours, so its download
(``ui.export``) shows what the screen shows. No Streamlit and no plotly here: ``api`` reads
these colours through ``ui.heatmap``; ``ui.charts`` turns a theme into plotly settings.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

RGB = tuple[int, int, int]

NEGATIVE: RGB = (33, 102, 172)  # #2166ac
NEUTRAL: RGB = (247, 247, 247)  # #f7f7f7
POSITIVE: RGB = (178, 24, 43)  # #b2182b


@dataclass(frozen=True)
class Palette:
    """A diverging palette: the colours at -1, 0 and +1, the ramp's exponent (below 1 lifts small
    scores off white) and the scaled |score| above which the text turns white."""

    negative: RGB
    neutral: RGB
    positive: RGB
    gamma: float = 1.0
    white_text: float = 0.6


PALETTES = {
    "default": Palette(NEGATIVE, NEUTRAL, POSITIVE),
    "high_contrast": Palette((5, 48, 97), (255, 255, 255), (103, 0, 31), gamma=0.6, white_text=0.45),
}


@dataclass(frozen=True)
class Theme:
    """Everything a view needs to colour and size itself.

    ``palette``: the heatmap palette (a key of ``PALETTES``); ``series``: the method colours in
    order; ``baseline``: the random method's (always dashed); ``ink``: lines and outlines that
    carry meaning (a loss, a threshold, a rationale frame); ``muted``: reference lines (zero, a
    floor, a published bar); ``highlight``: CSS of a table's best cell. Sizes in CSS pixels;
    ``font_size`` and ``line_width`` None leave them to Streamlit's chart theme and plotly.
    ``line_chars``: about how many characters of words a heatmap line holds at most (narrower
    columns get shorter lines, ``ui.heatmap``); ``root_px`` the page's root font and
    ``heatmap_rem`` the heatmap's (the presentation setting's CSS is written from them).
    """

    name: str
    palette: str
    series: tuple[str, ...]
    baseline: str
    ink: str
    muted: str
    highlight: str
    title_size: int
    font_size: int | None = None
    line_width: float | None = None
    marker_size: float | None = None
    line_chars: int = 100
    root_px: int = 16  # Streamlit's own
    heatmap_rem: float = 0.95

    def method_colour(self, method: str, index: int) -> str:
        """The colour of the ``index``-th method of a chart (the random baseline's own grey)."""
        return self.baseline if method == "random" else self.series[index % len(self.series)]

    @property
    def colours(self) -> Palette:
        return PALETTES[self.palette]

    def rgb(self, end: str) -> str:
        """``"positive"``, ``"negative"`` or ``"neutral"`` of the heatmap palette as
        ``rgb(r, g, b)``."""
        return f"rgb{getattr(self.colours, end)}"


DEFAULT = Theme(
    name="default",
    palette="default",
    series=("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"),
    baseline="#8c8c8c",
    ink="#1b1b1b",
    muted="#777777",
    highlight="font-weight:700;background-color:rgba(0,158,115,0.22)",
    title_size=15,
)
PRESENTATION = Theme(
    name="presentation",
    palette="high_contrast",
    series=("#004488", "#BB5566", "#117733", "#000000", "#AA4499", "#DDAA33", "#332288", "#882255"),
    baseline="#555555",
    ink="#000000",
    muted="#333333",
    highlight="font-weight:800;background-color:rgba(0,68,136,0.30);outline:2px solid #004488",
    title_size=24,
    font_size=18,
    line_width=3.5,
    marker_size=9,
    root_px=21,
    heatmap_rem=1.15,
)

_current: ContextVar[Theme] = ContextVar("ui.theme", default=DEFAULT)


def current() -> Theme:
    """The theme of this run (``DEFAULT`` outside the app)."""
    return _current.get()


def use(theme: Theme) -> None:
    """Make ``theme`` current for the rest of this run (``ui.presentation.render``)."""
    _current.set(theme)


@contextmanager
def using(theme: Theme) -> Iterator[Theme]:
    """``theme`` current inside the block, the previous one after it."""
    token = _current.set(theme)
    try:
        yield theme
    finally:
        _current.reset(token)

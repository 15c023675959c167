"""Exports that take what the app shows into papers, slides and pandas: plotly figures as PNG,
SVG and PDF, the side-by-side token heatmap as a standalone HTML file, LaTeX and PNG, tables as
CSV and Parquet. Pure functions (no Streamlit); ``ui.downloads`` puts them behind buttons.

**Figures** are drawn by plotly.js itself through kaleido 1.x (plotly's static export), so an
exported chart has the figure's own colours, labels and template (on screen, Streamlit's theme
restyles only what a figure leaves to its template: fonts, and the colours of traces that set
none; the project's charts set their trace colours explicitly). The default size is 900 x 550
CSS pixels (the layout's own width or height where the figure sets one); PNGs are drawn at scale
2, 1800 x 1100 pixels, which prints 6 inches wide at 300 dpi; SVG and PDF are vector.

**Heatmaps** reuse ``ui.heatmap``: the HTML file wraps ``heatmap_html`` (every token escaped,
inline styles, the legend) in a page with its own stylesheet and a title; the PNG is that page
photographed by the same Chromium; the LaTeX is one row per method with a ``\\colorbox`` per word
in the same diverging colours (``ui.heatmap.colour``: ColorBrewer's RdBu ends, Harrower & Brewer
2003), the legend in the caption and every LaTeX special character in a word escaped. LaTeX
shows words (never subwords) and needs only ``\\usepackage{xcolor}``; words outside Latin
scripts need xelatex or lualatex.

**Offline.** Kaleido 1.x drives a system Chrome or Chromium. This module names Debian's
``/usr/bin/chromium`` (or ``$BROWSER_PATH``) explicitly, so choreographer never looks for, nor
downloads, a browser of its own; MathJax is off (kaleido would load it from a CDN, so a title
in ``$...$`` stays plain text) and plotly.js comes from the plotly package. Chromium itself
would still look up update and search-engine hosts at start-up, so it runs with background
networking off and every host name mapped to "not found" (``_OFFLINE_FLAGS``): no DNS query and
no connection leaves the machine (tests/test_export.py traces the system calls).
"""

from __future__ import annotations

import asyncio
import base64
import html
import io
import math
import os
import tempfile
from collections.abc import Coroutine, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import choreographer
import kaleido
import pandas as pd
import plotly.graph_objects as go
from choreographer.browsers import Chromium

from core.types import Attribution
from ui.heatmap import SEGMENT_NAMES, cell_colours, colour, heatmap_html, peak, scaled
from ui.theme import current

FIGURE_FORMATS = ("png", "svg", "pdf")
TABLE_FORMATS = ("csv", "parquet")
FIGURE_WIDTH = 900  # CSS pixels
FIGURE_HEIGHT = 550
PNG_SCALE = 2
HEATMAP_WIDTH = 1100  # CSS pixels of the page photographed for the heatmap PNG (wider tables widen it)
CHROMIUM = "/usr/bin/chromium"  # Debian's chromium (`make browser` installs it)
_OFFLINE_FLAGS = (
    "--disable-background-networking",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--dns-prefetch-disable",
    "--no-pings",
)
_T = TypeVar("_T")


class _OfflineChromium(Chromium):
    """Chromium as kaleido starts it, plus the flags that keep it off the network."""

    def get_cli(self) -> list[str]:
        return [*super().get_cli(), *_OFFLINE_FLAGS]


def chromium_path() -> str:
    """The browser that draws static images: ``$BROWSER_PATH`` or Debian's chromium."""
    path = os.environ.get("BROWSER_PATH") or CHROMIUM
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"no Chromium at {path!r}: install Debian's chromium (make browser) or set BROWSER_PATH")
    return path


def _browser_options() -> dict[str, Any]:
    return {"path": chromium_path(), "browser_cls": _OfflineChromium}


def _run(coroutine: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coroutine`` on a fresh event loop in a worker thread (safe under a running loop)."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def _check_size(width: int, height: int, scale: float) -> None:
    for label, value in (("width", width), ("height", height), ("scale", scale)):
        if not value > 0:
            raise ValueError(f"image {label} {value!r}: must be positive")


def figure_images(
    figure: go.Figure,
    formats: Sequence[str] = FIGURE_FORMATS,
    *,
    width: int | None = None,
    height: int | None = None,
    scale: float = PNG_SCALE,
) -> dict[str, bytes]:
    """``figure`` in each of ``formats`` (png, svg, pdf), drawn in one browser session.

    ``width`` and ``height`` are CSS pixels (default: the layout's own, else 900 x 550); a PNG
    has ``width * scale`` x ``height * scale`` pixels, an SVG or PDF is ``width`` x ``height``
    (``scale`` would only enlarge a vector image).
    """
    for fmt in formats:
        if fmt not in FIGURE_FORMATS:
            raise ValueError(f"figure format {fmt!r}: choose one of {', '.join(FIGURE_FORMATS)}")
    width = width or figure.layout.width or FIGURE_WIDTH
    height = height or figure.layout.height or FIGURE_HEIGHT
    _check_size(width, height, scale)
    spec = figure.to_dict()
    options = _browser_options()

    async def render() -> dict[str, bytes]:
        async with kaleido.Kaleido(n=1, mathjax=False, **options) as renderer:
            return {
                fmt: await renderer.calc_fig(
                    spec, opts={"format": fmt, "width": width, "height": height, "scale": scale if fmt == "png" else 1}
                )
                for fmt in formats
            }

    return _run(render())


def figure_bytes(
    figure: go.Figure, fmt: str, *, width: int | None = None, height: int | None = None, scale: float = PNG_SCALE
) -> bytes:
    """``figure`` as one png, svg or pdf file (see ``figure_images``)."""
    return figure_images(figure, (fmt,), width=width, height=height, scale=scale)[fmt]


def table_bytes(table: pd.DataFrame, fmt: str) -> bytes:
    """``table`` as a CSV (UTF-8, no index) or Parquet file (pyarrow, no index)."""
    if fmt == "csv":
        return table.to_csv(index=False).encode("utf-8")
    if fmt == "parquet":
        buffer = io.BytesIO()
        table.to_parquet(buffer, index=False, engine="pyarrow")
        return buffer.getvalue()
    raise ValueError(f"table format {fmt!r}: choose one of {', '.join(TABLE_FORMATS)}")


@dataclass(frozen=True)
class Heatmap:
    """What the side-by-side heatmap draws: ``ui.heatmap.heatmap_html``'s arguments and a title.
    ``palette`` is the current theme's when the record is made, so a file exported later has the
    colours the screen showed."""

    words: Sequence[str]
    segment_ids: Sequence[int]
    attributions: Mapping[str, Attribution]
    rationale: Sequence[int] | None = None
    subwords: bool = False
    shared_scale: bool = False
    title: str = "Token attributions"
    palette: str = field(default_factory=lambda: current().palette)


_PAGE_STYLE = (
    "body{margin:0;background:#ffffff;color:#1b1b1b;"
    "font-family:'DejaVu Sans','Helvetica Neue',Arial,sans-serif;}"
    "main{display:inline-block;padding:16px 20px;}"
    "h1{font-size:1.15rem;font-weight:600;margin:0 0 0.4rem 0;}"
)


def heatmap_document(heatmap: Heatmap, *, hover_hint: bool = True) -> str:
    """The heatmap as a standalone HTML page: title, legend and rows, no outside resource
    (``hover_hint``: the legend points to the words' raw scores on hover; not in a picture)."""
    title = html.escape(heatmap.title)
    body = heatmap_html(
        heatmap.words,
        heatmap.segment_ids,
        heatmap.attributions,
        rationale=heatmap.rationale,
        subwords=heatmap.subwords,
        shared_scale=heatmap.shared_scale,
        palette=heatmap.palette,
        hover_hint=hover_hint,
        line_chars=current().line_chars,  # one layout: a file or picture has no column to fit
    )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{title}</title>\n<style>{_PAGE_STYLE}</style>\n</head>\n"
        f'<body>\n<main id="export">\n<h1>{title}</h1>\n{body}\n</main>\n</body>\n</html>\n'
    )


def heatmap_png(heatmap: Heatmap, *, width: int = HEATMAP_WIDTH, scale: float = PNG_SCALE) -> bytes:
    """A screenshot of ``heatmap_document`` in Chromium: ``width`` CSS pixels wide (more where a
    row is wider) and as tall as the heatmap, at ``scale`` pixels per CSS pixel."""
    _check_size(width, 1, scale)
    document = heatmap_document(heatmap, hover_hint=False)
    options = _browser_options()

    async def shoot(page: Path) -> bytes:
        async with choreographer.Browser(**options) as browser:
            tab = await browser.create_tab("")
            metrics = {"width": width, "height": 200, "deviceScaleFactor": scale, "mobile": False}
            await tab.send_command("Emulation.setDeviceMetricsOverride", params=metrics)
            await tab.send_command("Page.enable")
            loaded = tab.subscribe_once("Page.loadEventFired")
            await tab.send_command("Page.navigate", params={"url": page.as_uri()})
            await loaded
            size = "(() => {const r = document.getElementById('export').getBoundingClientRect(); return [r.right, r.bottom];})()"
            reply = await tab.send_command("Runtime.evaluate", params={"expression": size, "returnByValue": True})
            right, bottom = reply["result"]["result"]["value"]
            clip = {"x": 0, "y": 0, "width": max(width, math.ceil(right)), "height": math.ceil(bottom), "scale": 1}
            shot = await tab.send_command(
                "Page.captureScreenshot", params={"format": "png", "clip": clip, "captureBeyondViewport": True}
            )
            return base64.b64decode(shot["result"]["data"])

    with tempfile.TemporaryDirectory() as folder:
        page = Path(folder) / "heatmap.html"
        page.write_text(document, encoding="utf-8")
        return _run(shoot(page))


_LATEX_SPECIALS = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "%": r"\%",
    "&": r"\&",
    "_": r"\_",
    "#": r"\#",
    "$": r"\$",
    "^": r"\textasciicircum{}",
    "~": r"\textasciitilde{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
}


def latex_escape(text: str) -> str:
    """``text`` as literal LaTeX text: every character with a meaning to TeX escaped."""
    return "".join(_LATEX_SPECIALS.get(character, character) for character in text)


def _rgb(hex_colour: str) -> str:
    return ",".join(str(int(hex_colour[i : i + 2], 16)) for i in (1, 3, 5))


def _latex_box(text: str, value: float, outlined: bool, palette: str) -> str:
    """One word on its colour (``value`` scaled to [-1, 1]); rationale words get a black frame."""
    background, text_colour = cell_colours(value, palette)
    fill = _rgb(background)
    body = rf"\strut {latex_escape(text)}"
    if text_colour == "#ffffff":
        body = rf"\strut\textcolor{{white}}{{{latex_escape(text)}}}"
    if outlined:
        return rf"\fcolorbox[RGB]{{27,27,27}}{{{fill}}}{{{body}}}"
    return rf"\colorbox[RGB]{{{fill}}}{{{body}}}"


def _format_peak(value: float) -> str:
    return latex_escape(f"{value:.2g}")


def heatmap_latex(heatmap: Heatmap, *, document: bool = True) -> str:
    """The heatmap as a LaTeX figure: one row per method (its largest |score| after its name), a
    ``\\colorbox`` per word, the colour legend in the caption; a whole document by default,
    only the ``figure`` environment with ``document=False``."""
    attributions = heatmap.attributions
    if not attributions:
        raise ValueError("heatmap has no attributions to export")
    peaks = {key: peak(a.scores) for key, a in attributions.items()}
    shared = max(peaks.values())
    segments = list(dict.fromkeys(heatmap.segment_ids))
    lines = [
        r"\begin{figure}[ht]",
        r"\centering\small",
        r"\setlength{\fboxsep}{1.5pt}\setlength{\tabcolsep}{3pt}",
        r"\begin{tabular}{@{}r p{0.74\linewidth}@{}}",
    ]
    for segment in segments:
        members = [w for w, s in enumerate(heatmap.segment_ids) if s == segment]
        if len(segments) > 1:
            lines.append(rf"\multicolumn{{2}}{{@{{}}l}}{{\textit{{{SEGMENT_NAMES[segment]}}}}}\\")
        for key, attribution in attributions.items():
            scale = shared if heatmap.shared_scale else peaks[key]
            boxes = []
            for w in members:
                value = float(attribution.scores[w])
                outlined = bool(heatmap.rationale is not None and heatmap.rationale[w])
                boxes.append(_latex_box(heatmap.words[w], scaled(value, scale), outlined, heatmap.palette))
            head = rf"\textbf{{{latex_escape(key)}}} {{\scriptsize $\pm${_format_peak(peaks[key])}}}"
            lines.append(f"{head} & {' '.join(boxes)}\\\\")
    lines.append(r"\end{tabular}")
    low, middle, high = (_rgb(colour(v, heatmap.palette)) for v in (-1.0, 0.0, 1.0))
    ends = (
        (f"$-${_format_peak(shared)}", f"$+${_format_peak(shared)}") if heatmap.shared_scale else ("$-$max", "$+$max")
    )
    scale_note = (
        "All rows share one scale."
        if heatmap.shared_scale
        else r"Each row is scaled to its largest $|$score$|$, printed after the method's name."
    )
    rationale_note = " Framed words are the human rationale." if heatmap.rationale is not None else ""
    title = latex_escape(heatmap.title)
    caption = (
        rf"\caption[{title}]{{{title}. Each word's background is its score for the explained class: "
        rf"\colorbox[RGB]{{{low}}}{{\textcolor{{white}}{{{ends[0]}}}}} against it, "
        rf"\colorbox[RGB]{{{middle}}}{{0}}, "
        rf"\colorbox[RGB]{{{high}}}{{\textcolor{{white}}{{{ends[1]}}}}} for it. {scale_note}{rationale_note}}}"
    )
    lines += [
        caption,
        r"\end{figure}",
    ]
    figure = "\n".join(lines) + "\n"
    if not document:
        return figure
    return f"\\documentclass{{article}}\n\\usepackage{{xcolor}}\n\\begin{{document}}\n{figure}\\end{{document}}\n"


def heatmap_files(heatmap: Heatmap) -> dict[str, bytes]:
    """The heatmap as the files a session bundle carries: HTML and LaTeX, and a PNG when a
    browser is installed."""
    files = {
        "heatmap.html": heatmap_document(heatmap).encode("utf-8"),
        "heatmap.tex": heatmap_latex(heatmap).encode("utf-8"),
    }
    try:
        chromium_path()
    except RuntimeError:
        return files
    files["heatmap.png"] = heatmap_png(heatmap)
    return files

"""One row of download buttons under a figure, a table, the heatmap or a result.

Every file is made when its button is clicked (``st.download_button`` with a callable), so a
page pays nothing for the buttons it shows: CSV, HTML, LaTeX and JSON take milliseconds, a
static image one browser start (about two seconds, ``ui.export``). The buttons do not rerun
the page. Without a browser the image buttons are greyed out and say why.
"""

from __future__ import annotations

import json as jsonlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from ui.export import Heatmap, chromium_path, figure_bytes, heatmap_document, heatmap_latex, heatmap_png, table_bytes

MISSING = "—"  # a table's missing value, as shown
MIME = {
    "png": "image/png",
    "svg": "image/svg+xml",
    "pdf": "application/pdf",
    "csv": "text/csv",
    "parquet": "application/vnd.apache.parquet",
    "html": "text/html",
    "tex": "application/x-tex",
    "json": "application/json",
    "zip": "application/zip",
}


@dataclass(frozen=True)
class Download:
    """One button: its label, the file it saves and how the bytes are made."""

    label: str
    suffix: str  # widget key suffix, unique within a row
    file_name: str
    data: Callable[[], bytes]
    error: str | None = None  # why the button is disabled

    @property
    def mime(self) -> str:
        return MIME[self.file_name.rsplit(".", 1)[1]]


def file_stem(name: str) -> str:
    """``name`` as a safe file name: letters, digits, dot, dash and underscore."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._")
    if not stem:
        raise ValueError(f"download name {name!r}: needs a letter or digit")
    return stem


def _json_bytes(value: Any) -> bytes:
    return jsonlib.dumps(value, indent=2, ensure_ascii=False, allow_nan=False).encode("utf-8")


def downloads(
    name: str,
    *,
    figure: go.Figure | None = None,
    table: pd.DataFrame | None = None,
    heatmap: Heatmap | None = None,
    json: Any = None,
    bundle: Callable[[], bytes] | None = None,
) -> list[Download]:
    """The buttons of a row, in order: figure (PNG, SVG, PDF), table (CSV, Parquet), heatmap
    (HTML, PNG, LaTeX), JSON, session bundle (zip). Nothing is rendered here."""
    stem = file_stem(name)
    try:
        chromium_path()
        no_browser = None
    except RuntimeError as error:
        no_browser = str(error)
    both = figure is not None and heatmap is not None
    found: list[Download] = []
    if figure is not None:
        prefix = "Figure " if both else ""
        for fmt in ("png", "svg", "pdf"):
            found.append(
                Download(
                    f"{prefix}{fmt.upper()}",
                    f"figure.{fmt}",
                    f"{stem}.{fmt}",
                    partial(figure_bytes, figure, fmt),
                    no_browser,
                )
            )
    if table is not None:
        found.append(Download("CSV", "table.csv", f"{stem}.csv", partial(table_bytes, table, "csv")))
        found.append(Download("Parquet", "table.parquet", f"{stem}.parquet", partial(table_bytes, table, "parquet")))
    if heatmap is not None:
        prefix = "Heatmap " if both else ""
        found.append(
            Download(f"{prefix}HTML", "heatmap.html", f"{stem}.html", lambda: heatmap_document(heatmap).encode("utf-8"))
        )
        found.append(
            Download(f"{prefix}PNG", "heatmap.png", f"{stem}-heatmap.png", partial(heatmap_png, heatmap), no_browser)
        )
        found.append(
            Download(f"{prefix}LaTeX", "heatmap.tex", f"{stem}.tex", lambda: heatmap_latex(heatmap).encode("utf-8"))
        )
    if json is not None:
        found.append(Download("JSON", "json", f"{stem}.json", partial(_json_bytes, json)))
    if bundle is not None:
        found.append(Download("Session bundle", "bundle", f"{stem}-bundle.zip", bundle))
    return found


def download_row(
    key: str,
    *,
    name: str,
    figure: go.Figure | None = None,
    table: pd.DataFrame | None = None,
    heatmap: Heatmap | None = None,
    json: Any = None,
    bundle: Callable[[], bytes] | None = None,
) -> None:
    """A row of download buttons for whatever is given; widget keys are ``{key}.{suffix}``
    (e.g. ``heatmaps.download.heatmap.png``), files are named after ``name``."""
    row = downloads(name, figure=figure, table=table, heatmap=heatmap, json=json, bundle=bundle)
    if not row:
        return
    with st.container(horizontal=True, key=key):
        for item in row:
            st.download_button(
                item.label,
                item.data,
                file_name=item.file_name,
                mime=item.mime,
                key=f"{key}.{item.suffix}",
                on_click="ignore",
                disabled=item.error is not None,
                help=item.error or f"Download {item.file_name}",
                icon=":material/download:",
            )


def with_row_labels(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with an index that labels its rows turned into its first column(s) (named after the
    index, else "row"), since the exported files carry no index; a plain 0..n-1 index is dropped."""
    if isinstance(frame.index, pd.RangeIndex):
        return frame
    return frame.rename_axis([name or "row" for name in frame.index.names]).reset_index()


def show_figure(figure: go.Figure, *, key: str, name: str, container: Any = None, **options: Any) -> None:
    """``st.plotly_chart`` (widget ``key``, in ``container``) with its download row under it."""
    where = container if container is not None else st.container()
    with where:
        st.plotly_chart(figure, key=key, **options)
        download_row(f"{key}.download", name=name, figure=figure)


def show_table(
    frame: pd.DataFrame, *, key: str, name: str, shown: Any = None, container: Any = None, **options: Any
) -> None:
    """``st.dataframe`` of ``shown`` (a styled view, default ``frame``) with a download row of
    ``frame`` (CSV, Parquet) under it; an index that labels the rows (methods, say) becomes the
    file's first column. A missing value shows as "—" (Streamlit's own placeholder is "None")."""
    where = container if container is not None else st.container()
    with where:
        st.dataframe(frame if shown is None else shown, key=key, **{"placeholder": MISSING, **options})
        download_row(f"{key}.download", name=name, table=with_row_labels(frame))

"""Page text as the user reads it in AppTest: the markdown escapes the pages add to messages that
may quote user input (``ui.text.plain``) removed."""

from __future__ import annotations

import re


def as_read(markdown: str) -> str:
    """``markdown`` without the escapes and the invisible word joiners ``plain`` adds."""
    return re.sub(r"\\(.)", r"\1", markdown).replace("\u2060", "")


def errors(at) -> list[str]:
    """The page's ``st.error`` messages as read."""
    return [as_read(e.value) for e in at.error]


def one_layout(drawn: str) -> str:
    """A page's heatmap HTML with only its first (widest) layout: the page draws a heatmap in
    several line widths and shows the one that fits its column (``ui.heatmap._layouts``)."""
    kept, position = [], 0
    for found in re.finditer(r'<div class="hm-fit hm-fit-[1-9][0-9]*">', drawn):
        if found.start() < position:
            continue
        kept.append(drawn[position : found.start()])
        depth, scan = 1, found.end()
        while depth:
            opening, closing = drawn.find("<div", scan), drawn.find("</div>", scan)
            if opening != -1 and opening < closing:
                depth, scan = depth + 1, opening + 4
            else:
                depth, scan = depth - 1, closing + len("</div>")
        position = scan
    return "".join(kept) + drawn[position:]


def shown_cells(table) -> dict[str, list[str]]:
    """An AppTest dataframe's cells as the reader sees them, column by column: a styled table's
    display values; else each number in its column's printf format (``column_config``) or, without
    one, as Streamlit writes it (at most four decimals, trailing zeros dropped); a missing value
    as "None"."""
    import json
    import math

    import pyarrow as pa

    data = table.proto.arrow_data
    if data.HasField("styler"):
        shown = pa.ipc.open_stream(data.styler.display_values).read_all().to_pandas()
        return {str(name): [str(v) for v in shown[name]] for name in shown.columns}
    formats = {
        name: config.get("type_config", {}).get("format", "")
        for name, config in json.loads(table.proto.columns or "{}").items()
    }

    def cell(value, format: str) -> str:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return "None"
        if isinstance(value, bool) or not isinstance(value, int | float):
            return str(value)
        if format.startswith("%"):
            return format % value
        return f"{value:.4f}".rstrip("0").rstrip(".") if isinstance(value, float) else str(value)

    frame = table.value
    return {str(name): [cell(v, formats.get(str(name), "")) for v in frame[name].tolist()] for name in frame.columns}


def open_on_model(model: str, page: str, **state: object):
    """One run of the app on the model folder ``model`` with these session values, switched to
    ``page`` (the home page computes nothing)."""
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=300)
    at.session_state["sidebar.model_path"] = model
    at.session_state["heatmaps.methods"] = []
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    return at.switch_page(page).run()

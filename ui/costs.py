"""The cost table under a page's attributions: runtime and passes per method (``cost_rows``),
with its downloads."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd
import streamlit as st

from core.types import Attribution
from ui.downloads import show_table
from ui.heatmap import cost_rows


def show_costs(attributions: Mapping[str, Attribution], *, key: str, name: str) -> None:
    """The table, its number columns narrow so the notes have room; the pass columns are headed
    "forward" and "backward" (a narrow column cut "forward passes" to "forward pas…"), the files
    keep the full names."""
    number = st.column_config.NumberColumn
    columns = {
        "runtime (s)": number("runtime (s)", width="small"),
        "forward passes": number("forward", width="small", help="Forward passes of the classifier"),
        "backward passes": number("backward", width="small", help="Backward passes (gradients)"),
        "notes": st.column_config.TextColumn("notes", width="large"),
    }
    show_table(pd.DataFrame(cost_rows(attributions)), key=key, name=name, hide_index=True, column_config=columns)

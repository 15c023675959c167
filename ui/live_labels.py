"""A picker whose option labels change while it is on screen: a stored run's progress, a word's
scores, the examples of the latest result.

Streamlit (1.67) sends a keyed selectbox's value back as the label the browser shows, and redraws
that label only when the value is set from the script. Once a label changes, the box goes on
showing the old one ("0/40 · running" beside a finished run), and a later run reads no option from
it, so the choice falls back to the first option (streamlit/streamlit#11268; a fix is proposed in
#13788). ``live_selectbox`` sets the picker's state from the script on every run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st


def live_selectbox(
    label: str, options: Sequence[Any], format_func: Callable[[Any], str], key: str, default: Any = None, **kwargs: Any
) -> Any:
    """``st.selectbox`` (its state kept across pages) showing each option's current label: before
    it is drawn, its state is set to the option it holds, else to the one it last returned, else to
    ``default`` (the first option when ``default`` is none of them)."""
    kept = f"{key}.kept"
    value = st.session_state.get(key)
    if value not in options:
        value = st.session_state.get(kept)
    st.session_state[key] = value if value in options else default if default in options else options[0]
    picked = st.selectbox(label, options, format_func=format_func, key=key, persist_state="session", **kwargs)
    st.session_state[kept] = picked
    return picked

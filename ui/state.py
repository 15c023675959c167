"""The shared selection every page reads: one frozen record in ``st.session_state``."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from core.types import Example

SELECTION_KEY = "selection"


@dataclass(frozen=True)
class Selection:
    """What the sidebar picked: model, example and target class.

    ``error`` is set (and ``example`` may be None) when the model or the example cannot be used;
    pages show it instead of their content (it is escaped for markdown: it may quote the link's
    model). ``target`` None means the predicted class.
    """

    model: str
    label_names: tuple[str, ...] = ()
    pair: bool | None = None
    dataset: str | None = None  # None for free text
    split: str | None = None
    index: int | None = None
    example: Example | None = None
    target: int | None = None
    mlm: str = "minilm-mlm"
    error: str | None = None
    head: str = "single_label"  # core.heads: the explained output, override applied
    threshold: float = 0.5  # a multi-label head's prediction: labels at or above it


def set_selection(selection: Selection) -> None:
    st.session_state[SELECTION_KEY] = selection


def current() -> Selection:
    """The selection made by the sidebar in this run (``app.py`` renders it before any page)."""
    selection = st.session_state.get(SELECTION_KEY)
    if selection is None:
        raise RuntimeError("no selection yet: run the app through app.py, which renders the sidebar")
    return selection

"""Long service calls: the gate that waits for a Run button, and the progress bar they run under."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TypeVar

import streamlit as st

T = TypeVar("T")


def run_or_stop(task: Callable[..., T], *args, **kwargs) -> T:
    """``task(*args, progress=..., **kwargs)`` with a progress bar that is removed when it ends.

    A ``ValueError`` (empty text, a model that cannot be used, bad settings) is shown as an error
    and stops the page; any other exception is a bug and propagates."""
    bar = st.progress(0.0, text="Starting…")
    try:
        result = task(
            *args, progress=lambda fraction, message: bar.progress(min(1.0, fraction), text=message), **kwargs
        )
    except ValueError as error:
        bar.empty()
        st.error(str(error))
        st.stop()
    bar.empty()
    return result


def requested(name: str, request: dict, pressed: bool) -> bool:
    """True once Run was pressed for exactly these settings (they persist across reruns)."""
    signature = json.dumps(request, sort_keys=True, default=str)
    if pressed:
        st.session_state[name] = signature
    if st.session_state.get(name) == signature:
        return True
    st.info("Press **Run on the slice** to compute these settings over the slice.")
    return False

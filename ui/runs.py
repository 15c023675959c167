"""Long service calls: the gate that waits for a Run button, and the progress bar they run under."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

import streamlit as st

import services

T = TypeVar("T")

SINGLE, SLICE = "this example", "dataset slice"


def run_or_stop(task: Callable[..., T], *args, **kwargs) -> T:
    """``task(*args, progress=..., **kwargs)`` with a progress bar that is removed when it ends.

    A ``ValueError`` (empty text, a model that cannot be used, bad settings) is shown as an error
    and stops the page; any other exception is a bug and propagates. In shared mode the call
    waits for a slot of the server's queue, one long request per session at a time."""
    bar = st.progress(0.0, text="Starting…")
    try:
        with services.heavy_slot(_session_id()):
            result = task(
                *args, progress=lambda fraction, message: bar.progress(min(1.0, fraction), text=message), **kwargs
            )
    except ValueError as error:
        bar.empty()
        st.error(str(error))
        st.stop()
    bar.empty()
    return result


def _session_id() -> str:
    """This browser session's id for the shared-mode queue (random, kept in its session state)."""
    return st.session_state.setdefault("runs.session_id", uuid.uuid4().hex)


def explain_selected(
    selection, methods: list[str], params: dict | None = None, mlm_name: str | None = None
) -> services.HeatmapResult:
    """The selected example explained by ``methods`` for the selected target, under a progress bar
    (``mlm_name`` defaults to the sidebar's masked LM)."""
    return run_or_stop(
        services.explain,
        selection.model,
        selection.example,
        methods,
        target=selection.target,
        params=params,
        mlm_name=mlm_name or selection.mlm,
    )


def gate(
    key: str,
    request: Any,
    label: str,
    *,
    container: Any = None,
    auto: bool = False,
    memory: str | None = None,
    help: str | None = None,
    hint: bool = True,
) -> bool:
    """The one Run gate of every page: True once the button ``label`` (widget ``key``, drawn in
    ``container``) was pressed for exactly these settings (``request``, remembered across reruns
    under ``memory``, default ``{key}.request``), or at once, without a button, when ``auto`` (a
    run short enough to start without a click); while it waits, ``hint`` says to press it."""
    name = memory or f"{key}.request"
    signature = json.dumps(request, sort_keys=True, default=str)
    if auto:
        return True
    if (container or st).button(label, type="primary", key=key, help=help):
        st.session_state[name] = signature
    if st.session_state.get(name) == signature:
        return True
    if hint:
        st.info(f"Press **{label}** to compute these settings.")
    return False


def example_scope(container, selection, prefix: str, most: int, default: int, help: str) -> tuple[str, int]:
    """Radio "this example" / "dataset slice" (the slice only when a dataset is selected) and, for
    a slice, how many of its first examples; returns the scope and the number of examples."""
    scopes = [SINGLE, SLICE] if selection.dataset else [SINGLE]
    scope = container.radio("Examples", scopes, key=f"{prefix}.scope", horizontal=True)
    if scope != SLICE:
        return scope, 1
    size = services.dataset_size(selection.dataset, selection.split)
    count = st.number_input(
        f"First N examples of {selection.dataset}/{selection.split}",
        min_value=2,
        max_value=min(most, size),
        value=min(default, size),
        key=f"{prefix}.n_examples",
        help=help,
    )
    return scope, int(count)

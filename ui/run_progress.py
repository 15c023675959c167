"""A stored run's or ROAR job's live progress on its page, with a Stop button while the process
this server started for it runs and a Resume button once it is stopped, failed or its process is
gone (``services.background``): the units stored are kept, and Resume computes only the rest. And
the explorer's Delete of a stored run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

import services
from ui.text import plain

STARTED = "runs.started"  # the run ids this session started (its Stop buttons in shared mode)


def progress_line(info: Any, noun: str = "examples", wall_s: float | None = None) -> str:
    """ "412 of 872 examples · running · 95 s" for a stored run's catalogue entry (``wall_s``: the
    writer's own count of seconds, newer than the catalogue's)."""
    status = "stopped (its process is gone)" if info.writer_gone else info.status
    wall = info.wall_s if wall_s is None else wall_s
    return f"{info.rows_done:,} of {info.rows_total:,} {noun} · {status} · {wall:.0f} s"


def remember_started(run_id: str) -> None:
    """Note that this session started ``run_id``'s process."""
    st.session_state.setdefault(STARTED, set()).add(run_id)


@st.fragment(run_every=2.0)
def live_progress(
    run_id: str,
    read: Callable[[str], Any],
    noun: str = "examples",
    what: str = "run",
    within: Callable[[Any], Any] | None = None,
) -> None:
    """The progress of ``run_id`` (its catalogue entry, ``read``) every two seconds, with its Stop
    or Resume button ("Stop the run": Streamlit's own "Stop" stops the page's script); the whole
    page is drawn again when a unit is stored or the status changes. ``within`` (the entry's
    progress inside the unit its process computes, ``engine.runs.live``, or None) moves the bar
    between units and says where the process is."""
    info = read(run_id)
    inside = within(info) if within is not None else None
    if inside is None:
        st.progress(info.fraction, text=progress_line(info, noun))
    else:
        line = f"{progress_line(info, noun, inside.wall_s)} · now {inside.message}"
        st.progress(max(info.fraction, min(1.0, inside.fraction)), text=plain(line))
    _controls(info, noun, what)
    seen = st.session_state.setdefault("runs.progress_seen", {})
    now = (info.rows_done, info.status)
    if seen.get(run_id) not in (None, now):
        seen[run_id] = now
        st.rerun(scope="app")
    seen[run_id] = now


def _controls(info: Any, noun: str, what: str) -> None:
    """Stop for a running process this server started (in shared mode: this session), Resume for a
    run that is not done and that no live process writes, with why the last one ended."""
    run_id, ours = info.run_id, services.background.is_running(info.run_id)
    if info.status == "done":
        return
    if info.being_written:
        if ours and (not services.shared_mode() or run_id in st.session_state.get(STARTED, ())):
            st.button(
                f"Stop the {what}", key=f"runs.stop.{run_id}", on_click=services.background.stop_background, args=(run_id,),
                help=f"As Ctrl-C: the {noun} stored are kept, and Resume the {what} goes on from there.",
            )  # fmt: skip
        elif not ours:
            st.caption("Another process writes it (the command line or another server): stop it there.")
        return
    if ours:
        st.caption("Its process is starting: it loads the model, then goes on from where the run stopped.")
        return
    if info.error:
        st.caption(f"It ended with: {plain(info.error)}")
    failure = services.background.early_failure(run_id, wait_s=0)
    if failure is not None:
        st.caption(
            f"Its last process stopped as soon as it started; the end of its log `{services.background.log_name(run_id)}`:"
        )
        st.code(failure, language=None)
    key = f"runs.resume.{run_id}"
    st.button(
        f"Resume the {what}", key=key, type="primary", on_click=_resume, args=(run_id, info.kind, key),
        help=f"Computes only the {noun} not stored yet.",
    )  # fmt: skip
    if refused := st.session_state.get(f"{key}.refused"):  # kept: the fragment is drawn again every 2 s
        st.error(plain(refused[:1].upper() + refused[1:]))


def _resume(run_id: str, kind: str, key: str) -> None:
    """The Resume button's callback: the run continued in a background process, or why not."""
    try:
        started = services.background.resume_background(run_id, kind)
    except ValueError as error:  # shared mode: another background process runs, a model not offered
        st.session_state[f"{key}.refused"] = str(error)
    else:
        st.session_state.pop(f"{key}.refused", None)
        if started:  # not while another visitor's process for it is still starting
            remember_started(run_id)


def delete_control(
    info: Any, delete: Callable[[str], None] = services.runs.delete_run, what: str = "run", noun: str = "examples"
) -> None:
    """A popover whose button deletes the stored run ``info`` with ``delete`` (the popover is the
    confirmation); absent in shared mode (the store is every visitor's), while a live process writes
    it, and while the process this server started for it runs (a resumed run loading its model)."""
    if services.shared_mode() or info.being_written or services.background.is_running(info.run_id):
        return
    with st.popover(f"Delete this {what}", icon=":material/delete:"):
        st.markdown(f"`{info.run_id}` goes for good: its {info.rows_done:,} stored {noun}, their files and its log.")
        st.button(
            "Delete", key=f"runs.delete.{info.run_id}", type="primary", on_click=_delete, args=(delete, info.run_id)
        )


def _delete(delete: Callable[[str], None], run_id: str) -> None:
    """The Delete button's callback: the run removed, or why not, in a toast."""
    try:
        delete(run_id)
    except ValueError as error:  # a process took it up meanwhile
        st.toast(plain(str(error)), icon=":material/error:", duration="long")
    else:
        st.toast(f"Deleted `{run_id}`", icon=":material/delete:")

"""The data files a session counts as its own on a shared server: those it uploaded, and an upload
a link opened in it (the link gives its texts already). Only their stored runs and ROAR jobs are
listed to the session (``services.uploads.hidden_uploads``)."""

from __future__ import annotations

import streamlit as st

import services
from ui.text import plain

UPLOADS = "uploads.mine"  # session state: the session's data files (``file:PATH``)


def session_uploads() -> tuple[str, ...]:
    """The data files this session uploaded or opened by a link (``file:PATH``)."""
    return tuple(st.session_state.get(UPLOADS, ()))


def count_as_own(name: str) -> None:
    """Add the data file ``name`` to the session's own, when it is an upload kept by this server."""
    if services.is_upload(name) and name not in session_uploads():
        st.session_state[UPLOADS] = (*session_uploads(), name)


def earlier_upload_picker(shared: bool) -> None:
    """A picker of the data files uploaded before (on a shared server, the session's own): the one
    picked goes in the sidebar's data file, so a file is uploaded once and chosen again after a
    reload. Beside it, on a private server, a button that deletes the picked file."""
    kept = {upload.name: upload for upload in services.kept_uploads(session_uploads())}
    if not kept:
        return
    shown = services.FILE_PREFIX + str(st.session_state.get("sidebar.data_file") or "")
    st.session_state["sidebar.kept_upload"] = shown if shown in kept else None  # the data file open now
    left, right = st.columns([3, 1], vertical_alignment="bottom")
    picked = left.selectbox(
        "…or one uploaded before", list(kept), index=None, key="sidebar.kept_upload",
        format_func=lambda name: kept[name].label, placeholder=f"{len(kept)} kept in the results folder",
        on_change=_open_picked,
    )  # fmt: skip
    if shared:
        return
    delete = right.button(
        ":material/delete:", key="sidebar.delete_upload", disabled=picked is None, width="stretch",
        help="Delete the picked upload from the results folder. Stored runs on it keep their results, "
        "but cannot be resumed.",
    )  # fmt: skip
    if delete and picked is not None:
        try:
            services.delete_upload(picked)
        except (ValueError, OSError) as error:
            st.error(plain(f"Cannot delete {kept[picked].label}: {error}"))  # a file's name, escaped
            return
        if st.session_state.get("sidebar.data_file") == picked.removeprefix(services.FILE_PREFIX):
            st.session_state["sidebar.data_file"] = ""
        st.session_state[UPLOADS] = tuple(name for name in session_uploads() if name != picked)
        st.rerun()


def _open_picked() -> None:
    picked = st.session_state.get("sidebar.kept_upload")
    if picked:
        st.session_state["sidebar.data_file"] = picked.removeprefix(services.FILE_PREFIX)
        count_as_own(picked)

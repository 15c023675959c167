"""The data files a session counts as its own on a shared server: those it uploaded, and an upload
a link opened in it (the link gives its texts already). Only their stored runs and ROAR jobs are
listed to the session (``services.data.hidden_uploads``)."""

from __future__ import annotations

import streamlit as st

import services

UPLOADS = "uploads.mine"  # session state: the session's data files (``file:PATH``)


def session_uploads() -> tuple[str, ...]:
    """The data files this session uploaded or opened by a link (``file:PATH``)."""
    return tuple(st.session_state.get(UPLOADS, ()))


def count_as_own(name: str) -> None:
    """Add the data file ``name`` to the session's own, when it is an upload kept by this server."""
    if services.is_upload(name) and name not in session_uploads():
        st.session_state[UPLOADS] = (*session_uploads(), name)

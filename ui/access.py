"""The shared password, asked for before any page runs (shared mode with
``ATTRIBUTION_PASSWORD``)."""

from __future__ import annotations

import streamlit as st

from services import access

_GRANTED = "access.granted"


def require_password() -> None:
    """Stop the page here until this session has given the server's password (nothing is asked
    when none is set). The password is compared in constant time and never shown or logged."""
    if st.session_state.get(_GRANTED) or access.password_matches(""):
        st.session_state[_GRANTED] = True
        return
    st.title("Attribution explorer")
    with st.form("access.form"):
        given = st.text_input("Password", type="password", key="access.password")
        submitted = st.form_submit_button("Enter")
    if submitted:
        if access.password_matches(given):
            st.session_state[_GRANTED] = True
            st.session_state.pop("access.password", None)
            st.rerun()
        st.error("That is not the password of this server.")
    st.stop()

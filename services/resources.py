"""The app's ``engine.resources.Resources``: one per server process, shared by the sessions
(``st.cache_resource``), so AML's attribution model is pre-trained once per model and settings."""

from __future__ import annotations

import streamlit as st

from engine.resources import Resources


@st.cache_resource
def resources() -> Resources:
    return Resources.saved()

"""The presentation setting: larger fonts and a high-contrast palette for a projector.

A toggle in the sidebar's teaching section, kept in the URL as ``?present=1`` (read on a
session's first run, written on every run, so a shared link opens in the same mode). ``render``
makes ``ui.theme.PRESENTATION`` the run's theme, which every chart builder, heatmap and coloured
table reads (``ui.theme.current``), and adds the larger page fonts below.
"""

from __future__ import annotations

import streamlit as st

from ui import share, theme

KEY = "presentation.on"  # the toggle
SETTING = "presentation.setting"
PARAM = "present"
_URL_READ = "presentation.url_read"

# Streamlit sizes its text in rem: a larger root font scales every page; the heatmap's cells
# get bolder text and a thicker rationale outline. The sidebar keeps its width in px while its
# padding grows with the font, so it gets less padding (its selects' values were cut).
STYLE = f"""<style>
html {{ font-size: {theme.PRESENTATION.root_px}px; }}
.hm-cell {{ font-weight: 600; }}
[data-testid="stSidebar"] {{ font-size: 0.95rem; }}
[data-testid="stSidebarContent"] {{ padding-left: 1rem; padding-right: 1rem; }}
</style>"""


def _remember() -> None:
    st.session_state[SETTING] = bool(st.session_state[KEY])


def _from_link(value: str | None) -> bool:
    """The link's ``present=`` value as the setting: 1 (or yes, true, on) turns it on; a value that
    is none of these nor 0 (no, false, off) is named on the page, and the setting stays off."""
    word = (value or "").strip().lower()
    if word in ("1", "yes", "true", "on"):
        return True
    if word not in ("", "0", "no", "false", "off"):
        share.link_warning(
            f"The link asks for presentation mode {share.quoted(value or '')}, which is none of 1, yes, true, on "
            "(or 0, no, false, off); it is off."
        )
    return False


def render() -> bool:
    """The toggle (in the sidebar), the URL parameter, the run's theme and, when on, the larger
    fonts. The setting lives in a plain session key (``SETTING``) copied into the widget on every
    run: a page switch may drop a widget's own state. app.py calls it before the page runs."""
    if not st.session_state.get(_URL_READ):
        st.session_state[_URL_READ] = True
        st.session_state[SETTING] = _from_link(st.query_params.get(PARAM))
    st.session_state[KEY] = bool(st.session_state.get(SETTING, False))
    on = st.sidebar.toggle(
        "Presentation mode",
        key=KEY,
        persist_state="session",
        on_change=_remember,
        help="Larger fonts, thicker lines and a high-contrast palette on every chart and heatmap, for a projector; "
        "kept in the link.",
    )
    theme.use(theme.PRESENTATION if on else theme.DEFAULT)
    if on:
        st.query_params[PARAM] = "1"
        st.html(STYLE)
    else:
        st.query_params.pop(PARAM, None)
    return on

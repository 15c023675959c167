"""The "Copy link" button: the current view's URL, with the selection every page mirrors into
the query parameters (``ui.sidebar``: model, dataset, split, example, target, typed text; the
pages: methods, run), and the warning that names what a link asked for and does not get.

It sits in the sidebar, which renders before the page, so it reads the query parameters the
page wrote on the previous run; opening it reruns the app (``on_change="rerun"``), so the link
it shows is always that of the view on screen. The URL is shown in a code block whose copy
button puts it on the clipboard (no script of our own, nothing fetched).
"""

from __future__ import annotations

from urllib.parse import urlencode

import streamlit as st

from ui.text import plain

QUOTED_MAX = 60  # characters of a link's value that a warning quotes


def view_url() -> str:
    """The URL of the current view: the page's address in the browser (``st.context.url``;
    empty in a test without a browser) and the query parameters."""
    base = st.context.url or ""
    query = urlencode(sorted(st.query_params.to_dict().items()))
    return f"{base}?{query}" if query else base


def copy_link() -> None:
    with st.popover(
        "Copy link", icon=":material/link:", key="share.link", on_change="rerun", help="A link to this exact view"
    ):
        st.caption("Anyone who can reach this app opens the same view with it (copy with the button on the right).")
        st.code(view_url(), language=None, wrap_lines=True)


def quoted(value: str) -> str:
    """A value of the link as a warning quotes it: in quotes, cut to ``QUOTED_MAX`` characters and
    escaped for markdown (a crafted link must not put a link or markup of its own on the page)."""
    cut = value if len(value) <= QUOTED_MAX else f"{value[:QUOTED_MAX]}…"
    return f"“{plain(cut)}”"


def link_warning(message: str) -> None:
    """Name on the page what a link asked for and does not get, and what is shown instead (never a
    silent swap); shown on the run that reads the link. Values of the link go in through ``quoted``."""
    st.warning(message)

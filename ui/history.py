"""Back in the browser goes to the page before: one history entry per page, not one per setting.

Streamlit makes every write of ``st.query_params`` a new browser history entry (``pushState``),
and the sidebar and the pages mirror their selection into the link one parameter at a time
(model, dataset, split, index, methods, each view's settings): a page opened from the navigation
added six entries, and Back kept showing the same page. The script in ``assets/history.html``
turns a history push that keeps the page's path (a change of the query alone) into a replacement
of the current entry, as Streamlit's own ``bind="query-params"`` widgets already do; a push to
another page's path stays a push. Back then leaves the page, and its entry keeps the page's last
link. It holds no user input, patches ``history.pushState`` once per browser tab, and sits in a
container that ``assets/style.css`` hides, so it takes no room on the page.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

SCRIPT = Path(__file__).resolve().parent.parent / "assets" / "history.html"


def render() -> None:
    """Add the script to the page (first in the app's run, before any link is written)."""
    with st.container(key="history-once"):
        st.html(SCRIPT, unsafe_allow_javascript=True)

"""Running the guided tours of ``ui/tour_steps.py``: a picker in the sidebar, and a panel at the
top of the page with the step's text and Back / Next / End buttons.

A button's callback sets the sidebar (``ui.sidebar.select_example``) and the step's widget values
before the next run (widgets may not be changed once drawn) and leaves the step's page in
``tour.goto``; ``render`` then switches to that page. ``app.py`` calls ``render`` after
``st.navigation`` and before the sidebar.
"""

from __future__ import annotations

import streamlit as st

from ui.sidebar import select_example, select_text
from ui.tour_steps import TOURS, Step, Tour

TOUR, STEP, GOTO, AVAILABLE = "tour.key", "tour.step", "tour.goto", "tour.available"
BY_KEY = {tour.key: tour for tour in TOURS}


def available(pages: set[str]) -> tuple[Tour, ...]:
    """The tours whose every page is in the app (a tour of a page not built yet is left out)."""
    return tuple(tour for tour in TOURS if all(step.page in pages for step in tour.steps))


def started_here() -> tuple[Tour, ...]:
    """The tours offered in this run (``render`` decides, from the app's pages)."""
    return tuple(BY_KEY[key] for key in st.session_state.get(AVAILABLE, ()))


def go_to(key: str, index: int) -> None:
    """Callback: make step ``index`` of tour ``key`` the current one and set what it shows."""
    step: Step = BY_KEY[key].steps[index]
    st.session_state[TOUR] = key
    st.session_state[STEP] = index
    if step.typed is not None:
        select_text(step.model, step.typed)
    else:
        select_example(step.model, step.dataset, step.split, step.index)
    for widget, value in step.state.items():
        for kept in [k for k in st.session_state if str(k).startswith(f"{widget}.")]:
            del st.session_state[kept]  # what a page keeps beside the widget ("im.word.for") follows the step
        st.session_state[widget] = value
    st.session_state[GOTO] = step.page


def end() -> None:
    for key in (TOUR, STEP, GOTO):
        st.session_state.pop(key, None)


def render(pages: set[str]) -> None:
    """The sidebar's tour picker, the pending page switch and the current step's panel."""
    tours = available(pages)
    st.session_state[AVAILABLE] = [tour.key for tour in tours]
    with st.sidebar.expander("Guided tours", expanded=TOUR not in st.session_state):
        picked = st.selectbox(
            "Tour",
            [t.key for t in tours],
            format_func=lambda k: BY_KEY[k].label,
            key="tour.picker",
            help="; ".join(f"{t.label}: {t.title}" for t in tours),
        )
        st.caption(BY_KEY[picked].summary)
        st.button("Start the tour", key="tour.start", on_click=go_to, args=(picked, 0), width="stretch")
    goto = st.session_state.pop(GOTO, None)
    if goto is not None:
        st.switch_page(goto)
    key = st.session_state.get(TOUR)
    if key not in BY_KEY:
        return
    tour, index = BY_KEY[key], int(st.session_state.get(STEP, 0))
    step = tour.steps[index]
    with st.container(border=True, key="tour.panel"):
        st.markdown(f"**Tour: {tour.title}** · step {index + 1} of {len(tour.steps)}: **{step.title}**")
        st.markdown(step.text)
        # each button as wide as its label (in four equal columns "Set this step again" was cut at 1,024 px)
        with st.container(horizontal=True):
            st.button("Back", key="tour.back", on_click=go_to, args=(key, index - 1), disabled=index == 0)
            st.button("Set this step again", key="tour.again", on_click=go_to, args=(key, index))
            if index + 1 < len(tour.steps):
                st.button("Next", key="tour.next", type="primary", on_click=go_to, args=(key, index + 1))
            st.button("End the tour", key="tour.end", on_click=end)

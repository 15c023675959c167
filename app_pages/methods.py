"""Methods (teaching mode): one card per registered method, its formula, paper, parameters, cost
and pitfalls with a live mini-heatmap, an overview of all of them, and the guided tours."""

from __future__ import annotations

import pandas as pd
import streamlit as st

import services
from ui import method_cards, tours
from ui.share import link_warning, quoted

st.title("Methods")
st.caption(
    "What each attribution method computes, where it comes from, what it costs and what can go wrong, with the "
    "method run live on a short sentence. Every registered method has a card."
)
infos = {info.key: info for info in services.methods()}
model = services.default_model()
n_words = len(services.free_text_example(method_cards.SENTENCE, "").words)
cards = {key: method_cards.card(info, n_words) for key, info in infos.items()}

if st.session_state.get("methods.method") not in cards:
    wanted = st.query_params.get("method", "")
    first = next(iter(cards))
    st.session_state["methods.method"] = wanted if wanted in cards else first
    if wanted and wanted not in cards:
        link_warning(f"The link's method {quoted(wanted)} is not a method of this app: showing {first}.")
key = st.selectbox(
    "Method",
    list(cards),
    format_func=lambda k: f"{k} — {cards[k].family}",
    key="methods.method",
    persist_state="session",
)
st.query_params["method"] = key
method_cards.render(cards[key], model)

st.subheader("All methods")
overview = pd.DataFrame(
    [{"method": c.key, "family": c.family, "paper": c.paper, "cost": c.cost} for c in cards.values()]
)
st.dataframe(overview, hide_index=True, key="methods.overview")

st.subheader("Guided tours")
st.caption("Each tour sets the sidebar and the page for you, step by step, and says what to look at.")
for tour in tours.started_here():
    left, right = st.columns([4, 1], vertical_alignment="center")
    left.markdown(f"**{tour.title}**: {tour.summary}")
    right.button("Start", key=f"methods.tour.{tour.key}", on_click=tours.go_to, args=(tour.key, 0))

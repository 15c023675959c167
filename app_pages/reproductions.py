"""Reproductions: the papers' headline tables re-run on the bundled models and data, the published
values beside ours, each finding marked holds / does not hold / undecided / not run (``python -m cli
reproduce``; Pham et al. 2022, arXiv 2110.11929; Brinner & Zarrieß 2023; Barkan et al. 2024).

Opening the page reads the results kept in the run store (``engine.reproduce``: runs of kind
``reproduce``) and, for a reproduction the store has none of, the one bundled with the app
(``assets/reproductions/``); a Run button per reproduction computes one (the engine's code) through
the one Run gate and stores it. Each shows its default slice; other stored slices are a choice.
"""

from __future__ import annotations

import streamlit as st

import services
from ui import reproductions as R
from ui.runs import gate, run_or_stop
from ui.text import plain

st.title("Reproductions")
st.caption(
    "The papers' headline findings re-run here on small bundled models (all-MiniLM-L6-v2 adapters, not "
    "BERT-base) and a dev slice: read them as checks of each finding's direction, not of its size."
)
entries = services.reproductions.reproductions()
papers: dict[str, list] = {}
for entry in entries:
    papers.setdefault(entry.paper, []).append(entry)
results = services.reproductions.stored()
version = services.reproductions.code_version()
ran = [shown.payload for shown in results.values() if shown.payload is not None]
packaged = sum(1 for payload in ran if payload.get("bundled"))
st.markdown(R.headline([payload["finding"]["holds"] for payload in ran], len(entries), packaged))

for paper, group in papers.items():
    st.header(f"{group[0].title} ({paper})")
    claim = R.claim_of(group[0].title)
    if claim:
        st.markdown(plain(claim))
    for entry in group:
        shown = results[entry.name]
        st.subheader(f"{entry.table}: {entry.name}")
        slices = sorted({result.limit for result in shown.stored} - {entry.default_limit})
        if slices:
            chosen = st.selectbox(
                "Slice shown", [entry.default_limit, *slices], key=f"reproductions.{entry.name}.shown",
                format_func=lambda n, d=entry.default_limit: f"{n} examples per split" + (" (default)" if n == d else ""),
            )  # fmt: skip
            if chosen != entry.default_limit:
                shown = services.reproductions.at_slice(entry.name, shown.stored, chosen)
        payload, current, changed = shown.payload, shown.current, shown.changed
        if shown.warning:
            st.warning(plain(shown.warning))
        st.markdown(f"{R.verdict(payload)} **Claim:** {plain(entry.claim)}")
        left, right = st.columns([1, 3], vertical_alignment="bottom")
        limit = int(
            left.number_input(
                "Examples per split", entry.min_limit, 10_000, entry.default_limit, key=f"reproductions.{entry.name}.limit", persist_state="session",
                help=f"The default ({entry.default_limit}) runs in under about 15 minutes on 2 CPU cores.",
            )
        )  # fmt: skip
        request = {"name": entry.name, "limit": limit}
        if gate(f"reproductions.{entry.name}.run", request, f"Run {entry.name}", container=right, hint=False):
            payload = run_or_stop(services.reproductions.run, entry.name, limit)
            current, changed = True, ()
        if payload is None:
            R.not_run(services.reproductions.command(entry.name, entry.default_limit))
        else:
            R.show_result(payload, current, services.reproductions.command(entry.name, payload["limit"]), changed)
            R.show_stored(shown.stored, version, entry.name)

"""Dataset explorer: runs of every method and metric over whole splits, kept in the run store.

Pick a stored run, or start one on the sidebar's model and dataset (it runs in its own process
and goes on when the page is left). A sortable, filterable table of the examples, each one click
from its heatmap with the run's own scores; metric distributions, mean curves with 95% bands, and
whether the methods agree at all.
"""

from __future__ import annotations

import streamlit as st

import services
from ui import state
from ui.agreement import MEASURE_LABELS, agreement_figure
from ui.downloads import MISSING, download_row
from ui.explorer import (
    FILTERS,
    clicked_position,
    distribution_figure,
    filtered,
    graded,
    mean_curve_figure,
    stored_example,
    waiting_for_run,
)
from ui.imports import import_box
from ui.live_labels import live_selectbox
from ui.run_progress import delete_control, live_progress
from ui.runs import started_note
from ui.share import first_read, link_warning, quoted
from ui.text import plain
from ui.uploads import session_uploads

selection = state.current()
st.title("Dataset explorer")
st.caption("Whole-split runs kept in the run store (`ATTRIBUTION_RESULTS_DIR`), shared by every session.")
catalogue = services.runs.catalogue(session_uploads())

with st.expander("Start a run on the sidebar's model and dataset", expanded=catalogue.empty):
    if not selection.dataset or selection.error:
        st.info("Pick a model and a dataset split or a data file in the sidebar (not free text) to run over it.")
    else:
        size = services.dataset_size(selection.dataset, selection.split)
        with st.form("explorer.start"):
            methods = st.multiselect("Methods", [m.key for m in services.methods()], list(services.RUN_METHODS))
            metrics = st.multiselect("Metrics", [m.key for m in services.metric_infos()], list(services.RUN_METRICS))
            limit = st.number_input(
                f"First N examples of {size:,}", 1, size, min(100, size), key="explorer.limit", persist_state="session"
            )
            target = st.radio(
                "Explain", ["predicted", "gold"], horizontal=True, key="explorer.target", persist_state="session"
            )
            start = st.form_submit_button("Start the run", type="primary")
        if start:
            try:
                run_id = services.runs.start_run(
                    selection.model, selection.dataset, selection.split,
                    None if limit == size else int(limit), methods, metrics, target,
                )  # fmt: skip
            except ValueError as error:
                st.error(plain(str(error)))
            else:
                st.session_state["explorer.run"] = st.session_state["explorer.run_picker"] = run_id
                st.session_state["explorer.starting"] = run_id
                started_note("Run", run_id)
                catalogue = services.runs.catalogue(session_uploads())

imported = import_box(selection)
if imported is not None:
    st.session_state["explorer.run"] = st.session_state["explorer.run_picker"] = imported
    catalogue = services.runs.catalogue(session_uploads())

stored = set(catalogue["run_id"]) if not catalogue.empty else set()
if st.session_state.get("explorer.starting") in stored:
    del st.session_state["explorer.starting"]
elif starting := st.session_state.get("explorer.starting"):
    waiting_for_run(starting)  # its process loads the model before it stores the run's entry
    st.stop()
labels = {row["run_id"]: services.runs.run_label(row) for row in catalogue.to_dict("records")}
wanted = [run for run in (st.session_state.get("explorer.run"), st.query_params.get("run")) if run in labels]
asked = first_read("explorer.run_link", "run")
if asked is not None and asked not in labels:
    shown = f"{quoted(next(iter(wanted), next(iter(labels), '')))} is shown" if labels else "it holds no run yet"
    link_warning(
        f"The link asks for run {quoted(asked)}, which is not in this run store (deleted, not stored yet, or "
        f"kept in another results folder): {shown}."
    )
if catalogue.empty:
    st.info("No stored run yet: start one above, import one, or use `python -m cli run`.")
    st.stop()
run_id = live_selectbox("Stored run", list(labels), labels.get, "explorer.run_picker", next(iter(wanted), None))
st.session_state["explorer.run"] = run_id
st.query_params["run"] = run_id

live_progress(run_id, services.runs.info, within=services.runs.within_unit)
info = services.runs.info(run_id)
delete_control(info)
if info.rows_done == 0:
    st.info("No example of this run is finished yet.")
    st.stop()

try:
    run = services.runs.snapshot(run_id)  # one read: every table and figure below shows the same rows
except OSError as error:  # a unit file gone or damaged since the run was stored
    st.error(plain(str(error)))
    st.stop()
info = run.info
if run.head_unknown:
    st.warning(
        "This run's model cannot be loaded now, so its head is unknown: its outputs are read as a single-label classifier's."
    )
    st.caption(plain(run.head_unknown))  # it quotes the model's name
table = services.runs.example_table(run)
st.subheader("Examples")
if note := services.runs.label_note(info, run.head):
    st.caption(plain(note))  # it quotes the dataset's class names
show = (
    st.segmented_control("Show", FILTERS, default="all", key="explorer.filter", persist_state="session")
    if graded(table)
    else None
)
shown = filtered(table, show)
table_key = f"explorer.table.{run_id}.{show or 'all'}"  # a new table, no stale selection, per run and filter
picked = st.dataframe(
    shown, hide_index=True, on_select="rerun", selection_mode="single-row", key=table_key, placeholder=MISSING,
    column_config={"confidence": st.column_config.ProgressColumn(min_value=0.0, max_value=1.0, format="%.2f")},
)  # fmt: skip
download_row("explorer.table.download", name=f"{run_id}-examples", table=shown)
positions = list(shown["position"])

if not positions:
    st.info(f"No example of this run is {show}.")
else:
    clicked = clicked_position(table_key, picked.selection.rows if picked is not None else [], positions)
    if clicked is not None:
        st.session_state["explorer.position"] = clicked
    if st.session_state.get("explorer.position") not in positions:
        st.session_state.pop("explorer.position", None)
    position = st.selectbox(
        "Example", positions, key="explorer.position", persist_state="session", help="Or click a row of the table."
    )
    stored_example(run_id, info, int(position))

st.subheader("Per run")
left, right = st.columns(2)
values = services.runs.metric_values(run)
metric = left.selectbox("Metric", list(info.metrics), key="explorer.metric", persist_state="session")
distribution = distribution_figure(values[values["metric"] == metric], metric)
left.plotly_chart(distribution, key="explorer.distribution")
curves = services.runs.mean_curves(run)
curve_metrics = sorted({k for per in curves.values() for k in per})
if curve_metrics:
    curve_metric = right.selectbox("Mean curve", curve_metrics, key="explorer.curve", persist_state="session")
    curve_figure = mean_curve_figure(curves, curve_metric, head=run.head)
    right.plotly_chart(curve_figure, key="explorer.curves")
    with right:
        download_row("explorer.curves.download", name=f"{run_id}-{curve_metric}-curve", figure=curve_figure)
with left:
    download_row("explorer.distribution.download", name=f"{run_id}-{metric}", figure=distribution)

st.subheader("Do the methods agree?")
a, b = st.columns([3, 2])  # in halves the Measure's "top-k overlap (absolute scores)" was cut at 1,024 px
measure = a.selectbox(
    "Measure", list(MEASURE_LABELS), format_func=MEASURE_LABELS.get, key="explorer.measure", persist_state="session"
)
clustered = b.toggle("Order by clustering", key="explorer.clustered", persist_state="session", wrap=True)
names, matrix, disputes = services.runs.run_agreement(run, measure, clustered)
title = f"mean over {len(disputes)} examples"
agreement = agreement_figure(names, matrix, measure, title)
st.plotly_chart(agreement, key="explorer.agreement")
download_row("explorer.agreement.download", name=f"{run_id}-agreement", figure=agreement)
st.markdown("**Most disputed examples**: lowest mean pairwise agreement (pick one above to see it)")
disputed = table.assign(agreement=disputes).nsmallest(10, "agreement")[["position", "text", "agreement"]]
st.dataframe(disputed, hide_index=True, key="explorer.disputed", placeholder=MISSING)

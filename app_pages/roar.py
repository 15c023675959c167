"""Remove and retrain: ROAR (Hooker et al. 2019, arXiv:1806.10758), ROAR_BERT (Pham et al. 2022,
arXiv:2110.11929) and Recursive ROAR (Madsen et al. 2022, arXiv:2110.08412).

Open the bundled precomputed job (no compute), a job of the run store, or Madsen et al.'s synthetic
redundancy task; start a small job in the background after its cost estimate. Accuracy vs share
removed with 95% bands over seeds, Eq. 3, the t-tests, class-leakage flags, the sparsity of the
importance and an example's text at each level with the removed words visible.
"""

from __future__ import annotations

import streamlit as st

import services
from services import roar
from ui import runs as ui_runs
from ui import state
from ui.downloads import download_row
from ui.live_labels import live_selectbox
from ui.roar import (
    REMOVALS,
    SYNTHETIC_SOURCE,
    curve_figure,
    faithfulness_table,
    few_seeds_note,
    leakage_lines,
    removal_rows,
    source_labels,
    sparsity_figure,
    t_test_table,
)
from ui.run_progress import delete_control, live_progress
from ui.share import setting_from_link, setting_to_link
from ui.text import clipped, plain
from ui.uploads import session_uploads

st.title("Remove and retrain")
st.caption(
    "Each method's top words are removed from the training and evaluation data and the classifier is "
    "retrained: the further accuracy falls, the more the removed words mattered. Plain ROAR ranks with "
    "the first model; Recursive ROAR ranks again with each retrained model."
)

bundled = roar.bundled()
labels = source_labels(bundled, roar.stored_jobs(session_uploads()))
setting_from_link("roar.source", "job", list(labels), next(iter(labels)))
source = live_selectbox("Job", list(labels), labels.__getitem__, "roar.source")  # a stored job's label: its progress
setting_to_link("job", source, next(iter(labels)))
metric = st.radio("Performance", ["accuracy", "macro_f1"], horizontal=True, key="roar.metric", persist_state="session")


def synthetic_view() -> None:
    st.markdown(
        "16 features, 4 of them informative and mutually redundant; a logistic regression's absolute weights "
        "are the importance. **truth** masks the informative features first, **worst** last. Plain ROAR's "
        "`weights` curve stays high while redundant features remain; Recursive ROAR's follows the truth.\n\n"
        "Read the curves here rather than Eq. 3: the random baseline masks a different feature in every example, "
        "which one linear model cannot retrain around, so its accuracy falls from the first feature, while the "
        "truth keeps full accuracy until all four informative features are gone. Eq. 3 weighs that early gap, "
        "so on this task it scores the truth (and Recursive ROAR) below random."
    )
    n = st.select_slider(
        "Examples per seed", [500, 1000, 2000, 5000], 1000, key="roar.synthetic_n", persist_state="session"
    )
    both = roar.synthetic(n=int(n), metric=metric)
    columns = st.columns(2)
    for column, kind in zip(columns, ("plain", "recursive"), strict=True):
        with column:
            figure = curve_figure(both[kind], f"{kind} ROAR", x_title="features masked")
            st.plotly_chart(figure, key=f"roar.synthetic.{kind}")
            st.dataframe(faithfulness_table(both[kind]), hide_index=True)


def job_view(report: dict, key: str) -> None:
    summary = roar.summary(report, metric)
    job = report["job"]
    kind = "Recursive ROAR" if job["recursive"] else "ROAR"
    removal = REMOVALS.get(job["removal"], job["removal"])
    retrained = f"task `{job['task']}`" if job["task"] else plain(f"model {job['model']} on {job['dataset']}")
    st.markdown(
        f"**{kind}**, removal: {removal}, {retrained}: {report['n_train']} training and {report['n_eval']} "
        f"evaluation examples, {job['train_steps']} training steps, {job['seeds']} seed(s), "
        f"explaining the {job['target']} class · {report['units_done']} of {report['units_total']} units"
    )
    st.code(report["command"], language="bash")
    figure = curve_figure(summary, f"{kind}, {removal}")
    st.plotly_chart(figure, key=f"roar.{key}.curve")
    st.markdown(
        "**Faithfulness (Madsen et al. 2022, Eq. 3)**: area between the random curve and the method's, over the "
        "area between random and the 100% floor; 0 = random, negative = not faithful. The reading says faithful only "
        "where the whole 95% interval over seeds lies above 0."
    )
    table = faithfulness_table(summary)
    st.dataframe(table, hide_index=True)
    if note := few_seeds_note(job["seeds"]):
        st.caption(note)
    for line in leakage_lines(summary):
        st.warning(f"Class leakage? {line}")
    with st.expander("t-tests (Pham et al. 2022: Welch, two-sided, over seeds)"):
        st.dataframe(t_test_table(summary), hide_index=True)
    download_row(
        f"roar.{key}.download", name=f"roar-{report.get('run_id', key)}", figure=figure, table=table, json=summary
    )


def source_view() -> None:
    """The job picked above (or the synthetic task): its curves, tables and removed words."""
    if source == SYNTHETIC_SOURCE:
        synthetic_view()
        return
    if source.startswith("bundled:"):
        report = roar.bundled_report(source.removeprefix("bundled:"))
    else:
        run_id = source.removeprefix("stored:")
        live_progress(run_id, roar.info, "units", "job", within=services.runs.within_unit)
        delete_control(roar.info(run_id), roar.delete_job, "job", "units")
        try:
            report = roar.stored_report(run_id)
        except (ValueError, OSError) as error:  # e.g. the job's uploaded data file or the data folder is gone
            st.error(plain(f"Job {run_id} cannot be read: {error}"))
            return
    if not report["units"]:
        st.info("No unit of this job has finished yet.")
        return
    job_view(report, "job")
    if report.get("sparsity"):
        st.plotly_chart(sparsity_figure(report["sparsity"]), key="roar.sparsity")
    if report.get("examples"):
        st.subheader("What was removed")
        examples = report["examples"]
        position = live_selectbox(  # 38 characters fit the box on a 320 px phone, and at 1,024 px in either font
            "Evaluation example",
            range(len(examples)),
            lambda i: clipped(" ".join(examples[i]["words"]), 38),
            "roar.example",
        )
        for method, level, text in removal_rows(examples[position], report["label_names"]):
            st.markdown(f"`{method}` · {level}: {text}", unsafe_allow_html=True)


def start_form() -> None:
    """Start a job in the background, after its cost estimate if asked: drawn under every view, the
    synthetic task's and a job's with no finished unit yet included."""
    selection = state.current()
    OWN = "own"  # the job retrains the sidebar's model on the sidebar's dataset
    own_ok = selection.dataset not in (None, "examples") and not selection.error
    with st.expander("Start a job (runs in the background)"):
        with st.form("roar.start"):
            retrain = st.radio(
                "Retrain", ["sst2", OWN], horizontal=True, key="roar.retrain",
                format_func=lambda kind: "the bundled SST-2 task" if kind == "sst2" else (
                    plain(f"the sidebar's model {selection.model} on {selection.dataset}") if own_ok
                    else "the sidebar's model on its dataset (pick a dataset with a training split)"
                ),
                help="The sidebar's model is retrained from its own weights with a new head of the dataset's classes, on "
                "the dataset's train split, and scored on its dev (or validation, val, test) split; a data file of your "
                "own names them in its split column.",
            )  # fmt: skip
            methods = st.multiselect(
                "Methods (random is added)", ["loo_empty", "integrated_gradients", "saliency", "im"], ["loo_empty"]
            )
            removal = st.radio("Removal", list(REMOVALS), format_func=REMOVALS.__getitem__, horizontal=True)
            recursive = st.checkbox("Recursive ROAR")
            levels = st.text_input("Levels", "10%,20%,30%")
            seeds = st.number_input("Seeds", 1, 5, 2)
            train_size = st.number_input("Training examples", 16, 67349, 200)
            eval_size = st.number_input("Evaluation examples", 8, 872, 100)
            steps = st.number_input("Training steps", 1, 2000, 10)
            estimate = st.form_submit_button("Estimate the cost")
            start = st.form_submit_button("Start", type="primary")
        source_of_job = (
            {"task": "sst2"} if retrain == "sst2" else {"model": selection.model, "dataset": selection.dataset}
        )
        settings = {
            **source_of_job, "methods": methods, "removal": removal, "recursive": recursive,
            "levels": [part.strip() for part in levels.split(",") if part.strip()], "seeds": int(seeds),
            "train_size": int(train_size), "eval_size": int(eval_size), "train_steps": int(steps),
        }  # fmt: skip
        if (estimate or start) and retrain == OWN and not own_ok:
            st.error("Pick a dataset in the sidebar (not the bundled examples) to retrain its model on.")
            return
        if estimate:
            cost = ui_runs.run_or_stop(roar.estimate, settings)
            st.info(
                f"{cost['retrains']} retrains ({cost['training_steps']} steps), "
                f"{sum(cost['explanations'].values())} explanations, {cost['fills']} masked-LM fills: "
                f"about {cost['seconds'] / 60:.1f} min on one worker"
            )
        if start:
            try:
                run_id = roar.start_job(settings)
            except ValueError as error:
                st.error(plain(str(error)))
            else:
                ui_runs.started_note("Job", run_id, follow=" (pick it above to follow it)")


source_view()
start_form()

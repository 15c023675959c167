"""Faithfulness: remove the words a method ranks highest and watch the prediction.

Deletion and insertion curves (Arras et al. 2017; Pham et al.'s Deletion and Deletion_BERT),
comprehensiveness and sufficiency (ERASER, DeYoung et al. 2020; MaRC's 19 bins, Brinner & Zarrieß
2023) and log-odds (AML, Barkan et al. 2024). Three views: the curves of one example, the mean
curves and a method x metric table over a dataset slice, and two removal modes side by side (Pham et
al. 2022, Table 1), which shows when the ranking of the methods changes with the way words are
removed.
"""

from __future__ import annotations

import streamlit as st

import services
from ui import faithfulness as F
from ui import state
from ui.downloads import show_figure, show_table
from ui.imports import imported_note, imported_picker
from ui.prediction import result_markdown
from ui.runs import example_gate, gate, run_all_or_stop, run_or_stop, slice_controls, slice_estimate, stopped_note
from ui.share import methods_from_link, methods_to_link, setting_from_link, setting_to_link
from ui.text import plain

VIEWS = ("This example", "Dataset slice", "Removal modes compared")


def example_view(selection, methods: list[str], imported: list, metric_params: dict, method_params: dict) -> None:
    if not example_gate("faithfulness.example_run", selection, methods, method_params, [metric_params], len(imported)):
        return
    result = run_or_stop(
        services.faithfulness, selection.model, selection.example, methods, metric_params,
        target=selection.target, method_params=method_params, mlm_name=selection.mlm, imported=imported,
    )  # fmt: skip
    for key, message in result.errors.items():
        st.error(plain(f"{key}: {message}"))
    prediction, target = result.heatmap.prediction, result.heatmap.target
    n_words = len(prediction.example.words)
    st.markdown(result_markdown(prediction, target, selection.threshold))
    st.caption(
        f"The whole input has {n_words} word{'' if n_words == 1 else 's'}. Hover a point to see the input at that step."
    )
    if prediction.dropped_words:
        st.warning(f"The last {prediction.dropped_words} words do not fit the model and are left out.")
    F.show_curves(F.example_curves(result.runs, n_words, selection.head), "faithfulness.example")
    st.subheader("Scores")
    table, styled = F.example_table(result)
    show_table(table, shown=styled, key="faithfulness.example.table", name="faithfulness-example-scores")
    st.caption(
        "Best value per column highlighted; ↑ higher is better, ↓ lower is better. Areas use x = step / steps, "
        "so they are the mean probability along the curve. Metric passes are the distinct inputs scored in "
        "one batch per method (cached: changing the budget or removal recomputes only the metrics)."
    )


def slice_results(selection, methods, imported, metric_sets, method_params, memory: str) -> list | None:
    """Slice controls and the Run gate; each of ``metric_sets`` evaluated on the same examples,
    the ``imported`` methods beside the built-in ones."""
    if selection.dataset is None:
        st.info("Pick a dataset and split in the sidebar to evaluate a slice of it.")
        return None
    size = services.dataset_size(selection.dataset, selection.split)
    # three columns and the button under them: in a fourth column "Run on the slice" had 79 of its 121 px
    n, random_order, seed = slice_controls(st.columns(3, vertical_alignment="bottom"), size, 20, "faithfulness")
    data = [selection.dataset, selection.split, n, random_order, seed]
    request = {"model": selection.model, "data": data, "methods": methods, "metrics": metric_sets,
               "method_params": method_params, "mlm": selection.mlm, "imported": [m.name for m in imported]}  # fmt: skip
    examples = services.slice_examples(*data[:3], random_order=random_order == "random N", seed=seed)
    request["examples"] = services.examples_key(examples)  # an edited data file's slice is another request
    kept = {"method_params": method_params, "mlm_name": selection.mlm, "imported": imported}
    stopped_note([services.slice_stopped_at(selection.model, examples, methods, m, **kept) for m in metric_sets])
    slice_estimate(selection.model, examples, methods, method_params, metric_sets, scored=len(imported))
    if not gate("faithfulness.slice_run", request, "Run on the slice", memory=memory):
        return None
    tasks = [
        lambda progress, metric_params=metric_params: services.evaluate_slice(
            selection.model, examples, methods, metric_params, method_params=method_params,
            mlm_name=selection.mlm, imported=imported, progress=progress,
        )
        for metric_params in metric_sets
    ]  # fmt: skip
    # One bar for every set: the first explains the slice, the others score the attributions it kept
    results = run_all_or_stop(tasks, [1.0] + [0.1] * (len(tasks) - 1))
    for result in results:
        for method, message in result.errors.items():
            st.error(plain(f"{method}: {message}"))
    explained = " (or the class of its imported attributions)" if imported else ""
    st.caption(
        f"{len(examples)} examples of {plain(f'{selection.dataset}/{selection.split}')}, each explaining its predicted class"
        f"{explained} · {sum(r.runtime_s for r in results):.1f} s · {sum(r.forward_passes for r in results):,} forward "
        "passes (the methods', where they were not computed before, and the metrics')"
    )
    imported_note(imported, results[0].missing, len(examples))
    return results


def slice_view(selection, methods: list[str], imported: list, metric_params: dict, method_params: dict) -> None:
    results = slice_results(selection, methods, imported, [metric_params], method_params, "faithfulness.slice_request")
    if results is None:
        return
    F.show_curves(F.slice_curves(results[0], selection.head), "faithfulness.slice")
    table, styled = F.summary_table(results[0], F.table_metrics(metric_params))
    show_table(table, shown=styled, key="faithfulness.slice.table", name="faithfulness-slice-summary")
    st.caption("Mean [95% interval] over the slice; best mean per column highlighted; ↑ higher / ↓ lower is better.")


def compare_view(selection, methods: list[str], imported: list, metric_params: dict, method_params: dict) -> None:
    st.caption(
        "Pham et al. 2022 (Table 1) show that the verdict depends on how words are removed: a method that wins when "
        "removed words are replaced by a masked LM's fill-ins can lose when they are deleted."
    )
    if not {"im", "loo_empty"} <= set(methods):
        F.paper_pair_button()
    # the metric, then the two removals in halves: in three columns "masked-LM fill-in" was cut at 1,024 px
    # with the sidebar open, at the presentation font
    first, _ = st.columns(2)
    key = first.selectbox(
        "Metric",
        F.table_metrics(metric_params),
        format_func=F.column_name,
        key="faithfulness.compare_metric",
        persist_state="session",
    )
    removals = list(F.REMOVALS)
    second, third = st.columns(2)
    setting_from_link("faithfulness.compare_a", "removal_a", removals, removals[0])
    mode_a = second.selectbox(
        "Removal A", removals, format_func=F.REMOVALS.get, key="faithfulness.compare_a", persist_state="session"
    )
    setting_to_link("removal_a", mode_a, removals[0])
    setting_from_link("faithfulness.compare_b", "removal_b", removals, removals[4])
    mode_b = third.selectbox(
        "Removal B", removals, format_func=F.REMOVALS.get, key="faithfulness.compare_b", persist_state="session"
    )
    setting_to_link("removal_b", mode_b, removals[4])
    sets = [{key: {**metric_params[key], "removal": mode}} for mode in (mode_a, mode_b)]
    results = slice_results(selection, methods, imported, sets, method_params, "faithfulness.compare_request")
    if results is None:
        return
    # the built-in and the imported methods, of either set (a method that failed on every example
    # is only in the first)
    modes, methods = (mode_a, mode_b), list(dict.fromkeys([*results[0].summary, *results[1].summary]))
    frame, styled, flips, rankings = F.compare_table(methods, key, modes, tuple(results))
    show_table(frame, shown=styled, key="faithfulness.compare.table", name=f"faithfulness-{key}-{mode_a}-vs-{mode_b}")
    st.caption(f"{F.LABELS[key]}: {'higher' if F.higher_is_better(key) else 'lower'} is better; rank 1 = best.")
    if flips:
        st.warning("The ranking changes with the removal: " + "; ".join(flips))
    else:
        st.success("The ranking of the methods is the same under both removals.")
    show_figure(F.rank_figure(methods, modes, rankings), key="faithfulness.compare.ranks", name="faithfulness-ranks")


selection = state.current()
st.title("Faithfulness")
st.caption(
    "Remove the words a method ranks highest and watch the probability of the explained class: it should "
    "fall fast (deletion, comprehensiveness) and the top words alone should keep it (insertion, sufficiency). "
    "The random baseline is computed with the same code."
)
if selection.error:
    st.error(selection.error)
    st.stop()
infos = {m.key: m for m in services.methods()}
setting_from_link("faithfulness.view", "view", VIEWS, VIEWS[0])
view = st.segmented_control("View", VIEWS, key="faithfulness.view", persist_state="session") or VIEWS[0]
setting_to_link("view", view, VIEWS[0])
methods_from_link("faithfulness.methods", list(infos), [k for k in services.RUN_METHODS if k in infos])
methods = st.multiselect(
    "Methods", list(infos),
    format_func=lambda k: f"{k} — {infos[k].description}", key="faithfulness.methods", persist_state="session",
    placeholder="Choose attribution methods",
)  # fmt: skip
methods_to_link(methods)
imported = imported_picker(selection, "faithfulness.imported")
metric_params, method_params = F.settings_form(infos, methods, removal_shown=view != VIEWS[2])
if selection.head == "regression":  # log-odds need probabilities; a regression head has a raw score
    metric_params.pop("log_odds", None)
    st.caption("Log-odds are not defined for a regression head: the other metrics measure the change in score.")
if not methods and not imported:
    st.info("Choose at least one method.")
    st.stop()
view_of = {VIEWS[0]: example_view, VIEWS[1]: slice_view, VIEWS[2]: compare_view}
view_of[view](selection, methods, imported, metric_params, method_params)

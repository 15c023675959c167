"""Human rationales: the words people highlighted, next to the words each method selects.

Agreement as in Pham et al. 2022 (negatives zeroed, divide by the maximum, binarize at tau: IoU,
precision, recall, F1, coverage; the optimal tau over 0.05..0.95), ERASER (DeYoung et al. 2020;
Brinner & Zarrieß 2023: token F1 of the top-k words, span IOU-F1 at IoU 0.5, AUPRC) and the thesis
"Assessing the Interpretability of Large Language Models" (Oxford MSc, 2022: ground-truth overlap,
mean rank). Two views: one example with its human and binarized maps, and a
dataset slice with a table per method, the annotators' agreement among themselves as the human
ceiling, and the examples where each method agrees least with the humans.
"""

from __future__ import annotations

import streamlit as st

import services
from ui import rationales as R
from ui import state
from ui.costs import show_costs
from ui.heatmap import heatmap_html
from ui.highlight import compare_picker, highlight_picker
from ui.imports import imported_note, imported_picker
from ui.prediction import result_markdown
from ui.runs import example_gate, explain_selected, gate, run_or_stop, slice_controls, slice_estimate
from ui.share import methods_from_link, methods_to_link, setting_from_link, setting_to_link
from ui.text import plain

VIEWS = ("This example", "Dataset slice")
YOURS = "your highlight"  # the heatmap row of the reader's own highlight


def open_example(index: int) -> None:
    """Show one example of the slice in the example view (the sidebar follows the index)."""
    st.session_state["sidebar.index"] = index
    st.session_state["rationales.view"] = VIEWS[0]


def example_view(
    selection: state.Selection, methods: list[str], imported: list, metric_params: dict, annotator: str
) -> None:
    example = selection.example
    own: tuple[int, ...] = ()
    beside: tuple[int, ...] = ()  # the reader's own highlight beside the annotators'
    if example.has_rationale:
        beside = compare_picker(example)
    else:
        own = highlight_picker(example)
        if not own:
            st.info(
                "No human highlighted this example: mark the words you would point to above, and each method is "
                "scored against your highlight. Human highlights come with e-SNLI (split dev_highlighted), ERASER "
                "movies and HateXplain (posts judged normal have none)."
            )
            return
    if not example_gate("rationales.example_run", selection, methods, {}, []):
        return
    result = services.with_imports(explain_selected(selection, methods), imported)
    for key, message in result.errors.items():
        st.error(plain(f"{key}: {message}"))
    prediction, fitted, target = result.prediction, result.prediction.example, result.target
    st.markdown(result_markdown(prediction, target, selection.threshold, gold=fitted.gold_name))
    if prediction.dropped_words:
        st.warning(f"The last {prediction.dropped_words} words do not fit the model and are left out.")
    yours, past = services.with_highlight(fitted, own or beside)
    if past:
        st.warning(f"{past} of the words you marked are past what the model reads and are left out.")
    fitted = yours if own else fitted
    mask = services.human_outline(fitted, annotator)
    chosen = metric_params["token_f1"]  # the selection token F1 and IOU-F1 score
    name = services.selection_name(chosen, mask)
    rows = services.human_rows(fitted, YOURS if own else "human · majority")
    if beside:
        rows.update(services.human_rows(yours, YOURS))
    rows.update({f"{m} · {name}": services.selected(a, mask, chosen) for m, a in result.attributions.items()})
    st.subheader(f"{'Your highlight' if own else 'Human highlights'} and the words each method selects")
    shown = (
        f"highlighted ({'your row' if own else 'human rows'}) or selected (method rows)",
        "not highlighted or selected",
    )
    outline_name = YOURS if own else "human rationale"
    st.html(
        heatmap_html(fitted.words, fitted.segment_ids, rows, rationale=mask, binary=shown, outline_name=outline_name)
    )
    how = (
        f"its positive scores divided by its largest score, kept when at least τ = {chosen['threshold']:.2f}"
        if chosen.get("selection") == "threshold"
        else f"its {name.removeprefix('top ')} highest-scoring words"
        + (f" (k: as many as {'you' if own else 'the humans'} marked)" if not chosen.get("k") else "")
    )
    whose = f"row “{YOURS}”" if own else "rows “human · …”" + (f" and “{YOURS}”" if beside else "")
    outline = "your highlight" if own else f"the human mask compared against ({R.annotator_label(annotator)})"
    st.caption(
        f"Red cells: words highlighted ({whose}) or selected by a method as token F1 and IOU-F1 select them: "
        f"{how}. Outlined: {outline}."
    )
    with st.expander(f"Continuous scores with {'your' if own else 'the human'} outline"):
        st.html(
            heatmap_html(
                fitted.words, fitted.segment_ids, result.attributions, rationale=mask, outline_name=outline_name
            )
        )
    st.subheader("Agreement with your highlight" if own else "Agreement with the humans")
    scores = services.rationale_scores(fitted, result.attributions, metric_params)
    reader = services.rationale_ceiling(fitted, metric_params, reader=yours.rationale) if beside else None
    R.example_table(scores, services.rationale_ceiling(fitted, metric_params), YOURS if own else R.HUMAN_MASK, reader)
    show_costs(result.attributions, key="rationales.example.costs", name="rationales-costs")


def slice_view(
    selection: state.Selection, methods: list[str], imported: list, metric_params: dict, annotator: str
) -> None:
    if selection.dataset is None:
        st.info(
            "Pick a dataset with human rationales in the sidebar (e-SNLI dev_highlighted, movies, HateXplain), or a "
            "data file of your own with a rationale column."
        )
        return
    size = services.dataset_size(selection.dataset, selection.split)
    # three and two: five in a row left "Correct predictions only" 54 px at 1,024 px
    n, order, seed = slice_controls(st.columns(3, vertical_alignment="bottom"), size, 50, "rationales")
    fourth, fifth = st.columns(2, vertical_alignment="bottom")
    correct_only = fourth.checkbox(
        "Correct predictions only",
        key="rationales.correct_only",
        persist_state="session",
        help="Pham et al. 2022 score correctly predicted examples.",
    )
    objective = st.radio(
        "Optimal τ maximises", ("iou", "f1"), format_func=R.LABELS.get, horizontal=True, key="rationales.objective", persist_state="session",
        help="Pham et al. 2022 report each method at the τ in 0.05, 0.10, …, 0.95 with the best mean agreement.",
    )  # fmt: skip
    request = {"model": selection.model, "data": [selection.dataset, selection.split, n, order, seed, correct_only],
               "methods": methods, "metrics": metric_params, "objective": objective, "mlm": selection.mlm,
               "imported": [m.name for m in imported]}  # fmt: skip
    indices = services.slice_indices(selection.dataset, selection.split, n, random_order=order == "random N", seed=seed)
    examples = [services.dataset_example(selection.dataset, selection.split, i) for i in indices]
    request["examples"] = services.examples_key(examples)  # an edited data file's slice is another request
    slice_estimate(selection.model, examples, methods, {}, [])
    if not gate("rationales.slice_run", request, "Run on the slice", container=fifth):
        return
    result = run_or_stop(
        services.rationale_slice, selection.model, selection.dataset, selection.split, indices, methods,
        metric_params, correct_only=correct_only, objective=objective, mlm_name=selection.mlm, imported=imported,
    )  # fmt: skip
    for method, message in result.errors.items():
        st.error(plain(f"{method}: {message}"))
    st.caption(
        f"{len(result.items)} examples of {plain(f'{selection.dataset}/{selection.split}')} (predicted class explained"
        f"{', or that of the imported attributions' if imported else ''}"
        f"{', correct predictions only' if correct_only else ''}) · {result.human_coverage.skipped} without a human "
        f"rationale ({R.annotator_label(annotator)}), counted apart · {result.runtime_s:.1f} s · "
        f"{result.forward_passes:,} forward passes for the explanations"
    )
    imported_note(imported, result.missing, len(indices))
    R.summary_table(result, metric_params["iou"]["threshold"])
    R.convention_note(metric_params, pairs=len(examples[0].segments) > 1 if examples else True)
    R.micro_table(result)
    R.threshold_table(result, objective)
    R.worst_examples(result, open_example)


selection = state.current()
st.title("Human rationales")
st.caption(
    "Compare the words a method ranks highest with the words people highlighted (e-SNLI highlights, ERASER movie "
    "evidence, HateXplain annotators). Agreement is plausibility, not faithfulness: a map can match the humans and "
    "still misdescribe the model."
)
if selection.error:
    st.error(selection.error)
    st.stop()
infos = {m.key: m for m in services.methods()}
setting_from_link("rationales.view", "view", VIEWS, VIEWS[0])
view = st.segmented_control("View", VIEWS, key="rationales.view", persist_state="session") or VIEWS[0]
setting_to_link("view", view, VIEWS[0])
methods_from_link("rationales.methods", list(infos), [k for k in services.RUN_METHODS if k in infos])
methods = st.multiselect(
    "Methods", list(infos),
    format_func=lambda k: f"{k} — {infos[k].description}", key="rationales.methods", persist_state="session",
    placeholder="Choose attribution methods",
)  # fmt: skip
methods_to_link(methods)
imported = imported_picker(selection, "rationales.imported")
annotators = 0
if selection.dataset is not None:
    annotators = services.annotator_count(selection.dataset, selection.split)
elif selection.example is not None:
    annotators = len(selection.example.rationales)
options = ["majority", "any", *(str(i) for i in range(annotators if annotators > 1 else 0))]
own = view == VIEWS[0] and selection.example is not None and not selection.example.has_rationale
pairs = selection.example is None or len(selection.example.segments) > 1
metric_params, annotator = R.settings_form(options, own=own, pairs=pairs)
if not methods and not imported:
    st.info("Choose at least one method.")
    st.stop()
(example_view if view == VIEWS[0] else slice_view)(selection, methods, imported, metric_params, annotator)

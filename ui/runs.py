"""Long service calls: the gate that waits for a Run button, and the progress bar they run under."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import streamlit as st

import services
from ui.run_progress import remember_started
from ui.text import plain

T = TypeVar("T")
AUTO_RUN_S = 20.0  # a run estimated longer than this waits for a click on its page's Run button

SINGLE, SLICE = "this example", "dataset slice"


def slice_controls(columns: list, size: int, default_n: int, prefix: str) -> tuple[int, str, int]:
    """A dataset slice's size, order ("first N" or "random N") and seed, in the first three of
    ``columns`` (the faithfulness and rationale pages' slice views), under ``prefix``'s keys."""
    first, second, third = columns[:3]
    # Seeded in the state, not as a default (a tour sets it), and kept inside this dataset's size
    asked = int(st.session_state.get(f"{prefix}.slice_n", default_n))
    st.session_state[f"{prefix}.slice_n"] = min(max(asked, 1), size)
    n = int(first.number_input(f"Examples (1–{size})", 1, size, key=f"{prefix}.slice_n", persist_state="session"))
    order = second.radio(
        "Which", ("first N", "random N"), horizontal=True, key=f"{prefix}.slice_order", persist_state="session"
    )
    seed = int(third.number_input("Seed", 0, 2**31 - 1, 0, key=f"{prefix}.slice_seed", persist_state="session"))
    return n, order, seed


def slice_estimate(
    model: str, examples: list, methods: list[str], method_params: dict, metric_sets: list[dict], scored: int = 0
) -> None:
    """A slice's estimated time and passes (``services.estimate_slice``; ``scored`` imported
    attributions are scored, not computed), in a caption above its Run button; nothing where the
    model cannot take the examples (the run says why)."""
    try:
        estimate = services.estimate_slice(model, examples, methods, method_params, metric_sets, scored)
    except ValueError:
        return
    passes = services.passes_text(estimate.classifier_passes, estimate.backward_passes, estimate.mlm_passes)
    st.caption(
        f"Estimated time for the slice: about {services.duration_text(estimate.seconds)} on this machine "
        f"(at most {passes} over {len(examples)} examples; less for what is already computed)."
    )


def run_or_stop(task: Callable[..., T], *args, **kwargs) -> T:
    """``task(*args, progress=..., **kwargs)`` with a progress bar that is removed when it ends.

    A ``ValueError`` (empty text, a model that cannot be used, bad settings) is shown as an error
    and stops the page; any other exception is a bug and propagates. In shared mode the call
    waits for a slot of the server's queue, one long request per session at a time."""
    return run_all_or_stop([lambda progress: task(*args, progress=progress, **kwargs)])[0]


def run_all_or_stop(
    tasks: Sequence[Callable[[Callable[[float, str], None]], T]], shares: Sequence[float] = ()
) -> list[T]:
    """Each of ``tasks`` (called with its ``progress``) in turn under one progress bar, task i
    filling ``shares[i]`` of it (default equal shares), so that the bar never starts again; as
    ``run_or_stop`` otherwise."""
    shares = list(shares) or [1.0] * len(tasks)
    starts = [sum(shares[:i]) / sum(shares) for i in range(len(tasks) + 1)]
    bar = st.progress(0.0, text="Starting…")
    results = []
    try:
        with services.heavy_slot(_session_id(), waiting=lambda: bar.progress(0.0, text=_WAITING)):
            for task, start, end in zip(tasks, starts, starts[1:]):

                def progress(fraction: float, message: str, start=start, end=end) -> None:
                    bar.progress(min(1.0, start + (end - start) * min(1.0, fraction)), text=message)

                results.append(task(progress))
    except ValueError as error:
        bar.empty()
        st.error(plain(str(error)))
        st.stop()
    bar.empty()
    return results


_WAITING = "Waiting for a free slot: this shared server runs other visitors' long requests first…"


def _session_id() -> str:
    """This browser session's id for the shared-mode queue (random, kept in its session state)."""
    return st.session_state.setdefault("runs.session_id", uuid.uuid4().hex)


def explain_selected(
    selection, methods: list[str], params: dict | None = None, mlm_name: str | None = None, windows: bool = False
) -> services.HeatmapResult:
    """The selected example explained by ``methods`` for the selected target, under a progress bar
    (``mlm_name`` defaults to the sidebar's masked LM; ``windows``: a text too long for the model is
    explained whole in sliding windows)."""
    return run_or_stop(
        services.explain,
        selection.model,
        selection.example,
        methods,
        target=selection.target,
        params=params,
        mlm_name=mlm_name or selection.mlm,
        windows=windows,
    )


def gate(
    key: str,
    request: Any,
    label: str,
    *,
    container: Any = None,
    auto: bool = False,
    memory: str | None = None,
    help: str | None = None,
    hint: bool = True,
) -> bool:
    """The one Run gate of every page: True once the button ``label`` (widget ``key``, drawn in
    ``container``) was pressed for exactly these settings (``request``, remembered across reruns
    under ``memory``, default ``{key}.request``), or at once, without a button, when ``auto`` (a
    run short enough to start without a click); while it waits, ``hint`` says to press it."""
    name = memory or f"{key}.request"
    signature = json.dumps(request, sort_keys=True, default=str)
    if auto:
        return True
    if (container or st).button(label, type="primary", key=key, help=help):
        st.session_state[name] = signature
    if st.session_state.get(name) == signature:
        return True
    if hint:
        st.info(f"Press **{label}** to compute these settings.")
    return False


def stop_without_results_folder() -> None:
    """Stop every page with one error when the results folder is a file: the run store, the
    uploads and the pre-trained models all live under it."""
    if problem := services.runs.results_folder_problem():
        st.error(plain(problem))
        st.stop()


def example_gate(
    key: str, selection, methods: list[str], method_params: dict, metric_sets: list[dict], scored: int = 0
) -> bool:
    """The Run gate of explaining the sidebar's example with ``methods`` and scoring each
    attribution (and ``scored`` imported ones) with ``metric_sets``, where that is estimated longer
    than ``AUTO_RUN_S`` (``services.estimate_slice`` of the one example, in a caption); True at once
    for a shorter run, or where the model cannot take the example (the run says why). AML's
    pre-training is counted until its model is ready."""
    model, example = selection.model, selection.example
    try:
        estimate = services.estimate_slice(model, [example], methods, method_params, metric_sets, scored)
        pretraining = services.pretraining_seconds(model, example, methods, method_params)
    except ValueError:
        return True
    if estimate.seconds + pretraining <= AUTO_RUN_S:
        return True
    duration = services.duration_text(estimate.seconds + pretraining)
    passes = services.passes_text(estimate.classifier_passes, estimate.backward_passes, estimate.mlm_passes)
    once = f"; {services.duration_text(pretraining)} of it AML's pre-training, once" if pretraining else ""
    st.caption(f"Estimated time for this example: about {duration} on this machine (at most {passes}{once}).")
    request = [model, list(example.segments), selection.target, methods, method_params, metric_sets, selection.mlm]
    return gate(key, request, f"Run on this example (≈ {duration})")


def example_scope(container, selection, prefix: str, most: int, default: int, help: str) -> tuple[str, int]:
    """Radio "this example" / "dataset slice" (the slice only when a dataset is selected) and, for
    a slice, how many of its first examples; returns the scope and the number of examples."""
    scopes = [SINGLE, SLICE] if selection.dataset else [SINGLE]
    scope = container.radio("Examples", scopes, key=f"{prefix}.scope", persist_state="session", horizontal=True)
    if scope != SLICE:
        return scope, 1
    size = services.dataset_size(selection.dataset, selection.split)
    if size < 2:  # the picker's least is 2 (one example is "this example"): a one-row split has no slice
        container.info(plain(f"{selection.dataset}/{selection.split} has one example: it is run as this example."))
        return SINGLE, 1
    count = st.number_input(
        plain(f"First N examples of {selection.dataset}/{selection.split}"),
        min_value=2,
        max_value=min(most, size),
        value=min(default, size),
        key=f"{prefix}.n_examples",
        persist_state="session",
        help=help,
    )
    return scope, int(count)


def long_text_toggle(selection) -> bool:
    """For a single text longer than the model accepts, a toggle to explain all of it in sliding
    windows (engine/windows.py); False when the text fits or is a pair."""
    if selection.example is None or selection.example.is_pair:
        return False
    try:
        dropped = services.predict_example(selection.model, selection.example).dropped_words
    except ValueError:
        return False  # the explanation call shows the error
    if not dropped:
        return False
    return st.toggle(
        "Explain the whole text in sliding windows",
        key="runs.windows",
        persist_state="session",
        help="Overlapping windows that each fit the model, every window explained on its own, each word's score "
        "taken from the window where it has the most context. Leave-one-out, IM, gradient and random methods "
        "only: methods that fit one surrogate or mask over the whole input are refused.",
    )


def coverage_note(model: str, prediction: services.PredictionResult) -> None:
    """Say how much of the text the scores cover (the model named without its head or autocast
    marks)."""
    name = services.split_ref(model)[0]
    n_words = len(prediction.example.words)
    if prediction.windows:
        st.info(f"All {n_words} words explained in {len(prediction.windows)} sliding windows.")
    elif prediction.dropped_words:
        st.warning(
            f"The text is longer than {plain(name)} accepts: the first {n_words} of {n_words + prediction.dropped_words} "
            f"words are explained; the last {prediction.dropped_words} words were dropped"
            + ("." if prediction.example.is_pair else " (turn on sliding windows to explain all of them).")
        )
    unknown = services.unknown_words(model, prediction.example)
    if unknown:
        shown = ", ".join(unknown[:8]) + (", …" if len(unknown) > 8 else "")
        st.info(
            plain(
                f"{len(unknown)} of {n_words} words are not in {name}'s vocabulary ({shown}): it reads each as "
                "[UNK], so their scores cannot tell them apart. The subwords view shows what it reads."
            )
        )


def stopped_note(stopped: list[tuple[int, int] | None]) -> None:
    """Say that an earlier run of these settings stopped part-way (a closed tab, a page left) and
    that running them again goes on from there (``services.slice_stopped_at``)."""
    first = next((s for s in stopped if s is not None), None)
    if first is not None:
        done, asked = first
        st.warning(
            f"A run of these settings stopped after {done} of {asked} examples. What it finished is kept: "
            f"running it again goes on from example {done + 1}."
        )


def started_note(what: str, run_id: str, follow: str = "") -> None:
    """The line after a background run or ROAR job was asked for: where its log is, or the end of
    the log when the process stopped at once (``services.background.early_failure``); or, when no
    process was started, that the same settings are stored already or written by another process.
    The session is noted as the one that started it (its Stop button, ``ui.run_progress``) only
    when this call started a process (``services.background.started_here``)."""
    found = services.runs.find(run_id)
    if found is not None and found.nothing_to_start and not services.background.is_running(run_id):
        if found.status == "done":
            st.info(f"{what} `{run_id}` is stored already with these settings: nothing was computed again.")
        else:
            st.info(f"{what} `{run_id}` is being written by another process{follow}: stop it there.")
        return
    if services.background.started_here(run_id):
        remember_started(run_id)
    log = services.background.log_name(run_id)
    failure = services.background.early_failure(run_id)
    if failure is None:
        st.success(f"{what} `{run_id}` goes on in the background{follow} (log: `{log}` in the run store's folder).")
    else:
        st.error(f"{what} `{run_id}` stopped as soon as it started; the end of its log `{log}`:")
        st.code(failure, language=None)

"""The shared sidebar: model, head type and scoring precision, dataset and split, example, target
and masked LM.

It runs on every page (``app.py`` renders it before the page), stores one ``Selection`` in the
session state and mirrors model, dataset, split, example index, target and typed text into the
URL's query parameters, which it reads back on a session's first run so a view can be shared; what
a link asks for and cannot get is named in a warning (``ui.share.link_warning``), never swapped
silently.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

import services
from core.types import DEFAULT_THRESHOLD
from ui.share import copy_link, link_warning
from ui.sidebar_link import DEFAULT_TEXT, default_split, link_texts, read_url_once, write_url
from ui.state import Selection, set_selection
from ui.text import plain, shortened_name
from ui.uploads import count_as_own, earlier_upload_picker


def render() -> Selection:
    choices = {c.name: c for c in services.model_choices()}
    options = services.dataset_options()
    notes = read_url_once(choices, options)
    with st.sidebar:
        st.header("Input")
        for note in notes:
            link_warning(note)
        model = services.model_ref(_model_picker(choices, options), _head_picker(), _autocast_picker())
        try:
            info = services.model_info(model)
        except ValueError as error:
            info, model_error = None, str(error)
        else:
            model_error = None
        dataset, split, index, example, example_error = _example_picker(options)
        texts = link_texts(dataset)
        head = info.head if info else "single_label"
        target = _target_picker(info.label_names if info else (), head)
        threshold = _threshold_picker() if head == "multi_label" else DEFAULT_THRESHOLD
        mlm = _mlm_picker()
        model_name = services.split_ref(model)[0]
        write_url({"model": model_name, "dataset": dataset, "split": split, "index": index, "target": target, **texts})
        copy_link()
    selection = Selection(
        model=model,
        label_names=info.label_names if info else (),
        pair=info.pair if info else None,
        dataset=dataset if dataset != services.FREE_TEXT else None,
        split=split,
        index=index,
        example=example,
        target=target,
        mlm=mlm,
        error=_shown(model_error or example_error),
        head=head,
        threshold=threshold,
    )
    set_selection(selection)
    return selection


def _shown(error: str | None) -> str | None:
    """An error as the pages show it: escaped, since it may quote a model name from the link."""
    return plain(error) if error else None


# --------------------------------------------------------------------------- widgets


def _model_picker(choices: dict[str, services.ModelChoice], options: dict[str, list[str]]) -> str:
    st.session_state.setdefault("sidebar.model", services.default_model())
    if st.session_state["sidebar.model"] not in choices:
        st.session_state["sidebar.model"] = services.default_model()
    labels = model_labels(choices)
    shortened = [choice.label for name, choice in choices.items() if labels[name] != choice.name]
    full = f" Shortened in the list: {', '.join(shortened)}." if shortened else ""
    selected = st.selectbox(
        "Model",
        list(choices),
        format_func=labels.get,
        key="sidebar.model",
        help=f"Bundled models work offline; hub models are downloaded on first use.{full}",
        on_change=_follow_model_task,
        args=(options,),
    )
    if services.shared_mode():
        # Shared mode offers the allow-list only; a model named in a link is still checked (and
        # refused with the one message of services.access) rather than silently replaced, until the
        # visitor picks a listed one (the picker's change, or this button for the one it shows).
        typed = str(st.session_state.get("sidebar.model_path", ""))
        if typed.strip() and st.button(plain(f"Use {labels[selected]} instead"), key="sidebar.drop_link_model"):
            st.session_state.pop("sidebar.model_path", None)
            typed = ""
    else:
        typed = st.text_input(
            "…or any hub id or local folder",
            key="sidebar.model_path",
            placeholder="e.g. textattack/bert-base-uncased-SST-2",
        )
    return typed.strip() or selected


# The most characters of a model's name in the Model picker: the presentation font's sidebar fits
# about 23 ("distilbert-base-uncased-finetuned-sst-2-english (hub)" ran past the box at either font)
MODEL_LABEL_CHARS = 22
DATA_FILE_HELP = (
    "CSV, TSV, JSON lines or Parquet. The text in a column named text (or sentence, premise, review, content); a "
    "pair's second text in text_b (or hypothesis, sentence2); the gold class in label (a number, or a name: the model's class of that name); human highlights as "
    "character spans in rationale; the rows' splits (train, dev ...) in split."
)


def model_labels(choices: dict[str, services.ModelChoice]) -> dict[str, str]:
    """What the Model picker shows of each model: its name without the hub owner, past
    MODEL_LABEL_CHARS characters shortened around an ellipsis (``ui.text.shortened_name``); a model
    whose short name another one shares shows its full label."""
    short = {name: shortened_name(name.rsplit("/", 1)[-1], MODEL_LABEL_CHARS) for name in choices}
    taken = list(short.values())
    return {name: label if taken.count(label) == 1 else choices[name].label for name, label in short.items()}


def _follow_model_task(options: dict[str, list[str]]) -> None:
    """When the bundled examples are shown, switch to those written for the new model's task; in
    shared mode, the picked model replaces one a link named (it has no field of its own there)."""
    if services.shared_mode():
        st.session_state.pop("sidebar.model_path", None)
    task = services.model_task(st.session_state["sidebar.model"])
    if st.session_state.get("sidebar.dataset") == "examples" and task in options["examples"]:
        st.session_state["sidebar.split"] = task
        st.session_state["sidebar.index"] = 0


def _example_picker(options: dict[str, list[str]]):
    """(dataset, split, index, example, error) for a dataset example, free text or a data file."""
    names = [*options, services.FREE_TEXT, services.DATA_FILE]
    if st.session_state.get("sidebar.dataset") not in names:
        st.session_state["sidebar.dataset"] = "examples"
    dataset = st.selectbox(
        "Dataset", names, key="sidebar.dataset",
        help="Datasets found in the data folder, typed text, or a data file of your own on this machine.",
    )  # fmt: skip
    if dataset == services.FREE_TEXT:
        # seeded in the state, not as the widgets' values: a link or a bundle may have set the state
        st.session_state.setdefault("sidebar.text", DEFAULT_TEXT)
        st.session_state.setdefault("sidebar.text_b", "")
        text = st.text_area("Text (premise for pair models)", key="sidebar.text", height=110, persist_state="session")
        text_b = st.text_area(
            "Hypothesis (sentence-pair models only)", key="sidebar.text_b", height=70, persist_state="session"
        )
        return dataset, None, None, services.free_text_example(text, text_b), None
    if dataset == services.DATA_FILE:
        path, problem = _data_file_path()
        if problem is not None:
            return dataset, None, None, None, problem
        dataset = services.FILE_PREFIX + path
        try:
            splits = services.data_file_splits(dataset)
        except ValueError as error:
            return dataset, None, None, None, str(error)
    else:
        splits = options[dataset]
    if st.session_state.get("sidebar.split") not in splits:
        st.session_state["sidebar.split"] = default_split(dataset, splits)
    split = st.selectbox("Split", splits, key="sidebar.split", persist_state="session")
    try:
        size = services.dataset_size(dataset, split)
    except ValueError as error:
        return dataset, split, None, None, str(error)
    asked = int(st.session_state.get("sidebar.index", 0))
    st.session_state["sidebar.index"] = min(max(asked, 0), size - 1)
    if st.session_state["sidebar.index"] != asked:  # a link's or the last split's index: say so, never swap silently
        link_warning(
            f"{plain(f'{dataset}/{split}')} has no example {asked} (0–{size - 1}): "
            f"showing {st.session_state['sidebar.index']}."
        )
    left, right = st.columns([3, 2], vertical_alignment="bottom")
    index = int(
        left.number_input(f"Example (0–{size - 1})", 0, size - 1, step=1, key="sidebar.index", persist_state="session")
    )
    right.button(  # an icon: "Random" was cut to "Ran…" in the presentation font at 1,024 px
        ":material/shuffle:", key="sidebar.random", on_click=_pick_random, args=(dataset, split), width="stretch",
        help="A random example of this split",
    )  # fmt: skip
    example = services.dataset_example(dataset, split, index)
    gold = f" · gold: {plain(str(example.gold_name or example.label))}" if example.label is not None else ""
    rationale = " · has a human rationale" if example.rationale is not None else ""
    st.caption(f"{plain(example.id)}{gold}{rationale}")  # a data file's name is in its ids
    return dataset, split, index, example, None


def _data_file_path() -> tuple[str, str | None]:
    """The path of the data file the sidebar names, or why there is none: an upload (kept in the
    results folder; its path goes in the path box) or a typed path. A shared server takes uploads
    only: it reads no file of its own."""
    shared = services.shared_mode()
    upload = st.file_uploader(
        "Upload a data file", type=services.SHARED_DATA_FILE_TYPES if shared else services.DATA_FILE_TYPES,
        key="sidebar.upload",
        max_upload_size=services.DATA_UPLOAD_MB, help=DATA_FILE_HELP,
    )  # fmt: skip
    if upload is not None and st.session_state.get("sidebar.upload_seen") != upload.file_id:
        try:
            name = services.save_upload(upload.name, upload.getvalue())
        except (ValueError, OSError) as error:
            return "", f"Cannot keep the upload: {error}"
        st.session_state["sidebar.upload_seen"] = upload.file_id
        st.session_state["sidebar.data_file"] = name.removeprefix(services.FILE_PREFIX)
        count_as_own(name)
    earlier_upload_picker(shared)
    if shared:
        path = str(st.session_state.get("sidebar.data_file") or "")
        return path, None if path else "Upload a data file in the sidebar."
    path = st.text_input(
        "…or the path of a file on this machine", key="sidebar.data_file", placeholder="/path/to/reviews.csv",
        help=DATA_FILE_HELP, persist_state="session",
    ).strip()  # fmt: skip
    return path, None if path else "Upload a data file, or type the path of one, in the sidebar."


def select_example(model: str, dataset: str, split: str, index: int) -> None:
    """Point the sidebar at one dataset example (used before switching page); takes effect when
    the sidebar renders next."""
    choices = {c.name for c in services.model_choices()}
    st.session_state["sidebar.model" if model in choices else "sidebar.model_path"] = model
    if model in choices:
        st.session_state["sidebar.model_path"] = ""
    if dataset.startswith(services.FILE_PREFIX):  # a run on a data file: its path in the file box
        st.session_state["sidebar.data_file"] = dataset.removeprefix(services.FILE_PREFIX)
        dataset = services.DATA_FILE
    st.session_state["sidebar.dataset"] = dataset
    st.session_state["sidebar.split"] = split
    st.session_state["sidebar.index"] = index


def select_text(model: str, text: str, text_b: str = "") -> None:
    """Point the sidebar at typed text (a session bundle of free text); takes effect when the
    sidebar renders next."""
    choices = {c.name for c in services.model_choices()}
    st.session_state["sidebar.model" if model in choices else "sidebar.model_path"] = model
    if model in choices:
        st.session_state["sidebar.model_path"] = ""
    st.session_state["sidebar.dataset"] = services.FREE_TEXT
    st.session_state["sidebar.text"] = text
    st.session_state["sidebar.text_b"] = text_b


def _pick_random(dataset: str, split: str) -> None:
    st.session_state["sidebar.index"] = services.random_index(dataset, split)


def _default_first_box(label: str, key: str, first: Any, default: str, choices: dict, help: str) -> Any:
    """A select box whose first option, ``first``, stands for the default (None to the callers, as
    a bundle or a link may set the session's value). Not None itself: Streamlit sends None to the
    browser as "no choice", so a box holding None was drawn empty and clearable (Escape emptied it),
    and after a model switch the target box kept the last model's text ("predicted class" under a
    model whose default is "most probable label")."""
    if st.session_state.get(key) not in (first, *choices):
        st.session_state[key] = first
    chosen = st.selectbox(
        label, [first, *choices], format_func=lambda c: default if c == first else choices[c], key=key, help=help
    )
    return None if chosen == first else chosen


def _head_picker() -> str | None:
    """The head-type override (None: what the model's config says; core.heads)."""
    return _default_first_box(
        "Head type", "sidebar.head_type", "config", "from the model's config", services.HEAD_CHOICES,
        help="What the model's outputs mean: one softmax over classes (single-label), one sigmoid per label "
        "(multi-label), or a raw regression score. Detected from the config (problem_type, num_labels); "
        "override it for a model whose config is wrong.",
    )  # fmt: skip


def _autocast_picker() -> str | None:
    """The scorer's autocast type (None: float32; ``Classifier``)."""
    return _default_first_box(
        "Perturbation scoring", "sidebar.autocast", "float32", "float32 (exact)",
        {a: f"{a} autocast" for a in services.autocast_choices()},
        help="The precision of the model passes that score perturbations (leave-one-out, occlusion, LIME, "
        "SHAP, IM, the faithfulness metrics). bfloat16 is about 1.6 times faster on CPUs with AVX512-BF16 "
        "or AMX and slower on others; on a GPU half precision pays on large batches (dataset slices, many "
        "samples), not on one sentence's few variants. Scores move by rounding: LIME and SHAP barely, "
        "leave-one-out's top word changed on 2 of 30 SST-2 sentences (BENCHMARKS.md). Gradients stay float32.",
    )  # fmt: skip


DEFAULT_TARGET = -1  # the target box's first option, the head's default target (``_default_first_box``)


def _target_picker(label_names: tuple[str, ...], head: str) -> int | None:
    """The explained class (single-label) or label (multi-label); no picker for one regression
    score. A link or a bundle asks for a class index (None: the default)."""
    asked = st.session_state.get("sidebar.target")
    if isinstance(asked, str):  # the text the box showed for the last model, read back after a switch
        asked = label_names.index(asked) if asked in label_names else None
    if asked == DEFAULT_TARGET:
        asked = None
    if head == "regression" and len(label_names) <= 1:
        st.session_state.pop("sidebar.target", None)
        if asked is not None:  # a link's or the last model's target: say so, never drop it silently
            link_warning(f"The model gives one score, not classes: target {asked} is left out.")
        return None
    default = {"multi_label": "most probable label", "regression": "first score"}.get(head, "predicted class")
    if asked is not None and asked not in range(len(label_names)):
        if label_names:  # without them the model's error is the page's message
            kind = "label" if head == "multi_label" else "class"
            last = len(label_names) - 1
            link_warning(f"The model has no {kind} {asked} (0–{last}): explaining the {default}.")
        asked = None
    # Set again whenever the box's texts change (another model), equal or not: the browser keeps showing
    # the text it has until the script sets the box's value.
    shown, texts = DEFAULT_TARGET if asked is None else asked, (default, *label_names)
    if st.session_state.get("sidebar.target") != shown or st.session_state.get("sidebar.target_texts") != texts:
        st.session_state["sidebar.target"] = shown
        st.session_state["sidebar.target_texts"] = texts
    return _default_first_box(
        "Target label" if head == "multi_label" else "Target class", "sidebar.target", DEFAULT_TARGET, default,
        dict(enumerate(label_names)),
        help="The label whose own probability the methods explain."
        if head == "multi_label"
        else "The class whose score the methods explain.",
    )  # fmt: skip


def _threshold_picker() -> float:
    return st.slider(
        "Label threshold",
        0.05,
        0.95,
        DEFAULT_THRESHOLD,
        0.05,
        key="sidebar.threshold",
        persist_state="session",
        help="A multi-label head predicts every label whose probability is at or above this.",
    )


def _mlm_picker() -> str:
    names = services.mlm_choices()
    if st.session_state.get("sidebar.mlm") not in names:
        st.session_state["sidebar.mlm"] = names[0]
    return st.selectbox(
        "Masked LM (fill-in methods)",
        names,
        key="sidebar.mlm",
        help="Used by methods that replace words with a masked language model's fill-ins.",
    )

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
from ui.prediction import DEFAULT_THRESHOLD
from ui.share import copy_link, link_warning, quoted
from ui.state import Selection, set_selection
from ui.text import plain, shortened_name

DEFAULT_TEXT = "The acting is great, but the plot is awful and the ending makes no sense."
_URL_READ = "sidebar.url_read"
LINK_TEXT_MAX = 1_000  # characters of a typed text (and of its hypothesis) that a link carries
# The typed text's query parameters (and widget keys, ``sidebar.<name>``) with the value a link
# leaves out, and their names in the note on a text too long for a link.
_TEXTS = {"text": DEFAULT_TEXT, "text_b": ""}
_TEXT_NAMES = {"text": "text", "text_b": "hypothesis"}


def render() -> Selection:
    choices = {c.name: c for c in services.model_choices()}
    options = services.dataset_options()
    notes = _read_url_once(choices, options)
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
        texts = _link_texts(dataset)
        head = info.head if info else "single_label"
        target = _target_picker(info.label_names if info else (), head)
        threshold = _threshold_picker() if head == "multi_label" else DEFAULT_THRESHOLD
        mlm = _mlm_picker()
        model_name = services.split_ref(model)[0]
        _write_url({"model": model_name, "dataset": dataset, "split": split, "index": index, "target": target, **texts})
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


# --------------------------------------------------------------------------- URL


def _read_url_once(choices: dict[str, services.ModelChoice], options: dict[str, list[str]]) -> list[str]:
    """Seed the widgets from the query parameters on a session's first run; the warnings naming
    what the link asks for and does not get (none on later runs)."""
    if st.session_state.get(_URL_READ):
        return []
    st.session_state[_URL_READ] = True
    params = st.query_params
    model = params.get("model", "").strip()
    if model:
        st.session_state["sidebar.model" if model in choices else "sidebar.model_path"] = model
    return [*_read_example(options), *_read_target(params.get("target", ""))]


def _read_example(options: dict[str, list[str]]) -> list[str]:
    """Seed the dataset, split and example index, or the typed text, from the link; a warning for
    each of them that names none of this app's."""
    params = st.query_params
    dataset = params.get("dataset")
    if dataset == services.FREE_TEXT:
        st.session_state["sidebar.dataset"] = dataset
        for key in _TEXTS:
            if key in params:
                st.session_state[f"sidebar.{key}"] = params[key]
        return []
    if dataset is not None and dataset not in options:
        names = ", ".join([*options, services.FREE_TEXT])
        left = [f"{name} {quoted(params[name])}" for name in ("split", "index") if name in params]
        also = f" (its {' and '.join(left)} {'are' if len(left) > 1 else 'is'} left out too)" if left else ""
        return [f"The link's dataset {quoted(dataset)} is not one of this app's ({names}): showing examples{also}."]
    notes = []
    if dataset is not None:
        st.session_state["sidebar.dataset"] = dataset
        split = params.get("split")
        if split is not None and split not in options[dataset]:
            split = _default_split(dataset, options[dataset])
            notes.append(f"{dataset} has no split {quoted(params['split'])}: showing {split}.")
        if split is not None:
            st.session_state["sidebar.split"] = split
    text = params.get("index", "")
    index = url_index(text)
    if index is not None:
        st.session_state["sidebar.index"] = index
    elif text:
        notes.append(f"The link's example index {quoted(text)} is not an example number: showing example 0.")
    return notes


def _read_target(text: str) -> list[str]:
    """Seed the target from the link's class index (``_target_picker`` names one the model lacks);
    a warning when it is not a number."""
    target = url_index(text)
    if target is not None:
        st.session_state["sidebar.target"] = target
    elif text:
        return [f"The link's target {quoted(text)} is not a class number: explaining the default target."]
    return []


def url_index(text: str) -> int | None:
    """The number of a link's ``?index=`` (or ``?target=``), or None where it is not one: not plain
    ASCII digits ("²" is a digit to isdigit but not to int), or more than 9 of them (int refuses
    over 4300 digits, and no dataset has a billion examples)."""
    if text.isascii() and text.isdigit() and len(text) <= 9:
        return int(text)
    return None


def _link_texts(dataset: str) -> dict[str, str | None]:
    """The typed text and hypothesis as the link carries them (None: left out, as for any other
    dataset, an empty hypothesis or the default sentence); a note under them when one is too long
    for a link."""
    if dataset != services.FREE_TEXT:
        return dict.fromkeys(_TEXTS)
    texts: dict[str, str | None] = {}
    for key, default in _TEXTS.items():
        text = str(st.session_state.get(f"sidebar.{key}", default))
        if len(text) > LINK_TEXT_MAX:
            st.caption(
                f"The {_TEXT_NAMES[key]} ({len(text):,} characters) is too long for a link (at most "
                f"{LINK_TEXT_MAX:,}): Copy link leaves it out."
            )
        texts[key] = text if text != default and len(text) <= LINK_TEXT_MAX else None
    return texts


def _write_url(values: dict[str, str | int | None]) -> None:
    """Mirror the selection into the query parameters; a None value removes its parameter."""
    for key, value in values.items():
        if value is None:
            st.query_params.pop(key, None)
        else:
            st.query_params[key] = str(value)


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
        # refused with the one message of services.access) rather than silently replaced.
        typed = str(st.session_state.get("sidebar.model_path", ""))
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


def model_labels(choices: dict[str, services.ModelChoice]) -> dict[str, str]:
    """What the Model picker shows of each model: its name without the hub owner, past
    MODEL_LABEL_CHARS characters shortened around an ellipsis (``ui.text.shortened_name``); a model
    whose short name another one shares shows its full label."""
    short = {name: shortened_name(name.rsplit("/", 1)[-1], MODEL_LABEL_CHARS) for name in choices}
    taken = list(short.values())
    return {name: label if taken.count(label) == 1 else choices[name].label for name, label in short.items()}


def _follow_model_task(options: dict[str, list[str]]) -> None:
    """When the bundled examples are shown, switch to those written for the new model's task."""
    task = services.model_task(st.session_state["sidebar.model"])
    if st.session_state.get("sidebar.dataset") == "examples" and task in options["examples"]:
        st.session_state["sidebar.split"] = task
        st.session_state["sidebar.index"] = 0


def _default_split(dataset: str, splits: list[str]) -> str:
    task = services.model_task(st.session_state.get("sidebar.model") or services.default_model())
    if dataset == "examples" and task in splits:
        return task
    return splits[0]


def _example_picker(options: dict[str, list[str]]):
    """(dataset, split, index, example, error) for a dataset example or free text."""
    names = [*options, services.FREE_TEXT]
    if st.session_state.get("sidebar.dataset") not in names:
        st.session_state["sidebar.dataset"] = "examples"
    dataset = st.selectbox("Dataset", names, key="sidebar.dataset", help="Datasets found in the data folder.")
    if dataset == services.FREE_TEXT:
        # seeded in the state, not as the widgets' values: a link or a bundle may have set the state
        st.session_state.setdefault("sidebar.text", DEFAULT_TEXT)
        st.session_state.setdefault("sidebar.text_b", "")
        text = st.text_area("Text (premise for pair models)", key="sidebar.text", height=110)
        text_b = st.text_area("Hypothesis (sentence-pair models only)", key="sidebar.text_b", height=70)
        return dataset, None, None, services.free_text_example(text, text_b), None
    splits = options[dataset]
    if st.session_state.get("sidebar.split") not in splits:
        st.session_state["sidebar.split"] = _default_split(dataset, splits)
    split = st.selectbox("Split", splits, key="sidebar.split")
    try:
        size = services.dataset_size(dataset, split)
    except ValueError as error:
        return dataset, split, None, None, str(error)
    asked = int(st.session_state.get("sidebar.index", 0))
    st.session_state["sidebar.index"] = min(max(asked, 0), size - 1)
    if st.session_state["sidebar.index"] != asked:  # a link's or the last split's index: say so, never swap silently
        link_warning(
            f"{dataset}/{split} has no example {asked} (0–{size - 1}): showing {st.session_state['sidebar.index']}."
        )
    left, right = st.columns([3, 2], vertical_alignment="bottom")
    index = int(left.number_input(f"Example (0–{size - 1})", 0, size - 1, step=1, key="sidebar.index"))
    right.button(  # an icon: "Random" was cut to "Ran…" in the presentation font at 1,024 px
        ":material/shuffle:", key="sidebar.random", on_click=_pick_random, args=(dataset, split), width="stretch",
        help="A random example of this split",
    )  # fmt: skip
    example = services.dataset_example(dataset, split, index)
    gold = f" · gold: {example.gold_name}" if example.gold_name else ""
    rationale = " · has a human rationale" if example.rationale is not None else ""
    st.caption(f"`{example.id}`{gold}{rationale}")
    return dataset, split, index, example, None


def select_example(model: str, dataset: str, split: str, index: int) -> None:
    """Point the sidebar at one dataset example (used before switching page); takes effect when
    the sidebar renders next."""
    choices = {c.name for c in services.model_choices()}
    st.session_state["sidebar.model" if model in choices else "sidebar.model_path"] = model
    if model in choices:
        st.session_state["sidebar.model_path"] = ""
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

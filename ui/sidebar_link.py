"""The sidebar's link: on a session's first run, the dataset, split, example, target and typed
text a link asks for (each one this app cannot show named in a warning, ``ui.share.link_warning``),
and on every run the selection written back into the URL's query parameters."""

from __future__ import annotations

import streamlit as st

import services
from ui.share import quoted
from ui.uploads import count_as_own

DEFAULT_TEXT = "The acting is great, but the plot is awful and the ending makes no sense."
_URL_READ = "sidebar.url_read"
LINK_TEXT_MAX = 1_000  # characters of a typed text (and of its hypothesis) that a link carries
# The typed text's query parameters (and widget keys, ``sidebar.<name>``) with the value a link
# leaves out, and their names in the note on a text too long for a link.
_TEXTS = {"text": DEFAULT_TEXT, "text_b": ""}
_TEXT_NAMES = {"text": "text", "text_b": "hypothesis"}


def read_url_once(choices: dict[str, services.ModelChoice], options: dict[str, list[str]]) -> list[str]:
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
    if dataset is not None and (dataset == services.DATA_FILE or dataset.startswith(services.FILE_PREFIX)):
        return _read_data_file(dataset)
    if dataset is not None and dataset not in options:
        names = ", ".join([*options, services.FREE_TEXT, services.DATA_FILE])
        left = [f"{name} {quoted(params[name])}" for name in ("split", "index") if name in params]
        also = f" (its {' and '.join(left)} {'are' if len(left) > 1 else 'is'} left out too)" if left else ""
        return [f"The link's dataset {quoted(dataset)} is not one of this app's ({names}): showing examples{also}."]
    notes = []
    if dataset is not None:
        st.session_state["sidebar.dataset"] = dataset
        split = params.get("split")
        if split is not None and split not in options[dataset]:
            split = default_split(dataset, options[dataset])
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


def _read_data_file(dataset: str) -> list[str]:
    """Seed the data file's path, split and example index from a link to a data file
    (``file:PATH``); a shared server reads no file of its own (one uploaded to it, yes), and says
    so. A split the file lacks is named in a warning (a file that cannot be read is named by the
    sidebar)."""
    try:
        services.check_data_file(dataset)
    except ValueError:
        return [f"The link's data file {quoted(dataset)} is not read on a shared server: showing examples."]
    st.session_state["sidebar.dataset"] = services.DATA_FILE
    notes = []
    if dataset != services.DATA_FILE:
        st.session_state["sidebar.data_file"] = dataset.removeprefix(services.FILE_PREFIX)
        count_as_own(dataset)  # the link gave its texts: its runs are listed too
        split = st.query_params.get("split")
        try:
            splits = services.data_file_splits(dataset) if split is not None else []
        except ValueError:
            splits = [split]
        if split is not None and split not in splits:
            notes.append(f"{dataset} has no split {quoted(split)}: showing {splits[0]}.")
        elif split is not None:
            st.session_state["sidebar.split"] = split
    index = url_index(st.query_params.get("index", ""))
    if index is not None:
        st.session_state["sidebar.index"] = index
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


def link_texts(dataset: str) -> dict[str, str | None]:
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


def write_url(values: dict[str, str | int | None]) -> None:
    """Mirror the selection into the query parameters; a None value removes its parameter."""
    for key, value in values.items():
        if value is None:
            st.query_params.pop(key, None)
        else:
            st.query_params[key] = str(value)


def default_split(dataset: str, splits: list[str]) -> str:
    task = services.model_task(st.session_state.get("sidebar.model") or services.default_model())
    if dataset == "examples" and task in splits:
        return task
    return splits[0]

"""Parameter forms generated from an explainer's parameter metadata (help, choices, min, max),
and presetting them (a session bundle's or a link's parameters) before they are drawn."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import streamlit as st

from services import MethodInfo, ParamField
from ui.share import first_read, link_warning, quoted, setting_to_link
from ui.text import breakable


def params_form(method: MethodInfo, prefix: str, link: str | None = None) -> dict[str, Any]:
    """One widget per parameter of ``method``, keyed ``"{prefix}.param.{method}.{name}"``;
    returns the chosen values by parameter name. With ``link``, the values that differ from the
    defaults go in that parameter of the link (JSON by name), and a link's preset the form on its
    page's first run."""
    if link:
        _params_from_link({method.key: method}, prefix, link, single=True)
    values: dict[str, Any] = {}
    # the key names the block for assets/style.css, which wraps its columns where they are narrow
    with st.container(key=f"params-form.{prefix}.{method.key}"):
        columns = st.columns(max(1, min(3, len(method.fields))))
        for i, field in enumerate(method.fields):
            with columns[i % len(columns)]:
                values[field.name] = _widget(field, widget_key(prefix, method.key, field.name))
    if link:
        _params_to_link(link, _changed({method.key: method}, {method.key: values}).get(method.key, {}))
    return values


def widget_key(prefix: str, method: str, name: str) -> str:
    return f"{prefix}.param.{method}.{name}"


def methods_params_form(infos: dict[str, MethodInfo], keys: list[str], prefix: str) -> dict[str, dict[str, Any]]:
    """``params_form`` for each of ``keys`` that has parameters, under its name in bold;
    returns the chosen values by method key. The values that differ from the defaults go in the
    link (``LINK_PARAM``, JSON by method, then name), and a link's values preset the form on its
    page's first run."""
    _params_from_link(infos, prefix, LINK_PARAM, single=False)
    params: dict[str, dict[str, Any]] = {}
    for key in keys:
        if infos[key].fields:
            st.markdown(f"**{breakable(key)}**")
            params[key] = params_form(infos[key], prefix)
    _params_to_link(LINK_PARAM, _changed(infos, params))
    return params


# The link's parameter holding the method parameters changed from their defaults, as JSON
# ({"lime": {"n_samples": 60}}), and the longest value a link's parameters may bring.
LINK_PARAM = "params"
LINK_PARAMS_MAX = 2000


def _changed(infos: Mapping[str, MethodInfo], params: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The values of ``params`` (by method, then name) that differ from their fields' defaults."""
    changed = {
        key: {f.name: values[f.name] for f in infos[key].fields if f.name in values and values[f.name] != _default(f)}
        for key, values in params.items()
    }
    return {key: values for key, values in changed.items() if values}


def _params_to_link(link: str, changed: dict[str, Any]) -> None:
    setting_to_link(link, json.dumps(changed, sort_keys=True, separators=(",", ":")) if changed else None, None)


def _params_from_link(infos: dict[str, MethodInfo], prefix: str, link: str, single: bool) -> None:
    """On the first run of the form's page in this session: the link's ``link`` parameter preset
    (parsed as JSON, never evaluated: by method then name, or by name for the ``single`` method
    of ``infos``); what the form cannot take is named in one warning."""
    # a single form's link is read once, whatever its prefix (the attack's preset)
    asked = first_read(link if single else f"{prefix}.{link}", link)
    if asked is None:
        return
    try:
        parsed = json.loads(asked) if len(asked) <= LINK_PARAMS_MAX else None
    except (ValueError, RecursionError):
        parsed = None
    what = f"{next(iter(infos))} parameters" if single else "method parameters"
    if single and isinstance(parsed, dict):
        parsed = {next(iter(infos)): parsed}
    if not isinstance(parsed, dict) or not all(isinstance(values, dict) for values in parsed.values()):
        shape = "a JSON object of parameters" + ("" if single else " by method")
        link_warning(f"The link's {what} {quoted(asked)} are not {shape}: the defaults are shown.")
        return
    known = {key: {field.name for field in info.fields} for key, info in infos.items()}
    unknown = [
        f"{method}.{name}" if method in known else str(method)
        for method, values in parsed.items()
        for name in (values if method in known else [""])
        if method not in known or name not in known[method]
    ]
    refused = preset_params(infos, {m: v for m, v in parsed.items() if m in known}, prefix) + unknown
    if refused:
        link_warning(f"The link asks for {what} this page cannot take ({quoted(', '.join(refused))}): "
                     "their defaults are shown.")  # fmt: skip


def _default(field: ParamField) -> Any:
    """The value a parameter's widget starts at (``_widget``)."""
    numeric = isinstance(field.default, int | float)
    return field.default if field.choices or numeric else str(field.default)


def _widget(field: ParamField, key: str) -> Any:
    """The widget of one parameter. Its default is seeded in the state, not given as the widget's
    value: a session bundle may have set the state (``preset_params``), and Streamlit warns of a
    widget given a value both ways."""
    label = field.name.replace("_", " ")
    st.session_state.setdefault(key, _default(field))
    if field.choices:
        return st.selectbox(label, list(field.choices), help=field.help, key=key, persist_state="session")
    if isinstance(field.default, bool):
        return st.checkbox(label, help=field.help, key=key, persist_state="session")
    if isinstance(field.default, int):
        low = int(field.min) if field.min is not None else None
        high = int(field.max) if field.max is not None else None
        return int(st.number_input(label, low, high, step=1, help=field.help, key=key, persist_state="session"))
    if isinstance(field.default, float):
        low = float(field.min) if field.min is not None else None
        high = float(field.max) if field.max is not None else None
        return float(
            st.number_input(label, low, high, step=None, help=field.help, key=key, persist_state="session", format="%g")
        )
    return st.text_input(label, help=field.help, key=key, persist_state="session")


def preset_params(infos: Mapping[str, MethodInfo], params: Mapping[str, Mapping[str, Any]], prefix: str) -> list[str]:
    """Set the widgets of ``methods_params_form(..., prefix)`` to ``params`` (by method, then
    parameter name). Call it before the widgets are drawn in this run (a callback, or before the
    page): Streamlit refuses a widget's value set after it is drawn. Returns ``method.name=value``
    of each value the form cannot take (not one of its choices, outside its bounds, another
    type)."""
    refused = []
    for method, values in params.items():
        for field in infos[method].fields if method in infos else ():
            if field.name not in values:
                continue
            value = _accepted(field, values[field.name])
            if value is None:
                refused.append(f"{method}.{field.name}={values[field.name]!r}")
            else:
                st.session_state[widget_key(prefix, method, field.name)] = value
    return refused


def _accepted(field: ParamField, value: Any) -> Any:
    """``value`` as the field's widget holds it, None when the widget cannot show it."""
    if field.choices:
        return value if value in field.choices else None
    if isinstance(field.default, bool):
        return value if isinstance(value, bool) else None
    if isinstance(field.default, int | float) and isinstance(value, int | float) and not isinstance(value, bool):
        if not math.isfinite(value):
            return None
        if isinstance(field.default, int):
            if value != int(value):
                return None
            value = int(value)
        else:
            value = float(value)
        inside = (field.min is None or value >= field.min) and (field.max is None or value <= field.max)
        return value if inside else None
    return value if isinstance(field.default, str) and isinstance(value, str) else None

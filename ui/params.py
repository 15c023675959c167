"""Parameter forms generated from an explainer's parameter metadata (help, choices, min, max),
and presetting them (a session bundle's or a link's parameters) before they are drawn."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import streamlit as st

from services import MethodInfo, ParamField
from ui.share import link_warning, quoted, setting_to_link


def params_form(method: MethodInfo, prefix: str) -> dict[str, Any]:
    """One widget per parameter of ``method``, keyed ``"{prefix}.param.{method}.{name}"``;
    returns the chosen values by parameter name."""
    values: dict[str, Any] = {}
    columns = st.columns(max(1, min(3, len(method.fields))))
    for i, field in enumerate(method.fields):
        with columns[i % len(columns)]:
            values[field.name] = _widget(field, widget_key(prefix, method.key, field.name))
    return values


def widget_key(prefix: str, method: str, name: str) -> str:
    return f"{prefix}.param.{method}.{name}"


def methods_params_form(infos: dict[str, MethodInfo], keys: list[str], prefix: str) -> dict[str, dict[str, Any]]:
    """``params_form`` for each of ``keys`` that has parameters, under its name in bold;
    returns the chosen values by method key. The values that differ from the defaults go in the
    link (``LINK_PARAM``), and a link's values preset the form on its page's first run."""
    _params_from_link(infos, prefix)
    params: dict[str, dict[str, Any]] = {}
    for key in keys:
        if infos[key].fields:
            st.markdown(f"**{key}**")
            params[key] = params_form(infos[key], prefix)
    changed = {
        key: {field.name: values[field.name] for field in infos[key].fields if values[field.name] != _default(field)}
        for key, values in params.items()
    }
    changed = {key: values for key, values in changed.items() if values}
    setting_to_link(LINK_PARAM, json.dumps(changed, sort_keys=True, separators=(",", ":")) if changed else None, None)
    return params


# The link's parameter holding the method parameters changed from their defaults, as JSON
# ({"lime": {"n_samples": 60}}), and the longest such value a link may bring.
LINK_PARAM = "params"
LINK_PARAMS_MAX = 2000


def _params_from_link(infos: dict[str, MethodInfo], prefix: str) -> None:
    """On the first run of the form's page in this session: the link's method parameters preset
    (parsed as JSON, never evaluated); what the form cannot take is named in one warning."""
    read = st.session_state.setdefault("share.read", set())
    if f"{prefix}.{LINK_PARAM}" in read:
        return
    read.add(f"{prefix}.{LINK_PARAM}")
    asked = st.query_params.get(LINK_PARAM)
    if asked is None:
        return
    try:
        parsed = json.loads(asked) if len(asked) <= LINK_PARAMS_MAX else None
    except (ValueError, RecursionError):
        parsed = None
    if not isinstance(parsed, dict) or not all(isinstance(values, dict) for values in parsed.values()):
        link_warning(
            f"The link's method parameters {quoted(asked)} are not a JSON object of parameters by method: "
            "the defaults are shown."
        )
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
        link_warning(f"The link asks for method parameters this page cannot take ({quoted(', '.join(refused))}): "
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
    of each value the form cannot take (not one of its choices, outside its bounds, another type)."""
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

"""Parameter forms generated from an explainer's parameter metadata (help, choices, min, max)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from services import MethodInfo, ParamField


def params_form(method: MethodInfo, prefix: str) -> dict[str, Any]:
    """One widget per parameter of ``method``, keyed ``"{prefix}.param.{method}.{name}"``;
    returns the chosen values by parameter name."""
    values: dict[str, Any] = {}
    columns = st.columns(max(1, min(3, len(method.fields))))
    for i, field in enumerate(method.fields):
        with columns[i % len(columns)]:
            values[field.name] = _widget(field, f"{prefix}.param.{method.key}.{field.name}")
    return values


def methods_params_form(infos: dict[str, MethodInfo], keys: list[str], prefix: str) -> dict[str, dict[str, Any]]:
    """``params_form`` for each of ``keys`` that has parameters, under its name in bold;
    returns the chosen values by method key."""
    params: dict[str, dict[str, Any]] = {}
    for key in keys:
        if infos[key].fields:
            st.markdown(f"**{key}**")
            params[key] = params_form(infos[key], prefix)
    return params


def _widget(field: ParamField, key: str) -> Any:
    label = field.name.replace("_", " ")
    if field.choices:
        choices = list(field.choices)
        return st.selectbox(label, choices, index=choices.index(field.default), help=field.help, key=key)
    if isinstance(field.default, bool):
        return st.checkbox(label, value=field.default, help=field.help, key=key)
    if isinstance(field.default, int):
        low = int(field.min) if field.min is not None else None
        high = int(field.max) if field.max is not None else None
        return int(st.number_input(label, low, high, field.default, step=1, help=field.help, key=key))
    if isinstance(field.default, float):
        low = float(field.min) if field.min is not None else None
        high = float(field.max) if field.max is not None else None
        return float(st.number_input(label, low, high, field.default, help=field.help, key=key, format="%g"))
    return st.text_input(label, str(field.default), help=field.help, key=key)

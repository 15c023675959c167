"""The layers keep their dependencies (docs/ARCHITECTURE.md, "Layers"): every import of every
product file, including imports inside functions, must point to an allowed layer."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = {"torch", "transformers", "captum", "peft", "ray"}
PROJECT = {"app", "app_pages", "ui", "services", "cli", "api", "engine", "experiments", "metrics", "explainers", "core"}

# What each layer may import from the project (its own layer included). Everything above a layer
# is forbidden to it; streamlit is allowed only in app.py, app_pages, ui and services.
ALLOWED = {
    "app": {"ui", "services"},
    "app_pages": {"app_pages", "ui", "services"},
    "ui": {"ui", "services", "core"},
    "services": {"services", "engine", "experiments", "metrics", "explainers", "core"},
    "cli": {"cli", "engine", "experiments", "metrics", "explainers", "core"},
    "api": {"api", "engine", "experiments", "metrics", "explainers", "core", "ui"},
    "engine": {"engine", "experiments", "metrics", "explainers", "core"},
    "experiments": {"experiments", "metrics", "explainers", "core"},
    "metrics": {"metrics", "core"},
    "explainers": {"explainers", "core"},
    "core": {"core"},
}
STREAMLIT_LAYERS = {"app", "app_pages", "ui", "services"}
# ui may read these core modules only (records and pure helpers, no model code).
UI_CORE = {"core.types", "core.numbers"}


def imports(path: Path) -> set[str]:
    """Every imported module name in ``path`` (including imports inside functions)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def roots(names: set[str]) -> set[str]:
    return {name.split(".")[0] for name in names}


def layer_of(path: Path) -> str:
    relative = path.relative_to(ROOT)
    return "app" if relative.parts == ("app.py",) else relative.parts[0]


def product_files() -> list[Path]:
    found = [ROOT / "app.py"]
    for layer in ALLOWED:
        found += sorted((ROOT / layer).glob("**/*.py"))
    return [p for p in found if p.is_file()]


def test_imports_sees_nested_and_from_imports(tmp_path: Path) -> None:
    source = tmp_path / "probe.py"
    source.write_text("import os.path\nfrom torch import nn\n\ndef f():\n    import captum.attr\n    from . import x\n")
    assert roots(imports(source)) == {"os", "torch", "captum"}


@pytest.mark.parametrize("path", product_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_point_to_allowed_layers(path: Path) -> None:
    layer = layer_of(path)
    found = imports(path)
    project = roots(found) & PROJECT
    assert project <= ALLOWED[layer], f"{layer} may not import {sorted(project - ALLOWED[layer])}"
    if layer not in STREAMLIT_LAYERS:
        assert "streamlit" not in roots(found)
    if layer in {"app", "app_pages", "ui"}:
        assert not roots(found) & HEAVY
    if layer == "ui":
        assert {n for n in found if n.split(".")[0] == "core"} <= UI_CORE


def test_every_layer_exists() -> None:
    for layer in ALLOWED:
        if layer not in ("app", "api"):
            assert (ROOT / layer).is_dir(), layer

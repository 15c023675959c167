"""The layers keep their dependencies: the UI imports no deep-learning library, the engine no Streamlit."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = {"torch", "transformers", "captum"}
ENGINE = {"core", "explainers", "metrics"}


def imported_roots(path: Path) -> set[str]:
    """Top-level package of every import in ``path`` (including imports inside functions)."""
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def files(*patterns: str) -> list[Path]:
    return sorted(p for pattern in patterns for p in ROOT.glob(pattern))


def test_imported_roots_sees_nested_and_from_imports(tmp_path: Path) -> None:
    source = tmp_path / "probe.py"
    source.write_text("import os.path\nfrom torch import nn\n\ndef f():\n    import captum.attr\n    from . import x\n")
    assert imported_roots(source) == {"os", "torch", "captum"}


@pytest.mark.parametrize("path", files("app.py", "app_pages/*.py", "ui/*.py"), ids=lambda p: str(p.relative_to(ROOT)))
def test_ui_imports_no_deep_learning_library(path: Path) -> None:
    assert not imported_roots(path) & HEAVY


@pytest.mark.parametrize("path", files("app_pages/*.py"), ids=lambda p: str(p.relative_to(ROOT)))
def test_pages_reach_the_engine_only_through_services(path: Path) -> None:
    assert not imported_roots(path) & ENGINE


@pytest.mark.parametrize(
    "path", files("core/**/*.py", "explainers/**/*.py", "metrics/**/*.py"), ids=lambda p: str(p.relative_to(ROOT))
)
def test_engine_imports_no_streamlit(path: Path) -> None:
    assert "streamlit" not in imported_roots(path)


def test_the_checked_layers_exist() -> None:
    assert (ROOT / "app.py").is_file()
    assert files("app_pages/*.py") and files("ui/*.py") and files("core/*.py") and files("explainers/*.py")

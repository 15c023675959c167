"""Docstrings in engine/ are wrapped at 100 characters: ``execute``'s had a line of 131 characters
(the probe of the command line found it in ``help(execute)``), the package's and the pre-trained
store's of 161 and 169; a later probe found 22 lines of 101 to 109."""

from __future__ import annotations

import ast
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[1] / "engine"
LIMIT = 100  # docstring lines; code lines may have 120 (ruff)


def long_docstring_lines(path: Path) -> list[str]:
    source = path.read_text()
    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                found += [
                    f"{path.relative_to(ENGINE.parent)}:{n}"
                    for n in range(first.lineno, (first.end_lineno or first.lineno) + 1)
                    if len(lines[n - 1]) > LIMIT
                ]
    return found


def test_no_engine_docstring_line_is_longer_than_100_characters() -> None:
    assert [line for path in sorted(ENGINE.rglob("*.py")) for line in long_docstring_lines(path)] == []


def test_execute_documents_itself_in_lines_of_at_most_100_characters() -> None:
    from engine.runs.executor import execute

    assert execute.__doc__ and max(len(line) for line in execute.__doc__.splitlines()) <= 100

"""Install lines in error messages come from one place, built from the distribution's name."""

import ast
from pathlib import Path

from agentgraph._util._extras import DISTRIBUTION, pip_install

PACKAGE = Path(__file__).resolve().parent.parent / "agentgraph"


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the string constants that are docstrings."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def test_no_message_writes_its_own_install_line():
    written = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "_extras.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = _docstrings(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in docstrings
                and "pip install" in node.value
            ):
                written.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert written == []


def test_the_install_line_names_the_distribution_and_what_comes_first():
    assert pip_install("ray") == f"pip install '{DISTRIBUTION}[ray]'"
    assert pip_install("rag-local", "torch==2.13.0") == (
        f"pip install torch==2.13.0 '{DISTRIBUTION}[rag-local]'"
    )

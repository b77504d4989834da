"""Every public namespace keeps an honest `__all__`, and tests use public names publicly."""

import ast
import importlib
import inspect
import pkgutil
import types
from pathlib import Path

import pytest

import agentgraph

ROOT = Path(__file__).resolve().parent.parent
OPTIONAL = {"agentgraph.tracing._otel"}  # needs an extra; imported lazily


def public_modules() -> list[str]:
    names = ["agentgraph"]
    for info in pkgutil.walk_packages(agentgraph.__path__, "agentgraph."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return sorted(names)


def test_the_public_namespaces_are_the_architecture():
    assert public_modules() == [
        "agentgraph",
        "agentgraph.a2a",
        "agentgraph.checkpoint",
        "agentgraph.evals",
        "agentgraph.guards",
        "agentgraph.llm",
        "agentgraph.mcp",
        "agentgraph.memory",
        "agentgraph.nodes",
        "agentgraph.rag",
        "agentgraph.ray",
        "agentgraph.server",
        "agentgraph.structured",
        "agentgraph.teams",
        "agentgraph.temporal",
        "agentgraph.testing",
        "agentgraph.tools",
        "agentgraph.tracing",
        "agentgraph.web",
    ]


@pytest.mark.parametrize("name", public_modules())
def test_all_is_a_sorted_tuple_of_names_that_exist_and_are_documented(name):
    module = importlib.import_module(name)
    exported = module.__all__
    assert isinstance(exported, tuple), name
    assert list(exported) == sorted(exported), name
    assert len(set(exported)) == len(exported), name
    for attribute in exported:
        assert not attribute.startswith("_"), f"{name}.{attribute}"
        value = getattr(module, attribute)  # every name exists
        if inspect.isclass(value) or inspect.isfunction(value):
            assert (value.__doc__ or "").strip(), f"{name}.{attribute} has no docstring"


@pytest.mark.parametrize("name", public_modules())
def test_nothing_private_leaks_from_a_public_namespace(name):
    module = importlib.import_module(name)
    leaked = {
        attribute
        for attribute, value in vars(module).items()
        if not attribute.startswith("_")
        and not isinstance(value, types.ModuleType)
        and attribute not in module.__all__
        and attribute != "annotations"  # from __future__
    }
    assert leaked == set(), name


def public_names() -> dict[str, tuple[str, object]]:
    """Each public name: the public module it is best imported from, and its object."""
    found: dict[str, tuple[str, object]] = {}
    for name in public_modules():
        module = importlib.import_module(name)
        for attribute in module.__all__:
            found.setdefault(attribute, (name, getattr(module, attribute)))
    return found


def test_tests_import_public_names_from_public_modules():
    public = public_names()
    offenders: list[str] = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for item in ast.walk(ast.parse(path.read_text())):
            if not isinstance(item, ast.ImportFrom) or not item.module:
                continue
            if not item.module.startswith("agentgraph") or "._" not in f".{item.module}":
                continue
            source = importlib.import_module(item.module)
            offenders.extend(
                f"{path.relative_to(ROOT)}: {a.name} from {item.module} (use {public[a.name][0]})"
                for a in item.names
                if a.name in public and getattr(source, a.name, None) is public[a.name][1]
            )
    assert offenders == []

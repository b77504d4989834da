"""The error tree drawn in the errors module is the tree of classes, and every error pickles."""

import inspect
import pickle
import re

import pytest

from agentgraph import AgentContext, AgentGraphError
from agentgraph._core import _errors


def _public_errors() -> dict[str, type]:
    """Every error class of the errors module and of every public namespace."""
    import importlib

    from tests.test_public_api import public_modules

    found = dict(vars(_errors))
    for module in public_modules():
        found.update(vars(importlib.import_module(module)))
    return {
        name: cls
        for name, cls in found.items()
        if inspect.isclass(cls) and issubclass(cls, AgentGraphError)
    }


CLASSES = _public_errors()


def drawn_tree() -> dict[str, tuple[str | None, tuple[str, ...]]]:
    """Each class in the drawing: its drawn parent and the builtins drawn beside it."""
    drawing = re.search(r"```\n(.*?)```", _errors.__doc__ or "", re.S)
    assert drawing is not None
    parents: dict[str, tuple[str | None, tuple[str, ...]]] = {}
    stack: list[tuple[int, str]] = []
    for line in drawing.group(1).splitlines():
        found = re.match(r"^([│├└─\s]*?)(?:[├└]── )?([A-Z]\w+)(?: \(([^)]*)\))?", line)
        if found is None:
            continue
        prefix = line[: line.index(found.group(2))]
        depth = len(prefix) // 4
        while stack and stack[-1][0] >= depth:
            stack.pop()
        builtins = tuple(b.strip() for b in (found.group(3) or "").split(",") if b.strip())
        parents[found.group(2)] = (stack[-1][1] if stack else None, builtins)
        stack.append((depth, found.group(2)))
    return parents


def test_the_drawing_names_every_class_and_only_those():
    assert set(drawn_tree()) == set(CLASSES)


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_each_class_sits_where_the_drawing_puts_it(name):
    parent, builtins = drawn_tree()[name]
    cls = CLASSES[name]
    if parent is None:
        assert cls is AgentGraphError
        return
    assert cls.__bases__[0] is CLASSES[parent], f"{name} is drawn under {parent}"
    for builtin in builtins:
        assert issubclass(cls, getattr(__builtins__, builtin, None) or eval(builtin)), builtin


def sample(cls):
    """An instance of `cls` built through its own constructor."""
    ctx = AgentContext("last")
    arguments = {
        "context": ctx,
        "step": 3,
        "path": ("g", "n"),
        "attempts": 2,
        "error": ValueError("boom"),
        "run_id": "r",
        "question": {"ask": 1},
        "timeout": 1.5,
    }
    signature = inspect.signature(cls.__init__)
    positional, keywords = [], {}
    for parameter in list(signature.parameters.values())[1:]:
        if parameter.kind is parameter.VAR_KEYWORD or parameter.kind is parameter.VAR_POSITIONAL:
            continue
        value = arguments.get(parameter.name, parameter.default)
        if cls.__name__ == "OutputError" and parameter.name == "attempts":
            value = ["raw answer"]
        if value is parameter.empty:
            value = {"value_type": int, "expires": 9.0, "status": 500}.get(parameter.name, "x")
        if parameter.kind is parameter.KEYWORD_ONLY:
            keywords[parameter.name] = value
        else:
            positional.append(value)
    return cls(*positional, **keywords)


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_every_error_pickles_and_keeps_its_data(name):
    error = sample(CLASSES[name])
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is type(error) and str(back) == str(error)
    assert back.__dict__.keys() == error.__dict__.keys()
    for key, value in error.__dict__.items():
        if isinstance(value, Exception):
            assert type(getattr(back, key)) is type(value)
        else:
            assert getattr(back, key) == value, key

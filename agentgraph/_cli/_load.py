"""Finding what a command names: a graph, a node, or a function making one, from `module:attribute`.

A module is a dotted name importable from the current directory or a path to
a `.py` file; whatever goes wrong while importing, reading the attribute or
calling a factory is one `CommandError` line, never a traceback.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from .._core._errors import AgentGraphError
from .._core._graph import Graph
from .._core._node import Node
from ..llm._model import ChatModel, ChatRequest, ChatResponse

__all__ = ("CommandError", "load_node", "load_target")


class CommandError(Exception):
    """A problem with the command line, reported as one line (never a traceback)."""


class _NoModel:
    """Stands in for a model when a factory is only called to draw its graph."""

    name = "unused"

    async def request(self, request: ChatRequest) -> ChatResponse:
        raise RuntimeError("this model only stands in for drawing; pass --model to run")

    def stream(self, request: ChatRequest) -> Any:
        raise RuntimeError("this model only stands in for drawing; pass --model to run")


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return ""
    last = frames[-1]
    return f" (at {Path(last.filename).name}:{last.lineno})"


def _import(module: str) -> Any:
    if module.endswith(".py") or "/" in module or os.sep in module:
        path = Path(module)
        if not path.is_file():
            raise CommandError(f"no such file: {module}")
        spec = importlib.util.spec_from_file_location(f"_agentgraph_target_{path.stem}", path)
        if spec is None or spec.loader is None:
            raise CommandError(f"cannot load {module} as a Python module")
        loaded = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = loaded  # classes defined there can find their module
        folder = str(path.resolve().parent)
        sys.path.insert(0, folder)  # so the file can import its neighbours
        try:
            spec.loader.exec_module(loaded)
        finally:
            sys.path.remove(folder)
        return loaded
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module == exc.name or module.startswith(exc.name + ".")):
            raise CommandError(
                f"cannot import module {module!r}: no module named {exc.name!r}"
            ) from exc
        raise


def load_target(target: str, model: ChatModel | None = None) -> Graph[Any, Any]:
    """The graph that `module:attribute` names, calling it first if it is a factory.

    Raises:
        CommandError: the target cannot be imported, found, called, or is not a graph.
    """
    found: Graph[Any, Any] = _load(target, model, Graph, ("a Graph",))
    return found


def load_node(target: str, model: ChatModel | None = None) -> Node[Any, Any]:
    """`load_target` for commands that run any node (`eval`): a graph, a node, or a factory of one.

    Raises:
        CommandError: the target cannot be imported, found, called, or is not a node.
    """
    found: Node[Any, Any] = _load(target, model, Node, ("a node", "a Graph"))
    return found


def _load(target: str, model: ChatModel | None, wanted: type[Any], names: tuple[str, ...]) -> Any:
    """The `wanted` that `module:attribute` names, or that the factory it names makes;
    `names` say what is wanted in the errors."""
    value = _attribute(target)
    if isinstance(value, wanted):
        return _given(target, value, model)
    if isinstance(value, Node) or not callable(value):
        kind = "a node" if isinstance(value, Node) else f"of type {type(value).__name__}"
        listed = ", ".join(names)
        raise CommandError(f"{target} is {kind}, not {listed} or a function that returns one")
    made = _call_factory(target, value, model)
    if not isinstance(made, wanted):
        either = " or ".join(names)
        raise CommandError(f"{target}() returned a {type(made).__name__}, not {either}")
    return made


def _attribute(target: str) -> Any:
    """What `module:attribute` names."""
    module, sep, attribute = target.rpartition(":")
    if not sep or not module or not attribute:
        raise CommandError(f"{target!r} is not module:attribute (e.g. app.agents:graph)")
    try:
        value: Any = _import(module)
    except CommandError:
        raise
    except (Exception, SystemExit) as exc:  # a module that exits while importing, too
        raise CommandError(
            f"importing {module!r} failed: {type(exc).__name__}: {exc}{_where(exc)}"
        ) from exc
    for part in attribute.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise CommandError(f"{module!r} has no attribute {attribute!r}") from None
        except (Exception, SystemExit) as exc:  # a module __getattr__ or property that raises
            raise CommandError(
                f"reading {attribute!r} of {module!r} failed: {type(exc).__name__}: {exc}"
            ) from exc
    return value


_N = TypeVar("_N", bound=Node[Any, Any])


def _given(target: str, found: _N, model: ChatModel | None) -> _N:
    """A graph or node named as it is: a model cannot be passed to it."""
    if model is not None and not isinstance(model, _NoModel):
        kind = "a graph" if isinstance(found, Graph) else "a node"
        raise CommandError(f"{target} is {kind}; --model needs a function taking `model`")
    return found


def _call_factory(target: str, factory: Any, model: ChatModel | None) -> Any:
    params: Mapping[str, inspect.Parameter]
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        params = {}  # a builtin or C callable: call it bare
    takes_model = "model" in params
    required = [
        name
        for name, p in params.items()
        if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    if any(name != "model" for name in required):
        raise CommandError(f"{target} needs arguments ({', '.join(required)}); it cannot be called")
    if model is not None and not isinstance(model, _NoModel) and not takes_model:
        raise CommandError(f"--model was given but {target} takes no `model` parameter")
    if "model" in required and model is None:
        raise CommandError(f"{target} needs a model: pass --model provider:name")
    try:
        return factory(model=model) if takes_model and model is not None else factory()
    except (Exception, SystemExit) as exc:
        raise CommandError(f"{target}() failed: {type(exc).__name__}: {exc}{_where(exc)}") from exc


def _model(spec: str | None) -> ChatModel | None:
    if spec is None:
        return None
    from ..llm._resolve import model_from_string

    try:
        return model_from_string(spec)
    except AgentGraphError as exc:
        raise CommandError(str(exc)) from exc

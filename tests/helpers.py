"""Small nodes shared by the engine tests, and a loader for the benchmark scripts."""

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from agentgraph import AgentContext, Graph, GraphBuilder, Node, node


def chain(name: str, *nodes: Node[Any, Any]) -> Graph[Any, Any]:
    """A graph running `nodes` one after the other."""
    with GraphBuilder[Any, Any](name) as g:
        current: Node[Any, Any] = g.start
        for n in nodes:
            current = current.edge_to(n)
        current.edge_to(g.finish)
    return g.build()


def adder(name: str, amount: int = 1) -> Node[int, int]:
    @node(name=name)
    async def add(ctx: AgentContext[int]) -> AgentContext[int]:
        return ctx.with_input(ctx.input + amount)

    return add


def load_benchmark(name: str) -> Iterator[ModuleType]:
    """Import `benchmarks/<name>.py` as a module for the length of a test module.

    The scripts import their sibling modules, so `benchmarks/` is put on the path
    while the script loads; the module is registered because dataclasses look
    their module up while they are built.
    """
    script = Path(__file__).resolve().parent.parent / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.syspath_prepend(script.parent)
            spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[name]

"""Public classes name the namespace that documents them; old pickles and names still load."""

import importlib
import inspect
import pickle
import pkgutil
import traceback
import typing

import pytest

import agentgraph
from agentgraph import AgentContext, GraphBuilder, GraphRunner, Message, NodeFailed, node

OPTIONAL = {"agentgraph.tracing._otel"}


def _public_modules() -> list[str]:
    names = ["agentgraph"]
    for info in pkgutil.walk_packages(agentgraph.__path__, "agentgraph."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return sorted(names)


def _exported() -> dict[type, list[str]]:
    found: dict[type, list[str]] = {}
    for name in _public_modules():
        module = importlib.import_module(name)
        for attribute in module.__all__:
            value = getattr(module, attribute)
            if inspect.isclass(value) and value.__qualname__ == attribute:
                found.setdefault(value, []).append(name)
    return found


def test_every_public_class_names_a_namespace_that_exports_it():
    wrong = []
    for cls, owners in _exported().items():
        if not cls.__module__.startswith("agentgraph"):
            continue  # a re-exported class of another library
        expected = "agentgraph" if "agentgraph" in owners else cls.__module__
        if cls.__module__ not in owners or cls.__module__ != expected:
            wrong.append(f"{cls.__qualname__}: {cls.__module__} (exported by {owners})")
    assert wrong == []


def test_errors_print_their_public_name():
    assert agentgraph.ProviderConfigError.__module__ == "agentgraph"
    assert agentgraph.NodeFailed.__module__ == "agentgraph"
    line = traceback.format_exception_only(agentgraph.ProviderConfigError("no key"))[0]
    assert line.startswith("agentgraph.ProviderConfigError: ")


def test_annotations_still_resolve_after_the_move():
    # typing reads string annotations in the namespace __module__ names.
    assert typing.get_type_hints(Message)["role"] is not None
    assert typing.get_type_hints(AgentContext)


@pytest.mark.parametrize(
    ("value", "private"),
    [
        (
            agentgraph.ProviderConfigError("no key", provider="openai"),
            b"agentgraph._core._errors_provider",
        ),
        (Message.user("hi"), b"agentgraph.llm._messages"),
    ],
)
def test_objects_pickled_under_the_private_paths_still_load(value, private):
    data = pickle.dumps(value, protocol=2)
    public = f"c{type(value).__module__}\n{type(value).__qualname__}\n".encode()
    assert public in data
    old = data.replace(public, b"c" + private + b"\n" + type(value).__qualname__.encode() + b"\n")
    loaded = pickle.loads(old)
    assert type(loaded) is type(value)
    assert str(loaded) == str(value)
    assert pickle.loads(data).__class__ is type(value)


def test_stored_type_names_are_those_of_the_defining_modules():
    from agentgraph._core._json_types import _qualname
    from agentgraph.evals import Score

    assert _qualname(Message) == "agentgraph:Message"
    assert _qualname(Score) == "agentgraph.evals._score:Score"
    assert agentgraph.Types.of(Score).resolve("agentgraph.evals._score:Score") is Score
    data = AgentContext("x").append(Message.user("hi")).to_json()
    assert b"agentgraph:Message" in data


@node
def returns_text(ctx: AgentContext[str]) -> AgentContext[str]:
    return "hello"  # type: ignore[return-value]


def test_a_node_returning_the_wrong_type_fails_with_a_short_traceback():
    with GraphBuilder[str, str]("wrong") as g:
        g.start.edge_to(returns_text).edge_to(g.finish)
    graph = g.build()
    with pytest.raises(NodeFailed) as caught:
        GraphRunner().run_sync(graph, AgentContext("x"))
    shown = "".join(traceback.format_exception(caught.value))
    assert "node 'returns_text' returned str" in shown
    # It was 28 frames, most of them the event loop's and the retry machinery's.
    assert shown.count('  File "') <= 6, shown
    assert "tenacity" not in shown

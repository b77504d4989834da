"""The text of every error agentgraph builds is masked; the user's own exception is not.

Whoever logs an exception (`logging.exception`, an error tracker) keeps its
`str`, its `repr` and its traceback lines. Every public error class, in every
public namespace, is built here with secrets in each of its arguments, and
none of them may reach that text, except in the lines of the user's own
exception (the `__cause__`), which stays as raised.
"""

import importlib
import inspect
import logging
import traceback

import httpx
import pytest

from agentgraph import (
    AgentContext,
    AuthenticationError,
    GraphBuilder,
    GraphRunner,
    Message,
    NodeFailed,
    node,
)
from agentgraph.llm import OpenAIModel
from agentgraph.nodes import chat

pytestmark = pytest.mark.anyio

KEY = "sk-ant-api03-Zq8h3LrN5vT1wX7yB2cD4eF6gH8jK0mP"
PIECE = KEY[13:35]  # any long piece of the key must be gone too
TOKEN = "7c1f0a9e5b3d2e8f4a6c"  # the value of a secret-named environment variable
NAMESPACES = (
    "agentgraph",
    "agentgraph.checkpoint",
    "agentgraph.llm",
    "agentgraph.mcp",
    "agentgraph.nodes",
    "agentgraph.rag",
    "agentgraph.ray",
    "agentgraph.structured",
    "agentgraph.temporal",
    "agentgraph.testing",
    "agentgraph.tools",
    "agentgraph.tracing",
    "agentgraph.web",
)
DESCRIPTIONS = ("reason", "problem", "detail", "what", "diff", "why")
"""Attributes that hold the error's own account of what went wrong: masked like its message."""
CAUSE_LINE = "The above exception was the direct cause of the following exception:"


def public_errors() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for name in NAMESPACES:
        try:
            module = importlib.import_module(name)
        except ImportError:  # an extra that is not installed: its errors cannot be raised
            continue
        for attr in module.__all__:
            value = getattr(module, attr)
            if inspect.isclass(value) and issubclass(value, BaseException):
                found.setdefault(f"{value.__module__}.{value.__qualname__}", value)
    return found


ERRORS = public_errors()


def secret_text(name: str) -> str:
    return f"{name} failed: Incorrect API key provided: {KEY}; TOKEN={TOKEN}"


def argument(parameter: inspect.Parameter) -> object:
    """A value for `parameter` that carries a secret wherever a value can carry text."""
    name, annotation = parameter.name, str(parameter.annotation)
    if name == "context":
        return AgentContext(f"the user's {KEY}")
    if name == "error":
        return ValueError(f"the user's own {KEY}")
    if name == "body":
        return {"error": {"message": secret_text("body")}}
    if name in ("details",):
        return {"reason": secret_text("details")}
    if name == "value_type":
        return int
    if "Sequence" in annotation:
        return (secret_text(name), "n")
    if annotation.startswith("tuple[int"):
        return (3, None)
    if "float" in annotation:
        return 9.0
    if "int" in annotation and "str" not in annotation:
        return 401 if name == "status" else 3
    if "str" in annotation or "Any" in annotation or parameter.default is inspect.Parameter.empty:
        return secret_text(name)
    return parameter.default


def build(cls: type[BaseException]) -> BaseException:
    positional, keywords = [], {}
    for parameter in list(inspect.signature(cls.__init__).parameters.values())[1:]:
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            if parameter.kind is parameter.VAR_POSITIONAL:
                positional.append(secret_text("message"))
            continue
        value = argument(parameter)
        if parameter.kind is parameter.KEYWORD_ONLY:
            keywords[parameter.name] = value
        else:
            positional.append(value)
    return cls(*positional, **keywords)


@pytest.fixture(autouse=True)
def secret_environment(monkeypatch):
    monkeypatch.setenv("ACME_API_TOKEN", TOKEN)


def test_the_walk_finds_the_errors_of_every_namespace():
    names = {cls.__name__ for cls in ERRORS.values()}
    assert {"NodeFailed", "AuthenticationError", "RoutingError", "CheckpointError"} <= names
    assert {"ToolError", "MCPToolError", "MCPConnectionError", "OutputError"} <= names


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_no_error_text_carries_a_secret_but_the_users_own_exception(name):
    error = build(ERRORS[name])
    cause = ValueError(f"the user's own {KEY}")
    try:
        raise error from cause
    except BaseException as raised:
        lines = traceback.format_exception(raised)
    text = "".join(lines)
    assert CAUSE_LINE in text
    users, ours = text.split(CAUSE_LINE)
    assert f"the user's own {KEY}" in users  # the cause is the user's text, untouched
    for shown in (ours, str(error), repr(error), *map(str, error.args)):
        assert PIECE not in shown and TOKEN not in shown, shown
    for attribute in DESCRIPTIONS:
        value = getattr(error, attribute, None)
        if isinstance(value, str):
            assert PIECE not in value and TOKEN not in value, attribute


async def test_a_nodes_exception_is_masked_in_node_failed_and_kept_as_its_cause(caplog):
    raised = RuntimeError(f"cannot connect with {KEY}")

    @node
    def connect(ctx):
        raise raised

    with pytest.raises(NodeFailed) as failed:
        await GraphRunner().run(connect, AgentContext("go"))
    error = failed.value
    assert error.__cause__ is raised and error.error is raised
    assert str(raised) == f"cannot connect with {KEY}"
    assert PIECE not in str(error) and PIECE not in repr(error)
    assert "RuntimeError: cannot connect with ***" in str(error)
    with caplog.at_level(logging.ERROR):
        logging.getLogger("app").exception("run failed", exc_info=error)
    logged = caplog.text.split(CAUSE_LINE)
    assert KEY in logged[0] and PIECE not in logged[1]


async def test_a_providers_401_body_is_masked_in_the_error_and_kept_in_body():
    echoed = {
        "error": {
            "message": f"Incorrect API key provided: {KEY}.",
            "type": "invalid_request_error",
            "code": "invalid_api_key",
        }
    }
    client = httpx.AsyncClient(
        transport=httpx.MockTransport(lambda request: httpx.Response(401, json=echoed))
    )
    model = OpenAIModel("gpt-4o-mini", api_key="sk-configured-key-0123456789", http_client=client)
    with GraphBuilder[str, Message]("g") as g:
        g.start.edge_to(chat(model)).edge_to(g.finish)
    with pytest.raises(NodeFailed) as failed:
        await GraphRunner().run(g.build(), AgentContext("hi").append(Message.user("hi")))
    await client.aclose()
    refused = failed.value.__cause__
    assert isinstance(refused, AuthenticationError) and refused.status == 401
    for shown in (failed.value, refused):
        text = "".join(traceback.format_exception(shown))
        assert PIECE not in text and PIECE not in str(shown) and PIECE not in repr(shown)
    assert "Incorrect API key provided: ***" in str(refused)
    assert refused.body == echoed  # the body as received, for a program that reads it


def test_masking_an_error_leaves_what_needs_no_masking_alone():
    error = NodeFailed(
        context=AgentContext(1), step=2, path=("g", "n"), attempts=1, error=KeyError("basic usage")
    )
    assert str(error) == "node g/n failed at step 2 after 1 attempt: KeyError: 'basic usage'"

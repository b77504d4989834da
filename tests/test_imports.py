"""`import agentgraph` loads what builds a graph; the rest loads on first use."""

import subprocess
import sys

import pytest

import agentgraph
import agentgraph.llm

LOADED = """
import sys
before = set(sys.modules)
import agentgraph
print("\\n".join(sorted(set(sys.modules) - before)))
"""


def loaded_by(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return set(out.stdout.split())


def test_import_agentgraph_loads_no_provider_client_http_stack_or_sink():
    loaded = loaded_by(LOADED)
    third_party = {
        name.split(".")[0]
        for name in loaded
        if name.split(".")[0] not in sys.stdlib_module_names and not name.startswith("_")
    }
    assert third_party <= {
        "agentgraph",
        "anyio",
        "attr",
        "attrs",
        "orjson",
        "tenacity",
        "sniffio",
        "typing_extensions",
        "idna",
        "exceptiongroup",
    }, third_party
    ours = {name for name in loaded if name.startswith("agentgraph")}
    for lazy in (
        "agentgraph.llm._openai",
        "agentgraph.llm._anthropic",
        "agentgraph.llm._ollama",
        "agentgraph.llm._gigachat",
        "agentgraph.llm._http",
        "agentgraph.llm._embed",
        "agentgraph.nodes",
        "agentgraph.structured",
        "agentgraph.tools",
        "agentgraph.tracing",
        "agentgraph.checkpoint",
        "agentgraph.rag",
    ):
        assert lazy not in ours, lazy
    assert "asyncio" not in loaded  # looked up only when a loop may be running


def test_import_agentgraph_loads_what_building_a_graph_needs_and_no_more():
    loaded = loaded_by(LOADED)
    ours = {name for name in loaded if name.startswith("agentgraph")}
    # Contexts, messages, nodes and graphs: the runner, its events and the model
    # protocol load when first named (`agentgraph.GraphRunner`, `agentgraph.llm.ChatModel`).
    assert ours == {
        "agentgraph",
        "agentgraph._core",
        "agentgraph._core._context",
        "agentgraph._core._errors",
        "agentgraph._core._errors_guards",
        "agentgraph._core._errors_provider",
        "agentgraph._core._errors_root",
        "agentgraph._core._errors_run",
        "agentgraph._core._errors_toolkit",
        "agentgraph._core._graph",
        "agentgraph._core._node",
        "agentgraph._util",
        "agentgraph._util._moved",
        "agentgraph._util._public",
        "agentgraph.llm",
        "agentgraph.llm._content",
        "agentgraph.llm._embedder",
        "agentgraph.llm._messages",
    }, sorted(ours)
    # A failed step's record (`Failure`) loads with the first error transition.
    assert "agentgraph._core._failure" not in ours
    # Bytes and URLs in messages load these when they are handled, not at import.
    for stdlib in ("hashlib", "base64", "urllib.parse", "ipaddress", "socket"):
        assert stdlib not in loaded, stdlib


@pytest.mark.parametrize("module", [agentgraph, agentgraph.llm])
def test_names_loaded_on_first_use_are_all_there(module):
    lazy = module._LAZY
    assert set(lazy) <= set(module.__all__)
    assert set(module.__all__) <= set(dir(module))
    for name in module.__all__:
        assert getattr(module, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        module.nothing_here  # noqa: B018


def test_a_lazily_loaded_name_is_the_same_object_as_its_home_module():
    import importlib

    openai = importlib.import_module("agentgraph.llm._openai")
    generate = importlib.import_module("agentgraph.nodes._generate")
    runner = importlib.import_module("agentgraph._core._runner")
    model = importlib.import_module("agentgraph.llm._model")
    assert agentgraph.llm.OpenAIModel is openai.OpenAIModel
    assert agentgraph.generate is generate.generate
    assert agentgraph.GraphRunner is runner.GraphRunner
    assert agentgraph.llm.ChatRequest is model.ChatRequest


def test_from_imports_of_lazy_names_work_in_a_fresh_process():
    loaded = loaded_by(
        "import sys\n"
        "from agentgraph import GraphRunner, StepInfo, tool, generate\n"
        "from agentgraph.llm import ChatModel, OpenAIModel\n"
        "print('\\n'.join(sys.modules))"
    )
    assert {
        "agentgraph._core._runner",
        "agentgraph._core._events",
        "agentgraph.llm._model",
        "agentgraph.tools",
        "agentgraph.nodes",
        "agentgraph.llm._openai",
        "httpx",
    } <= loaded


def test_the_runtime_loads_memory_only_when_a_step_asks_for_it():
    loaded = loaded_by(
        "import sys\n"
        "from agentgraph import GraphRunner, Runtime\n"
        "assert callable(Runtime.memory)\n"
        "print('\\n'.join(sys.modules))"
    )
    assert "agentgraph._core._runtime" in loaded
    assert not {"agentgraph.memory", "agentgraph.checkpoint", "numpy"} & loaded

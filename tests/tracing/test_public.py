"""The public names of `agentgraph.tracing`, and the examples in their docstrings."""

import ast
import re
import textwrap

import agentgraph.tracing as tracing


def test_all_is_a_sorted_tuple_of_what_the_package_holds():
    assert isinstance(tracing.__all__, tuple)
    assert list(tracing.__all__) == sorted(tracing.__all__)
    for name in tracing.__all__:
        assert hasattr(tracing, name), name
    public = {n for n in vars(tracing) if not n.startswith("_")}
    assert public == set(tracing.__all__)


def test_docstring_examples_compile():
    blocks = 0
    for name in tracing.__all__:
        doc = getattr(getattr(tracing, name), "__doc__", None) or ""
        for block in re.findall(r"```python\n(.*?)```", doc, flags=re.S):
            compile(textwrap.dedent(block), name, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
            blocks += 1
    assert blocks >= 3


def test_without_the_optional_packages_everything_but_otel_works():
    """In a process where rich and OpenTelemetry cannot be imported at all."""
    import subprocess
    import sys

    code = """
import io, sys

class Absent:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("rich", "opentelemetry"):
            raise ImportError(f"no {name} here")

sys.meta_path.insert(0, Absent())
import anyio
from agentgraph import AgentContext, GraphBuilder, GraphRunner, node
from agentgraph.tracing import ConsoleSink, OtelSink

@node
def one(ctx):
    return ctx

with GraphBuilder("g") as g:
    g.start.edge_to(one).edge_to(g.finish)
out = io.StringIO()
anyio.run(GraphRunner(sinks=[ConsoleSink(out)]).run, g.build(), AgentContext(0))
print(out.getvalue().splitlines()[0])
try:
    OtelSink()
except ImportError as exc:
    print(exc)
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.splitlines() == [
        "▸ run g",
        "OtelSink needs OpenTelemetry: pip install 'agentgraph-engine[otel]'",
    ]

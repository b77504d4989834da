"""The public names of `agentgraph.rag`, and the examples in their docstrings."""

import ast
import re
import textwrap

import pytest

pytest.importorskip("numpy", reason="the `rag` extra (numpy) is not installed")

import agentgraph.nodes._retrieve
import agentgraph.nodes._summarize
import agentgraph.rag as rag
import agentgraph.rag._chunk
import agentgraph.rag._file


def test_all_is_a_sorted_tuple_of_what_the_package_holds():
    assert isinstance(rag.__all__, tuple)
    assert list(rag.__all__) == sorted(rag.__all__)
    public = {n for n in vars(rag) if not n.startswith("_")}
    assert public == set(rag.__all__)


def test_docstring_examples_compile():
    docs = [getattr(rag, name).__doc__ or "" for name in rag.__all__]
    modules = (
        agentgraph.rag._chunk,
        agentgraph.rag._file,
        agentgraph.nodes._retrieve,
        agentgraph.nodes._summarize,
    )
    docs += [module.__doc__ or "" for module in modules]
    blocks = [b for doc in docs for b in re.findall(r"```python\n(.*?)```", doc, flags=re.S)]
    assert len(blocks) >= 6
    for block in blocks:
        compile(textwrap.dedent(block), "doc", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)

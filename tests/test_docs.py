"""Every Python block in the README runs, in order, in one namespace."""

import re
from pathlib import Path

import agentgraph

ROOT = Path(__file__).resolve().parent.parent


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


def test_readme_blocks_run(capsys):
    blocks = python_blocks(ROOT / "README.md")
    assert len(blocks) >= 5
    namespace: dict[str, object] = {"__name__": "readme"}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)


def test_docstring_examples_compile():
    """Docstring examples are fragments; at least make sure they parse."""
    for name in agentgraph.__all__:
        doc = getattr(getattr(agentgraph, name), "__doc__", None) or ""
        for block in re.findall(r"```python\n(.*?)```", doc, flags=re.S):
            compile(_dedent(block), name, "exec")


def _dedent(block: str) -> str:
    import textwrap

    return textwrap.dedent(block)


def test_public_names_are_honest():
    assert list(agentgraph.__all__) == sorted(agentgraph.__all__)
    assert isinstance(agentgraph.__all__, tuple)
    for name in agentgraph.__all__:
        assert hasattr(agentgraph, name), name
    public = {n for n in vars(agentgraph) if not n.startswith("_")}
    modules = {"llm", "nodes", "tracing", "tools", "testing"}
    assert public - modules - set(agentgraph.__all__) == set()


def test_quickstart_example_runs(capsys):
    import runpy

    runpy.run_path(str(ROOT / "examples" / "quickstart.py"), run_name="__main__")
    assert "settled at 2 after 3 halvings" in capsys.readouterr().out

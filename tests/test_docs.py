"""Every Python block in the README runs, in order, in one namespace."""

import re
from pathlib import Path

import agentgraph

ROOT = Path(__file__).resolve().parent.parent


CONTINUES = "(continues the previous block)"


def python_blocks(path: Path) -> list[tuple[str, bool]]:
    """Each Python block, and whether the text just before it says it continues the last one."""
    text = path.read_text()
    found: list[tuple[str, bool]] = []
    for match in re.finditer(r"```python\n(.*?)```", text, flags=re.S):
        before = text[: match.start()].rsplit("```", 1)[-1]
        found.append((match.group(1), CONTINUES in before.strip().splitlines()[-1]))
    return found


def test_readme_blocks_run_on_their_own_or_where_they_say_they_continue(capsys):
    blocks = python_blocks(ROOT / "README.md")
    assert len(blocks) >= 5 and not blocks[0][1]
    namespace: dict[str, object] = {}
    for number, (block, continues) in enumerate(blocks, 1):
        if not continues:
            namespace = {"__name__": f"readme_block_{number}"}
        exec(compile(block, f"README.md block {number}", "exec"), namespace)


def test_docstring_examples_compile():
    """Docstring examples are fragments; at least make sure they parse."""
    import ast
    import importlib

    packages = ("agentgraph", "agentgraph.evals", "agentgraph.llm", "agentgraph.nodes")
    for package in (*packages, "agentgraph.tools"):
        module = importlib.import_module(package)
        for name in module.__all__:
            doc = getattr(getattr(module, name), "__doc__", None) or ""
            for block in re.findall(r"```python\n(.*?)```", doc, flags=re.S):
                compile(_dedent(block), name, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


def _dedent(block: str) -> str:
    import textwrap

    return textwrap.dedent(block)


def test_public_names_are_honest():
    assert list(agentgraph.__all__) == sorted(agentgraph.__all__)
    assert isinstance(agentgraph.__all__, tuple)
    for name in agentgraph.__all__:
        assert hasattr(agentgraph, name), name
    public = {n for n in vars(agentgraph) if not n.startswith("_")}
    # Subpackages are attributes of the package once anything imported them; the
    # integrations (their extras) are imported only by their users and their tests.
    modules = {"checkpoint", "llm", "nodes", "rag", "structured", "tracing", "tools", "testing"}
    modules |= {"evals", "mcp", "ray", "temporal", "web"}
    assert public - modules - set(agentgraph.__all__) == set()


def test_quickstart_example_runs(capsys):
    import runpy

    runpy.run_path(str(ROOT / "examples" / "quickstart.py"), run_name="__main__")
    assert "settled at 2 after 3 halvings" in capsys.readouterr().out


def test_calculator_agent_example_runs_offline(capsys):
    import runpy

    runpy.run_path(str(ROOT / "examples" / "calculator_agent.py"), run_name="__main__")
    assert "answer: The hypotenuse is 5." in capsys.readouterr().out


def test_react_agent_demo_falls_back_to_the_scripted_model(capsys, monkeypatch):
    import runpy

    for name in ("AGENTGRAPH_MODEL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")  # nothing listens there
    runpy.run_path(str(ROOT / "examples" / "react_agent.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "Using the offline scripted model" in out
    assert "answer: The hypotenuse is 5." in out
    assert "react_agent/tools" in out

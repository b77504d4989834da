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


def test_readme_blocks_run_on_their_own_or_where_they_say_they_continue(capsys, monkeypatch):
    blocks = python_blocks(ROOT / "README.md")
    assert len(blocks) >= 5 and not blocks[0][1]
    models, inputs = _record_models_and_inputs(monkeypatch)
    namespace: dict[str, object] = {}
    for number, (block, continues) in enumerate(blocks, 1):
        if not continues:
            namespace = {"__name__": f"readme_block_{number}"}
        models.clear()
        inputs.clear()
        exec(compile(block, f"README.md block {number}", "exec"), namespace)
        for model in models:
            if model.requests:
                sent = "\n".join(m.content for m in model.requests[0].messages)
                assert any(text in sent for text in inputs), (number, inputs, sent)


def _record_models_and_inputs(monkeypatch) -> tuple[list, list[str]]:
    """Keep every scripted model a block makes and what every run it starts is given.

    A model's first request must hold the input of a run of its block (or, for
    a run that starts from a conversation, a message of it): the examples show
    what the model is sent, so what the run was given must reach it.
    """
    from agentgraph import GraphRunner
    from agentgraph.testing._scripted import ReplyModel

    models: list = []
    inputs: list[str] = []
    make, run = ReplyModel.__init__, GraphRunner.run

    def keep(self, *args, **kwargs):
        make(self, *args, **kwargs)
        models.append(self)

    def note(self, graph, ctx, **kwargs):
        if isinstance(ctx.input, str):
            inputs.append(ctx.input)
        inputs.extend(m.content for m in ctx.history if m.role == "user" and m.content)
        return run(self, graph, ctx, **kwargs)

    monkeypatch.setattr(ReplyModel, "__init__", keep)
    monkeypatch.setattr(GraphRunner, "run", note)
    return models, inputs


def test_docstring_examples_compile():
    """Docstring examples are fragments; at least make sure they parse."""
    import ast
    import importlib

    for package in ("agentgraph", "agentgraph.llm", "agentgraph.nodes", "agentgraph.tools"):
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
    modules |= {"mcp", "ray", "temporal", "web"}
    assert public - modules - set(agentgraph.__all__) == set()


def test_quickstart_example_runs(capsys):
    import runpy

    runpy.run_path(str(ROOT / "examples" / "quickstart.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "settled at 2 after 3 halvings" in out
    steps = [int(line.split()[0]) for line in out.splitlines() if line[:3].strip().isdigit()]
    assert steps == list(range(1, 12))  # in the order they ran


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

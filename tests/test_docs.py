"""The documentation: every Python block of every page runs, and the site builds strictly.

A page's blocks run in order; a block starts a fresh namespace unless the line just
before it says "(continues the previous block)". Blocks that talk to a model provider
through `model_from_string` reach the loopback fake server through the environment.
"""

import os
import re
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

import agentgraph
from agentgraph.testing import FakeServer
from tests.test_public_api import public_modules

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
CONTINUES = "(continues the previous block"
FAKE_ANSWER = "Paris is the capital of France."


def python_blocks(path: Path) -> list[tuple[str, bool]]:
    """Each Python block, and whether the text just before it says it continues the last one."""
    text = path.read_text()
    found: list[tuple[str, bool]] = []
    for match in re.finditer(r"^```python\n(.*?)^```", text, flags=re.S | re.M):
        before = text[: match.start()].rsplit("```", 1)[-1].strip().splitlines()
        found.append((match.group(1), bool(before) and CONTINUES in before[-1]))
    return found


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def page_id(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.fixture(scope="module")
def fake_provider():
    with FakeServer(default=FAKE_ANSWER) as server:
        yield server


@pytest.fixture
def provider_env(fake_provider, monkeypatch):
    """`model_from_string("openai:...")` in a block talks to the loopback fake server."""
    fake_provider.reset()
    monkeypatch.setenv("OPENAI_BASE_URL", fake_provider.openai_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-docs-example")
    return fake_provider


@pytest.mark.timeout(180)
@pytest.mark.parametrize("page", pages(), ids=page_id)
def test_every_python_block_runs_alone_or_where_it_says_it_continues(
    page, provider_env, capsys, monkeypatch
):
    """Each block runs, and each scripted model it makes is sent what its runs were given."""
    blocks = python_blocks(page)
    if not blocks:
        assert "```python" not in page.read_text(), f"{page_id(page)}: a block was not found"
        return
    assert not blocks[0][1], f"{page_id(page)}: the first block cannot continue another"
    models, inputs = _record_models_and_inputs(monkeypatch)
    namespace: dict[str, object] = {}
    for number, (block, continues) in enumerate(blocks, 1):
        if not continues:
            namespace = {"__name__": f"docs_block_{number}"}
        models.clear()
        inputs.clear()
        exec(compile(block, f"{page_id(page)} block {number}", "exec"), namespace)
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
    from agentgraph import AgentContext, GraphRunner
    from agentgraph.llm._scripted import ReplyModel

    models: list = []
    inputs: list[str] = []
    make, run = ReplyModel.__init__, GraphRunner.run

    def keep(self, *args, **kwargs):
        make(self, *args, **kwargs)
        models.append(self)

    def note(self, graph, ctx, **kwargs):
        if isinstance(ctx, AgentContext):  # a block may show what passing anything else does
            if isinstance(ctx.input, str):
                inputs.append(ctx.input)
            inputs.extend(m.content for m in ctx.history if m.role == "user" and m.content)
        return run(self, graph, ctx, **kwargs)

    monkeypatch.setattr(ReplyModel, "__init__", keep)
    monkeypatch.setattr(GraphRunner, "run", note)
    return models, inputs


def test_the_readme_is_a_landing_page_and_the_site_holds_the_rest():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    assert python_blocks(ROOT / "README.md"), "the README shows one example"
    for link in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (ROOT / link).is_file(), link


def test_a_continuation_names_what_of_the_previous_block_it_uses():
    for page in pages():
        for line in page.read_text().splitlines():
            if CONTINUES in line and "```" not in line and "says" not in line:
                assert re.search(re.escape(CONTINUES) + r", which made `\w+`", line), (
                    f"{page_id(page)}: {line}"
                )


# What a guide's examples import, and the extra that brings it.
NEEDS = {
    r"agentgraph\.memory\b": "rag",
    r"agentgraph\.rag\b": "rag",
    r"agentgraph\.web\b": "web",
    r"agentgraph\.mcp\b": "mcp",
    r"agentgraph\.temporal\b": "temporal",
    r"agentgraph\.ray\b": "ray",
    r"agentgraph\.a2a\b": "a2a",
    r"agentgraph\.server\b": "server",
    r"\bPostgres(Store|Memory)\(": "postgres",
    r"\bFakeServer\b": "testing",
    r"\bOtelSink\b": "otel",
}


@pytest.mark.parametrize("page", sorted((DOCS / "guides").glob("*.md")), ids=page_id)
def test_a_guide_says_what_it_needs_before_its_first_block(page):
    text = page.read_text()
    if "```python" not in text:
        return
    before = text[: text.index("```python")]
    code = "\n".join(re.sub(r"#.*", "", block) for block, _ in python_blocks(page))
    for pattern, extra in NEEDS.items():
        if re.search(pattern, code):
            assert re.search(rf"`{extra}`|\[{extra}\]", before), f"{page_id(page)}: {extra}"


@pytest.mark.parametrize("page", sorted((DOCS / "guides").glob("*.md")), ids=page_id)
def test_a_guides_first_example_prints_what_it_shows(page):
    blocks = python_blocks(page)
    if blocks:
        assert "print(" in blocks[0][0], f"{page_id(page)}: the first example prints nothing"


def test_the_blocks_are_found_and_shell_is_never_fenced_as_python():
    for page in pages():
        for block, _ in python_blocks(page):
            first = block.lstrip().splitlines()[0] if block.strip() else ""
            assert not first.startswith(("$ ", "pip ", "make ")), f"{page_id(page)}: {first}"


def test_the_real_model_block_of_get_started_runs_offline_as_written(capsys, monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(name, raising=False)
    blocks = python_blocks(DOCS / "get-started.md")
    [block] = [b for b, _ in blocks if "model_from_string" in b]
    exec(compile(block, "get-started.md", "exec"), {"__name__": "docs_block"})
    assert capsys.readouterr().out == "Paris is the capital of France.\n"
    text = (DOCS / "get-started.md").read_text()
    for line in (
        'model = model_from_string("openai:gpt-4o-mini")',
        'model = model_from_string("ollama:qwen2.5:7b")',
        'model = model_from_string("openrouter:openai/gpt-4o-mini")',
    ):
        assert line in text


# -- the site ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def built_site(tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(site)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return site


def inventory(site: Path) -> dict[str, str]:
    """The objects inventory the site publishes: each object's name and its page."""
    data = (site / "objects.inv").read_bytes()
    _, _, body = data.partition(b"zlib.\n")
    found = {}
    for line in zlib.decompress(body).decode().splitlines():
        name, _role, _priority, location, *_ = line.split(" ")
        found[name] = location
    return found


@pytest.mark.timeout(240)
def test_the_site_builds_strictly_and_every_public_name_has_a_reference_entry(built_site):
    entries = inventory(built_site)
    missing = [
        f"{module}.{name}"
        for module in public_modules()
        for name in importlib_all(module)
        if f"{module}.{name}" not in entries
    ]
    assert missing == []
    for module in public_modules():
        assert entries[module].startswith("reference/"), module
    assert (built_site / "index.html").is_file()
    # Pages are files, not folders (the offline plugin), so links work from disk too.
    assert (built_site / "guides" / "models.html").is_file()
    assert (built_site / "assets" / "javascripts" / "iframe-worker.js").is_file()
    assert "https://unpkg.com" not in (built_site / "index.html").read_text()


def importlib_all(module: str) -> tuple[str, ...]:
    import importlib

    return tuple(importlib.import_module(module).__all__)


def test_each_public_namespace_has_a_reference_page():
    directives = {
        line.removeprefix(":::").strip()
        for page in (DOCS / "reference").glob("*.md")
        for line in page.read_text().splitlines()
        if line.startswith(":::")
    }
    assert directives == set(public_modules())


def test_docstring_examples_compile():
    """Docstring examples are fragments; at least make sure they parse."""
    import ast
    import importlib
    import textwrap

    packages = ("agentgraph", "agentgraph.evals", "agentgraph.llm", "agentgraph.nodes")
    for package in (*packages, "agentgraph.tools"):
        module = importlib.import_module(package)
        for name in module.__all__:
            doc = getattr(getattr(module, name), "__doc__", None) or ""
            for block in re.findall(r"```python\n(.*?)```", doc, flags=re.S):
                compile(textwrap.dedent(block), name, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


def test_public_names_are_honest():
    assert list(agentgraph.__all__) == sorted(agentgraph.__all__)
    assert isinstance(agentgraph.__all__, tuple)
    for name in agentgraph.__all__:
        assert hasattr(agentgraph, name), name
    public = {n for n in vars(agentgraph) if not n.startswith("_")}
    # Subpackages are attributes of the package once anything imported them; the
    # integrations (their extras) are imported only by their users and their tests.
    modules = {"checkpoint", "llm", "nodes", "rag", "structured", "tracing", "tools", "testing"}
    modules |= {"a2a", "evals", "guards", "mcp", "memory", "ray", "teams", "temporal", "web"}
    modules |= {"server"}
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

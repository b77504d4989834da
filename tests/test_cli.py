"""`python -m agentgraph`: run, draw and show, and a clear one-line error for every bad input."""

import io
import subprocess
import sys

import pytest

from agentgraph._cli import CommandError, main, parse_input
from agentgraph.tracing import load_trace

APP = """
from agentgraph import AgentContext, GraphBuilder, Message, Node, RetryPolicy, node

async def _no_wait(seconds):
    pass

_calls = []

@node
def prepare(ctx):
    return ctx.with_input(ctx.input + 1)

@node
def flaky(ctx):
    _calls.append(1)
    if len(_calls) % 2:
        raise TimeoutError("slow")
    return ctx

@node
def double(ctx):
    return ctx.with_input(ctx.input * 2)

@node
def check(ctx):
    if ctx.input > 100:
        raise ValueError(f"{ctx.input} is too big")
    return ctx.append(Message.assistant(f"done at {ctx.input}"))

def _again(ctx) -> Node:
    return double if ctx.input < 20 else check

def _build(name="outer"):
    retried = flaky.with_retry(RetryPolicy(sleep=_no_wait))
    with GraphBuilder("inner") as i:
        i.start.edge_to(retried).edge_to(double)
        double.edge_to(_again, targets=(double, check))
        check.edge_to(i.finish)
    with GraphBuilder(name) as o:
        o.start.edge_to(prepare).edge_to(i.build()).edge_to(o.finish)
    return o.build()

graph = _build()
number = 42
a_node = prepare

def make(model):
    return _build(f"made-by-{model.name}")

def make_optional(model=None):
    return _build("optional")

def needs_more(size, model=None):
    return _build()

def explodes():
    raise RuntimeError("cannot build")

def not_a_graph():
    return "nope"

class Namespace:
    inner = graph
"""


@pytest.fixture
def app(tmp_path, monkeypatch):
    (tmp_path / "cli_app.py").write_text(APP)
    (tmp_path / "broken_app.py").write_text("import os\nraise RuntimeError('no config')\n")
    (tmp_path / "needs_dep.py").write_text("import not_installed_anywhere\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    for name in ("cli_app", "broken_app", "needs_dep", "_agentgraph_target_cli_app"):
        sys.modules.pop(name, None)


def cli(*argv):
    out, err = io.StringIO(), io.StringIO()
    status = main(list(argv), stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def test_run_shows_the_steps_writes_the_trace_and_prints_the_output(app):
    status, out, err = cli("run", "cli_app:graph", "--input", "1", "--trace", "t.jsonl", "--plain")
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "▸ run outer" and "      ↻ attempt 1 failed: TimeoutError: slow" in out
    assert lines[-1] == "32"
    trace = load_trace(app / "t.jsonl")
    assert trace.ok and trace.output == 32 and trace.step_count == 8


def test_a_failed_run_shows_its_tree_and_one_line_then_exits_1(app):
    status, out, err = cli("run", "cli_app:graph", "--input", "60", "--plain")
    assert status == 1
    assert "✗ check failed after 1 attempt: ValueError: 122 is too big" in out
    assert err.splitlines() == [
        "agentgraph: run failed: NodeFailed: node outer/inner/check failed at step 5 "
        "after 1 attempt: ValueError: 122 is too big"
    ]


def test_the_step_cap_and_a_rich_tree(app):
    status, out, err = cli("run", "cli_app:graph", "--input", "1", "--max-steps", "3")
    assert status == 1 and "StepLimitExceeded" in err
    assert "✗ run outer" in out and "├──" in out  # rich draws the tree when it is installed


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("42", 42),
        ("-1.5", -1.5),
        ("true", True),
        ("null", None),
        ("[1, 2]", [1, 2]),
        ('{"a": {"b": 1}}', {"a": {"b": 1}}),
        ('"quoted"', "quoted"),
        ("hello world", "hello world"),
        ("3 apples", "3 apples"),
        ("", ""),
    ],
)
def test_input_is_json_when_it_parses_and_text_otherwise(text, value):
    assert parse_input(text) == value


@pytest.mark.parametrize("text", ['{"a": 1', "[1, 2", '"open', "  {oops}"])
def test_input_that_looks_like_json_must_parse(text):
    with pytest.raises(CommandError, match="looks like JSON"):
        parse_input(text)


def test_a_factory_gets_the_model_and_a_file_path_works_as_a_module(app):
    status, out, _ = cli("run", "cli_app:make", "--model", "ollama:tiny", "--input", "3", "--plain")
    assert status == 0 and out.splitlines()[0] == "▸ run made-by-tiny"
    status, out, _ = cli("run", "cli_app:make_optional", "--input", "3", "--plain")
    assert status == 0 and out.splitlines()[0] == "▸ run optional"
    status, out, _ = cli(
        "run", str(app / "cli_app.py") + ":Namespace.inner", "--input", "1", "--plain"
    )
    assert status == 0 and out.splitlines()[-1] == "32"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "no_such_module:graph", "--input", "1"], "cannot import module 'no_such_module'"),
        (["run", "cli_app.sub:graph", "--input", "1"], "cannot import module 'cli_app.sub'"),
        (["run", "cli_app", "--input", "1"], "'cli_app' is not module:attribute"),
        (["run", "cli_app:missing", "--input", "1"], "'cli_app' has no attribute 'missing'"),
        (["run", "cli_app:number", "--input", "1"], "cli_app:number is of type int, not a Graph"),
        (["run", "cli_app:a_node", "--input", "1"], "cli_app:a_node is a node, not a Graph"),
        (["run", "cli_app:make", "--input", "1"], "cli_app:make needs a model: pass --model"),
        (
            ["run", "cli_app:needs_more", "--input", "1"],
            "cli_app:needs_more needs arguments (size)",
        ),
        (
            ["run", "cli_app:explodes", "--input", "1"],
            "cli_app:explodes() failed: RuntimeError: cannot build (at cli_app.py:",
        ),
        (["run", "cli_app:not_a_graph", "--input", "1"], "returned a str, not a Graph"),
        (
            ["run", "cli_app:graph", "--input", "1", "--model", "ollama:x"],
            "is a graph; --model needs",
        ),
        (["run", "cli_app:make", "--input", "1", "--model", "nope"], "cannot read model 'nope'"),
        (
            ["run", "broken_app:graph", "--input", "1"],
            "importing 'broken_app' failed: RuntimeError: no config (at broken_app.py:2)",
        ),
        (
            ["run", "needs_dep:graph", "--input", "1"],
            "importing 'needs_dep' failed: ModuleNotFoundError",
        ),
        (["run", "missing.py:graph", "--input", "1"], "no such file: missing.py"),
        (
            ["run", "cli_app:graph", "--input", '{"a":'],
            "--input looks like JSON but does not parse",
        ),
        (["run", "cli_app:graph"], "the following arguments are required: --input"),
        (["run", "cli_app:graph", "--input", "1", "--max-steps", "0"], "0 is not at least 1"),
        (
            ["run", "cli_app:graph", "--input", "1", "--trace", "no/dir/t.jsonl"],
            "cannot write trace no/dir/t.jsonl",
        ),
        (["show", "absent.jsonl"], "cannot read trace absent.jsonl"),
        (["walk", "x"], "invalid choice: 'walk'"),
    ],
)
def test_every_bad_command_is_one_line_and_exit_2(app, argv, message):
    status, out, err = cli(*argv)
    assert status == 2
    assert err.count("\n") == 1 and err.startswith("agentgraph: error: ")
    assert message in err and "Traceback" not in err + out


def test_no_arguments_prints_help(app):
    status, out, _ = cli()
    assert status == 2 and "run a graph and show its steps" in out


def test_draw_prints_mermaid_and_marks_a_run_from_its_trace(app):
    status, out, _ = cli("draw", "cli_app:graph", "--direction", "LR")
    assert status == 0 and out.startswith("flowchart LR\n") and 'subgraph n2 ["inner"]' in out
    status, out, _ = cli("draw", "cli_app:make")  # a factory needing a model can still be drawn
    assert status == 0 and out.startswith("flowchart TD\n")
    cli("run", "cli_app:graph", "--input", "1", "--trace", "t.jsonl", "--plain")
    status, out, _ = cli("draw", "cli_app:graph", "--trace", "t.jsonl")
    assert status == 0 and 'n2_2["double \u00d74"]' in out and "linkStyle" in out
    status, _, err = cli("draw", "cli_app:graph", "--trace", "t.jsonl", "--run", "zzz")
    assert status == 2 and "no run 'zzz'" in err


def test_show_renders_a_saved_trace_as_a_tree_or_a_page(app):
    cli("run", "cli_app:graph", "--input", "60", "--trace", "t.jsonl", "--plain")
    status, out, _ = cli("show", "t.jsonl", "--plain")
    assert status == 0
    assert out.splitlines()[-1] == "    └── ✗ check · " + out.splitlines()[-1].split(" · ", 1)[1]
    assert "122 is too big" in out
    status, out, _ = cli("show", "t.jsonl", "--html", "page.html", "--graph", "cli_app:graph")
    assert (status, out) == (0, "wrote page.html\n")
    page = (app / "page.html").read_text()
    assert '<svg id="graph-svg"' in page and "linkStyle" in page
    status, _, err = cli("show", "t.jsonl", "--html", "no/dir/page.html")
    assert status == 2 and "cannot write no/dir/page.html" in err


def test_the_module_runs_as_a_program(app):
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentgraph",
            "run",
            "cli_app:graph",
            "--input",
            "1",
            "--trace",
            "t.jsonl",
            "--plain",
        ],
        cwd=app,
        capture_output=True,
        text=True,
        timeout=50,
        check=False,
    )
    assert (run.returncode, run.stderr) == (0, "")
    assert run.stdout.splitlines()[-1] == "32"
    assert load_trace(app / "t.jsonl").step_count == 8
    bad = subprocess.run(
        [sys.executable, "-m", "agentgraph", "draw", "nowhere:graph"],
        cwd=app,
        capture_output=True,
        text=True,
        timeout=50,
        check=False,
    )
    assert bad.returncode == 2
    assert (
        bad.stderr
        == "agentgraph: error: cannot import module 'nowhere': no module named 'nowhere'\n"
    )


def test_version_prints_the_program_and_its_version():
    import agentgraph

    out = io.StringIO()
    assert main(["--version"], stdout=out) == 0
    assert out.getvalue() == f"agentgraph {agentgraph.__version__}\n"


def test_help_and_errors_name_the_program_the_same_way():
    out, err = io.StringIO(), io.StringIO()
    assert main([], stdout=out, stderr=err) == 2
    assert out.getvalue().startswith("usage: agentgraph ")
    assert main(["--plain"], stdout=out, stderr=err) == 2
    assert err.getvalue().startswith("agentgraph: error: ")
    assert "(see `agentgraph --help`)" in err.getvalue()
    done = subprocess.run(
        [sys.executable, "-m", "agentgraph", "--help"], capture_output=True, text=True, timeout=60
    )
    assert done.stdout.startswith("usage: agentgraph ")
    assert "python -m" not in done.stdout

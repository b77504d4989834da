"""Every failure to load a target is one line and exit status 2; pipes and offline models."""

import io
import subprocess
import sys

import pytest

from agentgraph._cli import main

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]

MODULES = {
    "exits_app": "import sys\nsys.exit(5)\n",
    "interrupts_app": "raise KeyboardInterrupt\n",
    "getattr_app": "def __getattr__(name):\n    raise ZeroDivisionError('no attributes here')\n",
    "agent_app": (
        "from agentgraph.nodes import react_agent\n"
        "def make(model):\n    return react_agent(model, [])\n"
    ),
}


@pytest.fixture
def apps(tmp_path, monkeypatch):
    for name, text in MODULES.items():
        (tmp_path / f"{name}.py").write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    for name in MODULES:
        sys.modules.pop(name, None)


def cli(*argv):
    out, err = io.StringIO(), io.StringIO()
    status = main(list(argv), stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("exits_app:graph", "importing 'exits_app' failed: SystemExit: 5"),
        ("getattr_app:graph", "reading 'graph' of 'getattr_app' failed: ZeroDivisionError"),
    ],
)
def test_a_target_that_fails_to_load_is_one_line(apps, target, message):
    status, out, err = cli("run", target, "--input", "1")
    assert status == 2 and err.count("\n") == 1 and message in err
    assert "Traceback" not in out + err


def test_the_offline_model_runs_an_agent_without_a_key(apps):
    status, out, err = cli(
        "run", "agent_app:make", "--model", "scripted:It is 42.", "--input", "why?", "--plain"
    )
    assert status == 0, err
    assert out.splitlines()[-1] == "It is 42."


def test_a_closed_pipe_ends_quietly(apps):
    (apps / "big_app.py").write_text(
        "from agentgraph import GraphBuilder, node\n"
        "@node\ndef n(ctx):\n    return ctx\n"
        "nodes = [n.with_name(f'step{i}') for i in range(300)]\n"
        "with GraphBuilder('big') as g:\n"
        "    cur = g.start\n"
        "    for x in nodes:\n        cur = cur.edge_to(x)\n"
        "    cur.edge_to(g.finish)\n"
        "graph = g.build()\n"
    )
    run = subprocess.run(
        f"{sys.executable} -m agentgraph draw big_app:graph | head -c 20",
        shell=True,
        cwd=apps,
        capture_output=True,
        text=True,
        timeout=50,
        env={"PYTHONPATH": f"{apps}:{ROOT}", "PATH": "/usr/bin:/bin"},
    )
    assert run.stdout.startswith("flowchart TD")
    assert "Traceback" not in run.stderr and "BrokenPipe" not in run.stderr, run.stderr

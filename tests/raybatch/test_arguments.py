"""`agentgraph.ray` without Ray names its extra, and every bad `run_batch` argument is a
`UsageError` naming it before Ray starts (each case in a fresh interpreter, where Ray
was never started, so that "not started" can be asserted)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
AGENT = "tests.raybatch.graphs:agent"


def _python(script: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    ("package", "blocked", "extra"),
    [("agentgraph.ray", "ray", "ray"), ("agentgraph.ray", "tqdm", "ray")],
)
def test_the_package_without_its_extra_names_the_install_line(package, blocked, extra):
    done = _python(
        f"import sys\nsys.modules[{blocked!r}] = None  # as if it were not installed\n"
        f"import {package}\n"
    )
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last == (
        f"ImportError: {package} needs the {extra} extra ({blocked} is missing): "
        f"pip install 'agentgraph-engine[{extra}]'"
    )


def test_temporal_without_its_sdk_names_the_install_line():
    done = _python("import sys\nsys.modules['temporalio'] = None\nimport agentgraph.temporal\n")
    assert done.stderr.strip().splitlines()[-1] == (
        "ImportError: agentgraph.temporal needs Temporal's SDK: "
        "pip install 'agentgraph-engine[temporal]'"
    )


# Each case: the argument named, and run_batch's keyword arguments as Python source.
CASES = {
    "store": "store=(lambda lock: lambda: lock)(threading.Lock()), batch_id='b'",
    "runner": "runner=GraphRunner(sinks=[(lambda lock: lambda event: lock)(threading.Lock())])",
    "ray_remote_args": "ray_remote_args={'resources': {'gpu': threading.Lock()}}",
    "concurrency": "concurrency=2.5",
    "actors": "actors=True",
    "batch_id": "batch_id=''",
    "address": "address=6379",
    "progress": "progress='yes'",
    "lease_wait": "lease_wait=-1",
    "keys": "keys='ab'",
    "rate_limits": "rate_limits={'openai': 100}",
    "graph": "graph_=None",
}

SCRIPT = """
import json, threading
import ray
from agentgraph import GraphRunner, UsageError
from agentgraph.ray import run_batch

out = {}
for name, source in CASES.items():
    arguments = eval(f"dict({source})")
    graph = arguments.pop("graph_", AGENT)
    try:
        run_batch(graph, ["q"], **{"progress": False, **arguments})
    except UsageError as error:
        out[name] = str(error)
    else:
        out[name] = None
out["ray started"] = ray.is_initialized()
print(json.dumps(out))
"""


def test_every_bad_argument_is_refused_by_name_before_ray_starts():
    done = _python(f"CASES = {CASES!r}\nAGENT = {AGENT!r}\n{SCRIPT}")
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out.pop("ray started") is False
    for name, message in out.items():
        assert message is not None, f"{name}: no UsageError"
        assert message.startswith(name) or f" {name} " in message, f"{name}: {message}"
    assert "pickling it fails with TypeError: cannot pickle '_thread.lock'" in out["store"]

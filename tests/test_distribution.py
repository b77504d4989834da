"""The distribution: `agentgraph-engine` builds, installs into a fresh venv, and runs.

PyPI's `agentgraph` is another project, so the distribution has its own name
while the import package stays `agentgraph`. The install test builds the wheel,
installs it with its dependencies (from the package index pip is set up with)
into a new virtual environment, and runs the quickstart there from a folder
outside the checkout, so nothing of the checkout is importable.
"""

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import agentgraph

ROOT = Path(__file__).resolve().parent.parent


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_distribution_is_agentgraph_engine_and_names_itself_so_in_its_extras():
    project = _pyproject()["project"]
    assert project["name"] == "agentgraph-engine"
    for extra, requirements in project["optional-dependencies"].items():
        for requirement in requirements:
            name = re.split(r"[\[<>=!~ ;]", requirement, maxsplit=1)[0]
            assert name != "agentgraph", f"{extra}: {requirement} names the other project"
    assert project["scripts"] == {"agentgraph": "agentgraph._cli:main"}


def test_the_version_is_kept_in_one_place_that_the_build_reads():
    pyproject = _pyproject()
    assert pyproject["project"]["dynamic"] == ["version"]
    assert pyproject["tool"]["hatch"]["version"]["path"] == "agentgraph/__init__.py"
    assert re.fullmatch(r"\d+\.\d+\.\d+", agentgraph.__version__)


def test_install_hints_in_error_messages_name_the_distribution():
    for path in (ROOT / "agentgraph").rglob("*.py"):
        text = path.read_text()
        assert "pip install agentgraph[" not in text, path
        assert "'agentgraph[" not in text, path


def _run(args: list[str], **kwargs) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=400, **kwargs)
    assert done.returncode == 0, f"{args}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.mark.timeout(600)
def test_the_built_wheel_installs_into_a_fresh_venv_and_runs_the_quickstart(tmp_path):
    pytest.importorskip("build", reason="the dev extra installs build")
    _run([sys.executable, "-m", "build", "--wheel", "--outdir", str(tmp_path / "dist"), str(ROOT)])
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    assert wheel.name == f"agentgraph_engine-{agentgraph.__version__}-py3-none-any.whl"

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    # This interpreter's pip installs into the new venv: no pip bootstrap to wait for.
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", str(wheel)])

    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(ROOT / "examples" / "quickstart.py", work / "quickstart.py")
    out = _run([str(python), "quickstart.py"], cwd=work).stdout
    assert "settled at 2 after 3 halvings" in out

    where = _run(
        [
            str(python),
            "-c",
            "import agentgraph, importlib.metadata as m;"
            "print(agentgraph.__file__);"
            "print(agentgraph.__version__, m.version('agentgraph-engine'))",
        ],
        cwd=work,
    ).stdout.split("\n")
    assert Path(where[0]).is_relative_to(venv), where
    assert where[1] == f"{agentgraph.__version__} {agentgraph.__version__}"

    drawn = _run([str(venv / "bin" / "agentgraph"), "draw", "quickstart.py:graph"], cwd=work)
    assert drawn.stdout.startswith("flowchart")

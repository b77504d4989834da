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


def _groups() -> dict:
    return _pyproject()["dependency-groups"]


def test_development_tools_are_dependency_groups_not_published_extras():
    extras = _pyproject()["project"]["optional-dependencies"]
    assert {"dev", "bench", "docs"}.isdisjoint(extras)
    assert {"dev", "bench", "docs"} <= set(_groups())
    # The site needs its four tools and nothing of the test environment.
    names = {re.split(r"[\[<>=!~ ;]", r, maxsplit=1)[0] for r in _groups()["docs"]}
    assert names == {"mkdocs", "mkdocs-material", "mkdocstrings", "mkdocstrings-python"}


def test_make_alone_lists_every_target_with_one_line_each():
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    alone = _run(["make", "-s", "--no-print-directory"], cwd=ROOT).stdout
    assert alone == _run(["make", "-s", "--no-print-directory", "help"], cwd=ROOT).stdout
    listed = re.findall(r"^  make (\S+) +\S", alone, re.MULTILINE)
    makefile = (ROOT / "Makefile").read_text()
    phony = {
        t for line in re.findall(r"^\.PHONY:(.*)$", makefile, re.MULTILINE) for t in line.split()
    }
    assert {"demo", "test", "docs", "dist", "help"} <= phony
    assert sorted(phony - {"help"}) == sorted(listed)
    assert not (ROOT / ".venv" / "help").exists()


def test_the_docs_group_resolves_to_the_site_tools_alone(tmp_path):
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    pip = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install"]
    report = _run(
        [*pip, "--dry-run", "--quiet", "--report", "-", "--group", "docs"], cwd=ROOT
    ).stdout
    import json

    names = {item["metadata"]["name"].lower() for item in json.loads(report)["install"]}
    assert {"mkdocs", "mkdocs-material", "mkdocstrings-python"} <= names
    assert names.isdisjoint({"torch", "ray", "temporalio", "agentgraph-engine", "pytest"})


def _copy_of_the_repository(to: Path) -> Path:
    """The checkout as a fresh clone has it: no virtualenv, build output or caches."""
    skip = shutil.ignore_patterns(
        ".git", ".venv", "site", "dist", "build", "node_modules", "__pycache__", ".*_cache"
    )
    shutil.copytree(ROOT, to, ignore=skip)
    return to


def _install_lines() -> list[str]:
    """The README's install block, line by line, comments dropped."""
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Install") :]
    block = section[section.index("```sh") + 5 : section.index("```", section.index("```sh") + 5)]
    lines = [line.split("#", 1)[0].strip() for line in block.splitlines()]
    return [line for line in lines if line and not line.startswith("git clone")]


def _venv(path: Path) -> dict[str, str]:
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=120)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{path / 'bin'}{os.pathsep}{env['PATH']}"
    return env


def _version_in(venv: Path, work: Path) -> str:
    done = subprocess.run(
        [str(venv / "bin" / "agentgraph"), "--version"], cwd=work, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.timeout(900)
def test_every_install_line_of_the_readme_works_as_written_in_a_clone(tmp_path):
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    lines = _install_lines()
    assert lines == [
        "pip install .",
        "pip install '.[web]'",
        "make dist && pip install dist/agentgraph_engine-*.whl",
    ]
    clone = _copy_of_the_repository(tmp_path / "agentgraph")
    for number, line in enumerate(lines):
        venv = tmp_path / f"venv{number}"
        env = _venv(venv)
        # `make dist` makes its own .venv in the clone: point it at this one.
        command = line.replace("make dist", f"make dist VENV={venv}")
        done = subprocess.run(
            ["bash", "-c", command], cwd=clone, env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
        assert _version_in(venv, tmp_path) == f"agentgraph {agentgraph.__version__}"

    # From anywhere else, the clone's folder named in a direct reference.
    venv = tmp_path / "venv-url"
    env = _venv(venv)
    line = f"pip install 'agentgraph-engine[web] @ file://{clone}'"
    readme = (ROOT / "README.md").read_text()
    assert "pip install 'agentgraph-engine[web] @ file:///path/to/agentgraph'" in readme
    done = subprocess.run(
        ["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
    found = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import starlette, agentgraph.web"], cwd=tmp_path
    )
    assert found.returncode == 0


def test_the_readme_says_the_distribution_is_not_published_yet():
    for page in (ROOT / "README.md", ROOT / "docs" / "get-started.md", ROOT / "docs" / "index.md"):
        text = page.read_text()
        assert "`agentgraph-engine` is not on PyPI yet" in text, page
        assert "Once it is published, `pip install agentgraph-engine` will be the line" in text or (
            "once it is, `pip install agentgraph-engine` will be the line" in text
        ), page


@pytest.mark.timeout(600)
def test_the_sdist_and_wheel_carry_the_licence_and_the_package_readme(tmp_path):
    pytest.importorskip("build", reason="the dev group installs build")
    import tarfile
    import zipfile

    # Both from the source tree, then the wheel again from the sdist: it must be enough to build.
    _run([sys.executable, "-m", "build", "--outdir", str(tmp_path / "dist"), str(ROOT)])
    (sdist,) = (tmp_path / "dist").glob("*.tar.gz")
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    with tarfile.open(sdist) as tar:
        names = [n.split("/", 1)[1] for n in tar.getnames() if "/" in n]
    assert "LICENSE" in names
    assert not [n for n in names if n.startswith(("benchmarks/", "site/")) or n.endswith(".png")]
    assert not [n for n in names if "node_modules" in n]
    with zipfile.ZipFile(wheel) as whl:
        info = f"agentgraph_engine-{agentgraph.__version__}.dist-info"
        assert "MIT License" in whl.read(f"{info}/licenses/LICENSE").decode()
        metadata = whl.read(f"{info}/METADATA").decode()
    assert "License-Expression: MIT" in metadata
    assert "Classifier: Typing :: Typed" in metadata
    assert "Provides-Extra: dev" not in metadata
    assert "Provides-Extra: bench" not in metadata
    description = metadata.split("\n\n", 1)[1]
    # Shown on an index, where the repository's relative links lead nowhere.
    assert re.findall(r"\]\((?!https?://)[^)]*\)", description) == []
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")

"""The offline demos write nothing to the home folder: a fresh home stays empty.

Each demo runs in a process of its own with `HOME` pointed at an empty folder
and the XDG folders unset, so that anything written to `~` (caches, settings,
tokens) would land in it.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("demo", "printed"),
    [
        ("quickstart.py", "settled at 2 after 3 halvings"),  # make quickstart
        ("calculator_agent.py", "answer: The hypotenuse is 5."),
        ("react_agent.py", "answer: The hypotenuse is 5."),  # make demo, on its offline model
    ],
)
def test_a_demo_leaves_a_fresh_home_folder_empty(demo, printed, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    keep = ("PATH", "LANG", "LC_ALL", "TMPDIR", "PYTHONPATH")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env |= {"HOME": str(home), "OLLAMA_HOST": "http://127.0.0.1:9"}  # nothing listens there
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / demo)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=100,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert printed in done.stdout
    assert sorted(p.relative_to(home).as_posix() for p in home.rglob("*")) == []

"""The npm packages the protocol tests drive, installed by `make test` into tests/js/node_modules.

Tests never fetch them: without Node or the installed packages a test is
skipped and says why, and in CI (`CI` set) that is a failure.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

JS = Path(__file__).with_name("js")
MODULES = JS / "node_modules"


def need_npm_package(name: str) -> tuple[str, Path]:
    """`node` and the folder of the installed package `name`, or a skip (a failure in CI)."""
    node = shutil.which("node")
    folder = MODULES / name
    if node is None:
        reason = "node is not installed: install Node.js 20 or later (Debian package nodejs)"
    elif not (folder / "package.json").exists():
        reason = f"the npm package {name} is not installed in {MODULES}: `make js` (npm ci) does it"
    else:
        return node, folder
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)

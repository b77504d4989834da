"""Where the package's private modules were before they were grouped into packages.

Pickles name a class or function by the module that defined it, and records
written by earlier releases name some classes by `module:qualname`. The root
of the package once held every private module (`agentgraph._context`,
`agentgraph._errors_root`, ...); they now live in `_core/`, `_util/` and
`_cli/`. The old names, listed here as they were, keep importing the module
that is now elsewhere, so those pickles and records still load; and stored
names keep the old paths, so records written now load in older releases.
"""

from __future__ import annotations

import importlib
import sys
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from importlib.abc import Loader

__all__ = ("MOVED", "former_name", "install")

MOVED: dict[str, str] = {
    "agentgraph._checks": "agentgraph._core._checks",
    "agentgraph._cli_eval": "agentgraph._cli._eval",
    "agentgraph._cli_load": "agentgraph._cli._load",
    "agentgraph._cli_mcp": "agentgraph._cli._mcp",
    "agentgraph._cli_runs": "agentgraph._cli._runs",
    "agentgraph._cli_server": "agentgraph._cli._server",
    "agentgraph._clip": "agentgraph._util._clip",
    "agentgraph._context": "agentgraph._core._context",
    "agentgraph._dispatch": "agentgraph._core._dispatch",
    "agentgraph._effect_kinds": "agentgraph._core._effect_kinds",
    "agentgraph._effects": "agentgraph._core._effects",
    "agentgraph._errors": "agentgraph._core._errors",
    "agentgraph._errors_guards": "agentgraph._core._errors_guards",
    "agentgraph._errors_provider": "agentgraph._core._errors_provider",
    "agentgraph._errors_root": "agentgraph._core._errors_root",
    "agentgraph._errors_run": "agentgraph._core._errors_run",
    "agentgraph._errors_threads": "agentgraph._core._errors_threads",
    "agentgraph._errors_toolkit": "agentgraph._core._errors_toolkit",
    "agentgraph._events": "agentgraph._core._events",
    "agentgraph._extras": "agentgraph._util._extras",
    "agentgraph._failure": "agentgraph._core._failure",
    "agentgraph._gate": "agentgraph._core._gate",
    "agentgraph._graph": "agentgraph._core._graph",
    "agentgraph._input": "agentgraph._util._input",
    "agentgraph._journal": "agentgraph._core._journal",
    "agentgraph._json": "agentgraph._core._json",
    "agentgraph._json_decode": "agentgraph._core._json_decode",
    "agentgraph._json_types": "agentgraph._core._json_types",
    "agentgraph._layer_events": "agentgraph._core._layer_events",
    "agentgraph._layer_journal": "agentgraph._core._layer_journal",
    "agentgraph._layer_limits": "agentgraph._core._layer_limits",
    "agentgraph._layers": "agentgraph._core._layers",
    "agentgraph._limits": "agentgraph._util._limits",
    "agentgraph._node": "agentgraph._core._node",
    "agentgraph._pg": "agentgraph._util._pg",
    "agentgraph._public": "agentgraph._util._public",
    "agentgraph._recovery": "agentgraph._core._recovery",
    "agentgraph._redact": "agentgraph._util._redact",
    "agentgraph._retry": "agentgraph._core._retry",
    "agentgraph._run_state": "agentgraph._core._run_state",
    "agentgraph._runner": "agentgraph._core._runner",
    "agentgraph._runner_checks": "agentgraph._core._runner_checks",
    "agentgraph._runner_drive": "agentgraph._core._runner_drive",
    "agentgraph._runtime": "agentgraph._core._runtime",
    "agentgraph._serving": "agentgraph._util._serving",
    "agentgraph._tool_effect": "agentgraph._util._tool_effect",
    "agentgraph._usage": "agentgraph._core._usage",
    "agentgraph._versions": "agentgraph._core._versions",
    "agentgraph._work_events": "agentgraph._core._work_events",
    "agentgraph._writers": "agentgraph._util._writers",
    "agentgraph.testing._replies": "agentgraph.llm._replies",
    "agentgraph.testing._schema_example": "agentgraph.llm._schema_example",
    "agentgraph.testing._scripted": "agentgraph.llm._scripted",
}
"""Old module -> where it is now."""

_FORMER = {new: old for old, new in MOVED.items()}


def former_name(module: str) -> str:
    """The name `module` had in earlier releases (itself when it never moved)."""
    return _FORMER.get(module, module)


class _Alias:
    """Loads an old name as the module now elsewhere (the same module object)."""

    def __init__(self, target: str) -> None:
        self._target = target
        self._spec: ModuleSpec | None = None

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        module = importlib.import_module(self._target)
        self._spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The module ran under its own name, and the import system has just handed it
        # the old name's spec: its own goes back, so it keeps resolving its relative
        # imports from where it is.
        module.__spec__ = self._spec


class _Finder:
    """Finds the old names in `MOVED`, and nothing else."""

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> ModuleSpec | None:
        moved = MOVED.get(fullname)
        if moved is None:
            return None
        return ModuleSpec(fullname, cast("Loader", _Alias(moved)))


def install() -> None:
    """Make the old names import (idempotent: one finder however often it is called)."""
    if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.append(_Finder())

"""The layer rule of the design contract, read from the imports themselves.

See `tests/layering.py` for the layers and how imports are read.
"""

import shutil
from pathlib import Path

import agentgraph
from tests import layering

ROOT = Path(agentgraph.__file__).parent


def test_every_module_has_a_layer():
    for module in layering.modules(ROOT):
        layering.home(module)  # raises for a module in no layer


def test_a_module_imports_only_from_its_own_layer_or_below():
    assert layering.layer_breaches(layering.imports(ROOT)) == []


def test_the_engine_imports_no_feature_not_even_lazily_or_for_types():
    assert layering.engine_features(layering.imports(ROOT)) == []


def test_no_import_cycle_joins_two_packages():
    found = layering.imports(ROOT)
    assert layering.cross_package_cycles(found, layering.packages(ROOT)) == []


def _copy(tmp_path: Path) -> Path:
    copy = tmp_path / "agentgraph"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def _append(path: Path, code: str) -> None:
    path.write_text(path.read_text() + code)


def test_a_feature_imported_inside_an_engine_function_is_caught(tmp_path):
    copy = _copy(tmp_path)
    _append(
        copy / "_core" / "_runtime.py",
        "\n\ndef _store():\n    from ..checkpoint import SQLiteStore\n\n    return SQLiteStore\n",
    )
    breaches = layering.engine_features(layering.imports(copy))
    assert breaches == [
        "agentgraph._core._runtime:"
        + str(len((ROOT / "_core" / "_runtime.py").read_text().splitlines()) + 4)
        + " imports the feature agentgraph.checkpoint (lazy)"
    ]
    assert any(
        "agentgraph._core._runtime" in b for b in layering.layer_breaches(layering.imports(copy))
    )


def test_a_type_only_import_of_a_feature_and_importlib_in_the_engine_are_caught(tmp_path):
    copy = _copy(tmp_path)
    _append(
        copy / "_core" / "_graph.py",
        "\nimport importlib\nfrom typing import TYPE_CHECKING\n\n"
        "if TYPE_CHECKING:\n    from ..guards import Guards\n\n"
        "def _load(name: str) -> object:\n    return importlib.import_module(name)\n",
    )
    breaches = layering.engine_features(layering.imports(copy))
    assert [b.split(" ", 1)[1] for b in breaches] == [
        "imports the feature agentgraph.guards (type)",
        "imports ? through importlib",
    ]


def test_an_import_from_a_higher_layer_outside_the_engine_is_caught(tmp_path):
    copy = _copy(tmp_path)
    _append(copy / "tools" / "_tool.py", "\nfrom ..checkpoint import SQLiteStore\n")
    breaches = layering.layer_breaches(layering.imports(copy))
    assert len(breaches) == 1
    assert breaches[0].startswith("agentgraph.tools._tool:")
    assert breaches[0].endswith("imports agentgraph.checkpoint (run), from a higher layer")


def test_a_cycle_across_two_packages_is_caught(tmp_path):
    copy = _copy(tmp_path)
    (copy / "tools" / "_loop.py").write_text("from ..nodes import _loop_back\n")
    (copy / "nodes" / "_loop_back.py").write_text(
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from ..tools import _loop\n"
    )
    cycles = layering.cross_package_cycles(layering.imports(copy), layering.packages(copy))
    assert cycles == [["agentgraph.nodes._loop_back", "agentgraph.tools._loop"]]


def test_a_module_in_no_layer_is_named(tmp_path):
    copy = _copy(tmp_path)
    (copy / "_stray.py").write_text("")
    try:
        for module in layering.modules(copy):
            layering.home(module)
    except LookupError as error:
        assert "agentgraph._stray is in no layer" in str(error)
    else:
        raise AssertionError("a module in no layer passed")

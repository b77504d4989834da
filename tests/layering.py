"""The package's import structure, read from its source with `ast`, and the rules it keeps.

The layers are those of the design contract (bottom first); a module imports only
from its own layer or below, counting every kind of import: at the top of a module,
inside a function (loaded on first use), and under `TYPE_CHECKING`. The engine (the
run loop, its effects and layers, and the errors, data and events they work with)
imports no feature at all, and no import cycle joins modules of two packages.

One allowance, inside the engine only: a module may name a type of a higher layer of
the engine in an annotation (an error's `context` is an `AgentContext`, a node's `run`
takes the `Runtime`), or load one inside a function (`RunBusy` carries an empty
context); at import time engine modules load only downwards. The engine is one
package, so this makes no cycle between packages.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import attrs

# Bottom first. A name is a module or a package; a module belongs to the longest one
# that is a prefix of its dotted name. Where this order differs from the design's
# drawing, the code's own dependencies decide: structured output describes tools with
# the model layer's `ToolSpec` (so `llm/` is below `structured/`), and `_json` encodes
# contexts and histories (so it sits with `_context`).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("agentgraph._util",),  # helpers every layer may use
    (
        "agentgraph._core._errors",
        "agentgraph._core._errors_guards",
        "agentgraph._core._errors_provider",
        "agentgraph._core._errors_root",
        "agentgraph._core._errors_run",
        "agentgraph._core._errors_threads",
        "agentgraph._core._errors_toolkit",
    ),
    ("agentgraph._core._retry",),
    ("agentgraph.llm",),
    (
        "agentgraph._core._context",
        "agentgraph._core._json",
        "agentgraph._core._json_decode",
        "agentgraph._core._json_types",
    ),
    ("agentgraph.structured",),
    (
        "agentgraph._core._checks",
        "agentgraph._core._dispatch",
        "agentgraph._core._effect_kinds",
        "agentgraph._core._events",
        "agentgraph._core._failure",
        "agentgraph._core._graph",
        "agentgraph._core._journal",
        "agentgraph._core._mermaid",
        "agentgraph._core._node",
        "agentgraph._core._usage",
        "agentgraph._core._versions",
        "agentgraph._core._work_events",
    ),
    (
        "agentgraph._core._effects",
        "agentgraph._core._gate",
        "agentgraph._core._layer_events",
        "agentgraph._core._layer_journal",
        "agentgraph._core._layer_limits",
        "agentgraph._core._layers",
        "agentgraph._core._recovery",
        "agentgraph._core._run_state",
        "agentgraph._core._runner",
        "agentgraph._core._runner_checks",
        "agentgraph._core._runner_drive",
        "agentgraph._core._runtime",
        "agentgraph._core",
    ),
    (
        "agentgraph.guards",
        "agentgraph.nodes",
        "agentgraph.rag",
        "agentgraph.teams",
        "agentgraph.tools",
    ),
    ("agentgraph.checkpoint", "agentgraph.tracing"),
    ("agentgraph.memory",),
    ("agentgraph.evals",),
    (
        "agentgraph.a2a",
        "agentgraph.mcp",
        "agentgraph.ray",
        "agentgraph.temporal",
        "agentgraph.testing",
        "agentgraph.web",
    ),
    ("agentgraph.server",),
    ("agentgraph.__main__", "agentgraph._cli"),
)

ENGINE: frozenset[str] = frozenset(
    name for layer in LAYERS for name in layer if name.startswith("agentgraph._core")
)
"""The engine: graph, node, context, runner, runtime, layers, events, errors and their data."""

FEATURES: tuple[str, ...] = (
    "agentgraph.a2a",
    "agentgraph.checkpoint",
    "agentgraph.evals",
    "agentgraph.guards",
    "agentgraph.mcp",
    "agentgraph.memory",
    "agentgraph.ray",
    "agentgraph.teams",
    "agentgraph.temporal",
    "agentgraph.tools",
    "agentgraph.tracing",
    "agentgraph.web",
)
"""What plugs into the engine (as layers, journals, sinks) and what the engine never imports."""

FACADES: frozenset[str] = frozenset({"agentgraph"})
"""The public facade re-exports everything, loading most of it on first use: no layer."""


@attrs.frozen
class Import:
    """`source` imports `target`: at the top (`run`), in a function (`lazy`), for types
    (`type`), or through `importlib` (`dynamic`, target unknown unless a literal)."""

    source: str
    target: str
    kind: str
    line: int


def modules(root: Path) -> dict[str, Path]:
    """Every module under the package directory `root`, by dotted name."""
    found: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(root: Path) -> list[Import]:
    """Every import of an `agentgraph` module by a module under `root`."""
    found = modules(root)
    out: list[Import] = []
    for name, path in found.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        out.extend(_imports_in(name, package, ast.parse(path.read_text()), found))
    return out


def _imports_in(
    name: str, package: str, tree: ast.Module, known: Mapping[str, Path]
) -> Iterator[Import]:
    for node, kind in _walk(tree.body, "run"):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                target = full if full in known else base
                if target.startswith("agentgraph"):
                    yield Import(name, target, kind, node.lineno)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("agentgraph"):
                    yield Import(name, alias.name, kind, node.lineno)
        elif isinstance(node, ast.Call) and _is_import_module(node):
            arg = node.args[0] if node.args else None
            literal = isinstance(arg, ast.Constant) and isinstance(arg.value, str)
            target = arg.value if literal else "?"  # type: ignore[union-attr]
            if not literal or target.startswith(("agentgraph", ".")):
                yield Import(name, target, "dynamic", node.lineno)


def _is_import_module(call: ast.Call) -> bool:
    func = call.func
    named = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return named in ("import_module", "__import__")


def _walk(body: list[ast.stmt], kind: str) -> Iterator[tuple[ast.AST, str]]:
    """Every node under `body`, with the kind an import there would be."""
    for stmt in body:
        if isinstance(stmt, ast.If) and _is_type_checking(stmt.test):
            for node in stmt.body:
                yield from ((n, "type") for n in ast.walk(node))
            yield from _walk(stmt.orelse, kind)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield from ((n, "lazy") for n in ast.walk(stmt))
        elif isinstance(stmt, ast.ClassDef):
            yield stmt, kind
            yield from _walk(stmt.body, kind)
        else:
            yield from ((n, kind) for n in ast.walk(stmt))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def home(module: str) -> str | None:
    """The entry of `LAYERS` that holds `module`, or None for a facade."""
    if module in FACADES:
        return None
    best = ""
    for layer in LAYERS:
        for name in layer:
            if (module == name or module.startswith(name + ".")) and len(name) > len(best):
                best = name
    if not best:
        raise LookupError(f"{module} is in no layer: add it to LAYERS")
    return best


def level(module: str) -> int:
    entry = home(module)
    return next(i for i, layer in enumerate(LAYERS) if entry in layer)


def layer_breaches(found: list[Import]) -> list[str]:
    """Imports of a module of a higher layer, each as a line that names it."""
    breaches = []
    for imp in found:
        if imp.kind == "dynamic" or home(imp.source) is None or home(imp.target) is None:
            continue
        if level(imp.target) <= level(imp.source):
            continue
        inside = home(imp.source) in ENGINE and home(imp.target) in ENGINE
        if inside and imp.kind in ("type", "lazy"):
            continue
        breaches.append(
            f"{imp.source}:{imp.line} imports {imp.target} ({imp.kind}), from a higher layer"
        )
    return breaches


def engine_features(found: list[Import]) -> list[str]:
    """Imports of a feature by the engine, of any kind, and dynamic imports there."""
    breaches = []
    for imp in found:
        if home(imp.source) not in ENGINE:
            continue
        if imp.kind == "dynamic":
            breaches.append(f"{imp.source}:{imp.line} imports {imp.target} through importlib")
        elif imp.target.startswith(tuple(f + "." for f in FEATURES)) or imp.target in FEATURES:
            breaches.append(
                f"{imp.source}:{imp.line} imports the feature {imp.target} ({imp.kind})"
            )
    return breaches


def packages(root: Path) -> frozenset[str]:
    """The packages under the package directory `root`, by dotted name."""
    return frozenset(name for name, path in modules(root).items() if path.name == "__init__.py")


def cross_package_cycles(found: list[Import], packages: frozenset[str]) -> list[list[str]]:
    """The import cycles (strongly connected modules) that hold modules of two packages."""

    def package_of(module: str) -> str:
        return module if module in packages else module.rpartition(".")[0]

    graph: dict[str, set[str]] = {}
    for imp in found:
        if imp.kind != "dynamic" and imp.source not in FACADES:
            graph.setdefault(imp.source, set()).add(imp.target)
            graph.setdefault(imp.target, set())
    return [sorted(c) for c in _components(graph) if len({package_of(m) for m in c}) > 1]


def _components(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one member, iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        out.append(component)
    return out

"""Engine and durability cost per step of this tree beside an earlier revision, in one run.

The earlier revision is checked out into a temporary git worktree, and each case of
``engine_overhead.py`` and ``durability.py`` (and, with ``--effects``, of
``effects.py``: a model call, a stream, tools, guards and a SQLite journal per step)
that measures agentgraph runs in a fresh interpreter against one tree or the other
(``PYTHONPATH`` picks the package), the two trees taking turns so that load on the
machine falls on both alike. The benchmark scripts are this tree's, so both trees run
the same workload. Each row gives the best of the rounds (the run least disturbed by
other load) and the spread of the rounds (slowest over best).

Usage::

    python benchmarks/before_after.py --before 4c5ab3e            # writes its section
    python benchmarks/before_after.py --before 4c5ab3e --quick    # prints only
    python benchmarks/before_after.py --before 77d92f5 --effects --rounds 11 \
        --title "Layers" --change "effects branch at their top"   # the effects' costs
    python benchmarks/before_after.py --before 9e24bac --title "Performance round 2" \
        --change "engine bookkeeping cut"                         # a section of its own
"""

import argparse
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from _common import ChildFailed, load_average, publish, run_child

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ENGINE = ("agentgraph:linear", "agentgraph:loop", "agentgraph:concurrent")
DURABLE = ("agentgraph:memory", "agentgraph:sqlite")
SINKS = ("sink:nothing", "sink:noop", "sink:jsonl", "sink:recorder")
"""Event-loop CPU a sink adds per step of the 10-node chain (``overheads.py``)."""
WEB = ("plain", "sink", "server:1", "server:50")
EFFECTS = ("plain", "model", "stream", "tools", "guarded", "sqlite")
"""µs per step of a 400-step loop whose every step makes one effect (``effects.py``)."""
"""µs per step of the 2,000-step state loop, unserved and served (``web.py``)."""


@contextmanager
def checkout(revision: str) -> Iterator[Path]:
    """`revision` of this repository in a temporary worktree, removed afterwards."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tree"
        git = ["git", "-C", str(ROOT)]
        subprocess.run(
            [*git, "worktree", "add", "--detach", "--quiet", str(path), revision], check=True
        )
        try:
            yield path
        finally:
            subprocess.run([*git, "worktree", "remove", "--force", str(path)], check=False)


def measure(script: str, case: str, tree: Path, *, quick: bool) -> dict[str, Any]:
    """One case against the package in `tree`, in a fresh interpreter."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    args = ["--case", case, *(["--quick"] if quick else [])]
    previous = os.environ.copy()
    os.environ.clear()
    os.environ.update(env)
    try:
        result: dict[str, Any] = run_child(HERE / script, *args, timeout=1800)
    finally:
        os.environ.clear()
        os.environ.update(previous)
    return result


def figure(script: str, result: dict[str, Any]) -> float:
    """The per-step figure a case reports: µs per step, or µs a store adds per step."""
    if script == "durability.py":
        return float(result["added_us"])
    return float(result.get("us_per_step") or result["median_us"])


def _spread(samples: list[float]) -> str:
    """How far the slowest round was from the best: `1.00x` when every round agreed."""
    return f"{max(samples) / min(samples):.2f}x" if min(samples) > 0 else "n/a"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--before", required=True, help="the earlier git revision")
    parser.add_argument("--rounds", type=int, default=3, help="turns each tree takes per case")
    parser.add_argument("--quick", action="store_true", help="fewer runs; prints only")
    parser.add_argument(
        "--title", default="One loop", help="the section: '<title>: before and after'"
    )
    parser.add_argument(
        "--more", action="store_true", help="also the sinks' and the web server's costs"
    )
    parser.add_argument(
        "--effects", action="store_true", help="also the effects' costs (effects.py)"
    )
    parser.add_argument("--only-effects", action="store_true", help="the effects' costs alone")
    parser.add_argument(
        "--change",
        default="two graph loops; this tree has one loop with a journal hook",
        help="what the earlier revision lacks, as the section says it",
    )
    args = parser.parse_args(argv)
    cases = [("engine_overhead.py", c) for c in ENGINE] + [("durability.py", c) for c in DURABLE]
    if args.only_effects:
        cases = []
    if args.effects or args.only_effects:
        cases += [("effects.py", c) for c in EFFECTS]
    if args.more:
        cases += [("overheads.py", c) for c in SINKS] + [("web.py", c) for c in WEB]
    rows: list[str] = []
    load = load_average()
    with checkout(args.before) as before:
        for script, case in cases:
            samples: dict[str, list[float]] = {"before": [], "after": []}
            try:
                for _ in range(args.rounds):
                    for label, tree in (("before", before), ("after", ROOT)):
                        result = measure(script, case, tree, quick=args.quick)
                        samples[label].append(figure(script, result))
            except (ChildFailed, KeyError) as exc:
                rows.append(f"| {case} | failed: {exc} | | | |")
                continue
            old, new = min(samples["before"]), min(samples["after"])
            what = {"durability.py": "store adds", "overheads.py": "loop CPU added"}.get(
                script, "web step" if script == "web.py" else "step"
            )
            spread = f"{_spread(samples['before'])} / {_spread(samples['after'])}"
            rows.append(
                f"| {case} ({what}) | {old:.2f} | {new:.2f} | {new / old:.2f}x | {spread} |"
            )
    section = "\n".join(
        [
            f"## {args.title}: before and after",
            "",
            f"Revision `{args.before}` ({args.change}) against this tree, "
            f"measured in one run: each case in a fresh interpreter, the trees "
            f"taking turns, {args.rounds} turns each, the best shown with the spread "
            f"(slowest over best) of each tree. Engine rows are µs per "
            f"step with no store; durability rows are the µs a store adds per step of the "
            f"1,001-step loop"
            + (
                "; sink rows the event loop's CPU a sink adds per step of the 10-node chain; "
                "web rows µs per step of the 2,000-step loop that changes its state every "
                "step, with no server, with the web sink alone, and served to 1 and 50 clients"
                if args.more
                else ""
            )
            + f". Load average {load:.1f} → {load_average():.1f}; "
            f"Python {sys.version.split()[0]}.",
            "",
            "| case | before µs | after µs | after/before | spread before / after |",
            "|---|---|---|---|---|",
            *rows,
            "",
        ]
    )
    publish(section, output=None, quick=args.quick)


if __name__ == "__main__":
    main()

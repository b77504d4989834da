"""`agentgraph eval`: score a graph on a dataset and gate CI on the result.

```
agentgraph eval app.agents:graph cases.jsonl --evaluators app.evals:EVALUATORS \\
    --repeat 3 --threshold pass@1=0.9 --baseline report.json --report new.json --junit eval.xml
```

The dataset is a `.jsonl` or `.yaml` file (`Dataset.save`), or a pydantic-evals
file with `--pydantic-evals`. `--evaluators` names a list of evaluators (or one);
without it (and without evaluators in the dataset), each output is compared with its
case's `expected` value (`EqualsExpected`), and a dataset with neither is refused.
The exit status is 0 when every threshold holds and nothing fell below the
baseline, 1 when the gate fails (each reason on standard error), and 2 for a
problem with the command itself.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any, TextIO

import anyio

from .._core._errors import DatasetError
from .._core._json import Types
from .._core._runner import GraphRunner
from .._util._redact import masked
from ._load import CommandError, _import, _model, load_node

__all__ = ("add_eval_command",)


def _threshold(text: str) -> tuple[str, float]:
    name, sep, value = text.partition("=")
    try:
        if not sep or not name:
            raise ValueError
        return name.strip(), float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=NUMBER (e.g. pass@1=0.9)") from None


def add_eval_command(commands: Any, positive: Any) -> None:
    """Add the `eval` subcommand to the command line's subparsers."""
    cmd = commands.add_parser("eval", help="score a graph on a dataset; fail on a regression")
    cmd.add_argument(
        "target", help="module:attribute naming a Graph or node, or a function making one"
    )
    cmd.add_argument("dataset", help="cases: .jsonl or .yaml (or a pydantic-evals file)")
    cmd.add_argument("--evaluators", help="module:attribute naming a list of evaluators")
    cmd.add_argument("--model", help="provider:name, passed to a factory's `model` parameter")
    cmd.add_argument("--repeat", type=positive, default=1, help="runs per case (default 1)")
    cmd.add_argument("--concurrency", type=positive, default=8, help="runs at once (default 8)")
    cmd.add_argument(
        "--threshold",
        type=_threshold,
        action="append",
        default=[],
        help="NAME=NUMBER: a score's mean (or pass@k, pass^k) must reach it",
    )
    cmd.add_argument("--baseline", help="a report JSON: no mean may fall below its own")
    cmd.add_argument("--tolerance", type=float, default=0.0, help="allowed drop below baseline")
    cmd.add_argument("--report", help="write the report as JSON here")
    cmd.add_argument("--junit", help="write the report as JUnit XML here")
    cmd.add_argument(
        "--pydantic-evals", action="store_true", help="the dataset is a pydantic-evals file"
    )
    cmd.add_argument("--max-steps", type=positive, default=1000, help="step cap (default 1000)")
    cmd.add_argument("--plain", action="store_true", help="plain text, even with rich installed")
    cmd.set_defaults(handler=_eval)


def _evaluators(target: str | None) -> Sequence[Any]:
    if target is None:
        return ()
    module, sep, attribute = target.rpartition(":")
    if not sep or not module or not attribute:
        raise CommandError(f"{target!r} is not module:attribute (e.g. app.evals:EVALUATORS)")
    try:
        value = _import(module)
        for part in attribute.split("."):
            value = getattr(value, part)
    except CommandError:
        raise
    except (Exception, SystemExit) as exc:
        raise CommandError(f"cannot load evaluators {target}: {type(exc).__name__}: {exc}") from exc
    if isinstance(value, list | tuple):
        return tuple(value)
    if callable(value) or hasattr(value, "evaluate"):
        return (value,)
    raise CommandError(f"{target} is a {type(value).__name__}, not a list of evaluators")


def _or_equals_expected(evaluators: Sequence[Any], dataset: Any, out: TextIO) -> Sequence[Any]:
    """With no evaluator anywhere, compare with `expected`; with nothing to compare, refuse."""
    if evaluators or dataset.evaluators or any(case.evaluators for case in dataset.cases):
        return evaluators
    if any(case.expected is not None for case in dataset.cases):
        from ..evals import EqualsExpected

        out.write("no --evaluators: each output is compared with its case's expected value ")
        out.write("(EqualsExpected)\n")
        return (EqualsExpected(),)
    raise CommandError(
        "nothing to score: the cases have no `expected` value and there are no evaluators; "
        "give --evaluators module:attribute (a list of evaluators), or an `expected` per case"
    )


def _eval(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ..evals import (
        Dataset,
        Report,
        check,
        compare,
        evaluate,
        read_pydantic_evals,
        render_report,
        write_junit,
    )

    graph = load_node(args.target, _model(args.model))  # a node runs as evaluate() runs it
    evaluators = _evaluators(args.evaluators)
    types = Types().with_types(*graph.data_types())
    try:
        if args.pydantic_evals:
            dataset = read_pydantic_evals(args.dataset, types=types)
        else:
            dataset = Dataset.load(args.dataset, types=types)
        baseline = Report.load(args.baseline) if args.baseline else None
    except (DatasetError, ImportError) as exc:
        raise CommandError(str(exc)) from exc
    evaluators = _or_equals_expected(evaluators, dataset, out)
    runner = GraphRunner(max_steps=args.max_steps)
    report = anyio.run(
        lambda: evaluate(
            graph,
            dataset,
            evaluators,
            repeat=args.repeat,
            concurrency=args.concurrency,
            runner=runner,
        )
    )
    render_report(report, out, style="plain" if args.plain else "auto")
    try:
        if args.report:
            report.save(args.report)
        if args.junit:
            write_junit(report, args.junit)
    except OSError as exc:
        raise CommandError(f"cannot write the report: {exc.strerror or exc}") from exc
    if baseline is not None:
        out.write(f"\ncompared with {args.baseline}:\n")
        compare(baseline, report).render(out)
    problems = check(
        report, thresholds=dict(args.threshold), baseline=baseline, tolerance=args.tolerance
    )
    for problem in problems:
        err.write(f"agentgraph: eval: {masked(problem)}\n")
    return 1 if problems else 0

"""Score the calculator `react_agent` on generated arithmetic questions, on Ray, offline.

The scripted model plays an LLM that uses the `calculate` tool for sums,
differences and products but answers divisions in its head, rounded to a
whole number, so some answers are wrong and the score means something.
Ray starts on this machine (loopback only); each actor imports `agent` from
this file (`batch_eval:agent`). The questions are an `agentgraph.evals`
dataset and the runs are scored by its evaluator (`right_number`) through
`score_runs`, as `evaluate` scores runs made in this process (`--local`
runs them here, without Ray). Results go to a JSON-lines file, one line per
question, and the summary is printed: accuracy, p50/p95 latency, tokens.

    python examples/batch_eval.py [--questions 1000] [--actors 2] [--out results.jsonl] [--local]
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
import orjson

from agentgraph import AgentContext
from agentgraph.evals import Case, Dataset, Outcome, Report, Score, evaluate, score_runs
from agentgraph.llm import ChatRequest
from agentgraph.nodes import react_agent
from agentgraph.testing import ScriptedModel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from calculator_agent import SYSTEM_PROMPT, TOOLS

OPS = {"+": "add", "-": "sub", "*": "mul", "/": "div"}
QUESTION = re.compile(r"What is (-?\d+) ([-+*/]) (-?\d+)\?")


def reply(request: ChatRequest) -> object:
    """The scripted model: one tool call for + - *, a rounded guess for /, then the answer."""
    last = request.messages[-1]
    if last.role == "tool":
        return f"The answer is {float(last.content or 'nan'):g}."
    match = QUESTION.fullmatch(last.content or "")
    if match is None:
        return "I cannot read that question."
    a, op, b = int(match[1]), match[2], int(match[3])
    if op == "/":
        return f"The answer is {round(a / b)}."
    return ScriptedModel.tool_call("calculate", op=OPS[op], a=a, b=b)


agent = react_agent(
    ScriptedModel(reply, repeat=True, name="scripted-arithmetic"),
    TOOLS,
    system_prompt=SYSTEM_PROMPT,
    max_turns=3,
)


def questions(count: int, seed: int = 12) -> Dataset:
    """`count` questions and their answers, the same for the same seed."""
    rng = random.Random(seed)
    cases = []
    for number in range(count):
        a, b, op = rng.randint(1, 99), rng.randint(1, 99), rng.choice("+-*/")
        answer = {"+": a + b, "-": a - b, "*": a * b, "/": a / b}[op]
        cases.append(Case(f"q{number}", f"What is {a} {op} {b}?", expected=float(answer)))
    return Dataset(cases, name="batch_eval")


def right_number(outcome: Outcome) -> Score:
    """The first number in the answer is the expected one."""
    expected = outcome.case.expected
    number = re.search(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", outcome.output or "")
    ok = number is not None and abs(float(number[0]) - expected) < 1e-6 * max(1, abs(expected))
    return Score.of("right_number", ok)


def on_ray(dataset: Dataset, args: argparse.Namespace) -> Report:
    """Run every question on Ray, then score the rows as `evaluate` would have."""
    from agentgraph.ray import run_batch

    rows = run_batch(
        "batch_eval:agent",
        [case.input for case in dataset],
        actors=args.actors,
        concurrency=64,
        address=args.address,
        progress=not args.no_progress,
        ray_remote_args={"num_cpus": 0.5},
    )
    outcomes = [
        Outcome(
            case,
            AgentContext(row.output, usage=row.usage) if row.status == "finished" else None,
            usage=row.usage,
            duration=row.seconds,
            error=None if row.status == "finished" else f"{row.error_type}: {row.error}",
            run_id=row.run_id,
        )
        for case, row in zip(dataset, rows, strict=True)
    ]
    return anyio.run(lambda: score_runs(outcomes, [right_number], name=dataset.name))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--actors", type=int, default=2)
    parser.add_argument(
        "--out", type=Path, default=Path(tempfile.gettempdir()) / "batch_eval.jsonl"
    )
    parser.add_argument("--address", help="a Ray cluster to join (default: start Ray here)")
    parser.add_argument("--local", action="store_true", help="run here with evaluate(), no Ray")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args()

    dataset = questions(args.questions)
    started = time.perf_counter()
    if args.local:
        report = anyio.run(
            lambda: evaluate(agent, dataset, [right_number], concurrency=64, progress=False)
        )
    else:
        report = on_ray(dataset, args)
    elapsed = time.perf_counter() - started

    results = report.results
    with args.out.open("wb") as out:
        for case, result in zip(dataset, results, strict=True):
            record = {
                "question": case.input,
                "expected": case.expected,
                "answer": result.output,
                "correct": result.error is None and result.passed,
                "status": "finished" if result.error is None else "failed",
                "error": result.error,
                "seconds": result.duration,
                "tokens": result.usage.total_tokens,
                "run_id": result.run_id,
            }
            out.write(orjson.dumps(record) + b"\n")

    right = sum(r.error is None and r.passed for r in results)
    latencies = sorted(r.duration * 1000 for r in results)
    cuts = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else latencies * 99
    failed = sum(r.error is not None for r in results)
    where = "here" if args.local else f"on {args.actors} actors"
    print(f"questions: {len(results)} {where} in {elapsed:.1f} s, {failed} failed")
    print(f"accuracy: {right / len(results):.1%} ({right} of {len(results)})")
    print(f"latency per run: p50 {cuts[49]:.1f} ms, p95 {cuts[94]:.1f} ms")
    print(f"tokens: {report.usage.total_tokens}")
    print(f"results: {args.out}")


if __name__ == "__main__":
    main()

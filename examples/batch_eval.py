"""Score the calculator `react_agent` on generated arithmetic questions, on Ray, offline.

The scripted model plays an LLM that uses the `calculate` tool for sums,
differences and products but answers divisions in its head, rounded to a
whole number, so some answers are wrong and the score means something.
Ray starts on this machine (loopback only); each actor imports `agent` from
this file (`batch_eval:agent`). Results go to a JSON-lines file, one line per
question, and the summary is printed: accuracy, p50/p95 latency, tokens.

    python examples/batch_eval.py [--questions 1000] [--actors 2] [--out results.jsonl]
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

import orjson

from agentgraph.llm import ChatRequest
from agentgraph.nodes import react_agent
from agentgraph.ray import BatchRow, run_batch
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


def questions(count: int, seed: int = 12) -> list[tuple[str, float]]:
    """`count` questions and their answers, the same for the same seed."""
    rng = random.Random(seed)
    made = []
    for _ in range(count):
        a, b, op = rng.randint(1, 99), rng.randint(1, 99), rng.choice("+-*/")
        answer = {"+": a + b, "-": a - b, "*": a * b, "/": a / b}[op]
        made.append((f"What is {a} {op} {b}?", float(answer)))
    return made


def correct(row: BatchRow, expected: float) -> bool:
    number = re.search(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", row.output or "")
    return number is not None and abs(float(number[0]) - expected) < 1e-6 * max(1, abs(expected))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--actors", type=int, default=2)
    parser.add_argument(
        "--out", type=Path, default=Path(tempfile.gettempdir()) / "batch_eval.jsonl"
    )
    parser.add_argument("--address", help="a Ray cluster to join (default: start Ray here)")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args()

    asked = questions(args.questions)
    started = time.perf_counter()
    rows = run_batch(
        "batch_eval:agent",
        [q for q, _ in asked],
        actors=args.actors,
        concurrency=64,
        address=args.address,
        progress=not args.no_progress,
        ray_remote_args={"num_cpus": 0.5},
    )
    elapsed = time.perf_counter() - started

    right = 0
    with args.out.open("wb") as out:
        for row, (question, expected) in zip(rows, asked, strict=True):
            ok = row.status == "finished" and correct(row, expected)
            right += ok
            record = {
                "question": question,
                "expected": expected,
                "answer": row.output,
                "correct": ok,
                "status": row.status,
                "error": row.error,
                "seconds": row.seconds,
                "tokens": row.usage.total_tokens,
                "run_id": row.run_id,
            }
            out.write(orjson.dumps(record) + b"\n")

    latencies = sorted(r.seconds * 1000 for r in rows)
    cuts = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else latencies * 99
    failed = sum(r.status != "finished" for r in rows)
    print(f"questions: {len(rows)} on {args.actors} actors in {elapsed:.1f} s, {failed} failed")
    print(f"accuracy: {right / len(rows):.1%} ({right} of {len(rows)})")
    print(f"latency per run: p50 {cuts[49]:.1f} ms, p95 {cuts[94]:.1f} ms")
    print(f"tokens: {sum(r.usage.total_tokens for r in rows)}")
    print(f"results: {args.out}")


if __name__ == "__main__":
    main()

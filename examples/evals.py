"""Evaluate the calculator agent on 50 questions, 3 times each, against a baseline, offline.

Two versions of a scripted "LLM" play the agent's model. The baseline
works out divisions in its head (rounded to a whole number, so often wrong)
and uses the `calculate` tool for everything else. The new version uses the
tool for divisions too, but grew careless with large products: every other
time it is asked one, it guesses instead of calling the tool. The scores
show both changes: divisions got better, large products got worse, and
pass@3 versus pass^3 shows the new flakiness.

Every run is scored by deterministic evaluators (the number in the answer,
the tool trajectory, the number of tool calls and model requests) and by an
LLM judge, itself a scripted model here, whose usage is counted apart. The
report is written as JSON and as JUnit XML, compared with the baseline, and
gated: the script says which scores fell below the baseline.

    python examples/evals.py [--out DIR] [--cases 50] [--repeat 3]
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path

import anyio
import orjson

from agentgraph.evals import (
    Case,
    Dataset,
    Judge,
    MaxModelRequests,
    MaxToolCalls,
    Outcome,
    Score,
    Trajectory,
    check,
    compare,
    evaluate,
    render_report,
    write_junit,
)
from agentgraph.llm import ChatRequest
from agentgraph.nodes import react_agent
from agentgraph.testing import ScriptedModel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from calculator_agent import SYSTEM_PROMPT, TOOLS

OPS = {"+": "add", "-": "sub", "*": "mul", "/": "div"}
QUESTION = re.compile(r"What is (-?\d+) ([-+*/]) (-?\d+)\?")
NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def questions(count: int, seed: int = 7) -> Dataset:
    """`count` arithmetic questions with their answers (the same for the same seed)."""
    rng = random.Random(seed)
    cases = []
    for number in range(1, count + 1):
        a, b, op = rng.randint(2, 99), rng.randint(2, 99), rng.choice("+-*/")
        answer = {"+": a + b, "-": a - b, "*": a * b, "/": round(a / b, 4)}[op]
        # The tool trajectory is checked per case: every question needs exactly one call.
        trajectory = Trajectory(["calculate"], order="exact")
        cases.append(
            Case(
                f"q{number:02d} {a} {op} {b}",
                f"What is {a} {op} {b}?",
                expected=answer,
                metadata={"op": OPS[op]},
                evaluators=[trajectory],
            )
        )
    return Dataset(cases, name="arithmetic")


def scripted_llm(version: str) -> ScriptedModel:
    """The agent's model: the baseline or the new version (see the module docstring)."""
    asked: Counter[str] = Counter()

    def reply(request: ChatRequest) -> object:
        last = request.messages[-1]
        if last.role == "tool":
            return f"The answer is {round(float(last.content or 'nan'), 4):g}."
        text = last.content or ""
        match = QUESTION.fullmatch(text)
        if match is None:
            return "I cannot read that question."
        a, op, b = int(match[1]), match[2], int(match[3])
        asked[text] += 1
        if op == "/" and version == "baseline":
            return f"The answer is {round(a / b)}."
        if op == "*" and version == "new" and a * b > 2000 and asked[text] % 2 == 1:
            return f"The answer is {round(a * b, -2)}."  # a guess, to the nearest hundred
        return ScriptedModel.tool_call("calculate", op=OPS[op], a=a, b=b)

    return ScriptedModel(reply, repeat=True, name=f"scripted-{version}")


def agent(version: str) -> object:
    return react_agent(scripted_llm(version), TOOLS, system_prompt=SYSTEM_PROMPT, max_turns=3)


def right_number(outcome: Outcome) -> Score:
    """The number in the answer is the expected one."""
    found = NUMBER.findall(outcome.output or "")
    expected = float(outcome.case.expected)
    ok = bool(found) and abs(float(found[-1]) - expected) < 1e-6 * max(1.0, abs(expected))
    return Score.of("right_number", ok, None if ok else f"said {found[-1:] or 'nothing'}")


def judge_llm() -> ScriptedModel:
    """The judge's model: passes an answer that is one short sentence with the expected number."""

    def grade(request: ChatRequest) -> str:
        prompt = request.messages[-1].content or ""
        output = re.search(r"### Output\n(.*?)\n\n", prompt, re.S)
        expected = re.search(r"### Expected output\n(.*?)\n\n", prompt, re.S)
        said = output[1] if output else ""
        want = float(expected[1]) if expected else float("nan")
        numbers = [float(n) for n in NUMBER.findall(said)]
        right = bool(numbers) and abs(numbers[-1] - want) < 1e-6 * max(1.0, abs(want))
        short = said.count(".") <= 2 and len(said) < 80
        score = 0.5 * right + 0.5 * short
        verdict = {"reason": f"right number: {right}; one short sentence: {short}"}
        return orjson.dumps({**verdict, "score": score, "passed": right and short}).decode()

    return ScriptedModel(grade, repeat=True, name="scripted-judge")


def evaluators() -> list[object]:
    judge = Judge(
        judge_llm(),
        "The answer is one short sentence that states the expected number.",
        include_expected=True,
    )
    return [right_number, MaxToolCalls(1), MaxModelRequests(2), judge]


async def main(out: Path, count: int, repeat: int) -> int:
    dataset = questions(count)
    before = await evaluate(agent("baseline"), dataset, evaluators(), repeat=repeat, progress=False)
    before.save(out / "baseline.json")

    report = await evaluate(agent("new"), dataset, evaluators(), repeat=repeat, progress=False)
    render_report(report, sys.stdout, style="plain")
    report.save(out / "report.json")
    write_junit(report, out / "junit.xml")

    print("\ncompared with the baseline:")
    compare(before, report).render(sys.stdout)
    problems = check(report, baseline=before)
    print("\ngate: " + ("passed" if not problems else f"{len(problems)} below the baseline"))
    for problem in problems:
        print(f"  {problem}")
    print(f"\nreports: {out / 'report.json'}, {out / 'junit.xml'}")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(tempfile.mkdtemp(prefix="evals-")))
    parser.add_argument("--cases", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    raise SystemExit(anyio.run(main, args.out, args.cases, args.repeat))

"""A calculator agent on a scripted model, and cases for it, shared by the evaluation tests."""

import re

from agentgraph import AgentContext, node, tool
from agentgraph.evals import Case
from agentgraph.llm import ChatRequest
from agentgraph.nodes import react_agent
from agentgraph.testing import ScriptedModel

OPS = {"+": "add", "-": "sub", "*": "mul", "/": "div"}
QUESTION = re.compile(r"What is (-?\d+) ([-+*/]) (-?\d+)\?")


@tool
def calculate(op: str, a: float, b: float) -> float:
    """Apply one arithmetic operation to two numbers."""
    if op == "div":
        return a / b
    return {"add": a + b, "sub": a - b, "mul": a * b}[op]


def reply(request: ChatRequest) -> object:
    """Tool calls for + - *; divisions answered rounded, without a tool; `boom` raises."""
    last = request.messages[-1]
    if last.role == "tool":
        return f"The answer is {float(last.content or 'nan'):g}."
    text = last.content or ""
    if "boom" in text:
        raise RuntimeError("the model broke on sk-test-0123456789abcdef0123456789")
    match = QUESTION.fullmatch(text)
    if match is None:
        return "I cannot read that question."
    a, op, b = int(match[1]), match[2], int(match[3])
    if op == "/":
        return f"The answer is {round(a / b)}."
    return ScriptedModel.tool_call("calculate", op=OPS[op], a=a, b=b)


def agent():
    return react_agent(ScriptedModel(reply, repeat=True, name="scripted"), [calculate], max_turns=3)


def cases() -> list[Case]:
    return [
        Case("add", "What is 2 + 3?", expected="The answer is 5."),
        Case("mul", "What is 4 * 5?", expected="The answer is 20."),
        Case("div", "What is 7 / 2?", expected="The answer is 3.5."),
    ]


def evaluators():
    from agentgraph.evals import Contains, EqualsExpected, Trajectory

    return [EqualsExpected(), Contains("answer"), Trajectory(["calculate"], order="exact")]


EVALUATORS = evaluators()


@node
async def shout(ctx: AgentContext[str]) -> AgentContext[str]:
    """A bare node, not a graph: `evaluate` and the command line run it as it is."""
    return ctx.with_input(ctx.input.upper())


def _exact():
    from agentgraph.evals import EqualsExpected

    return [EqualsExpected()]


EXACT = _exact()

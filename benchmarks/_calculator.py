"""The calculator agent the evaluation benchmarks score: a scripted model and a real tool.

Each case asks for a sum; the model calls `calculate` once and then answers
with its result: two model calls and one tool call a run. Kept apart from
`_common`, which benchmarks that measure other frameworks import without
loading agentgraph.
"""

import re

from agentgraph import tool
from agentgraph.evals import Case
from agentgraph.llm import ChatRequest
from agentgraph.testing import ScriptedModel

QUESTION = re.compile(r"What is (\d+) \+ (\d+)\?")


@tool
def calculate(op: str, a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


def reply(request: ChatRequest) -> object:
    """The scripted model: a call of `calculate` for the question, then the answer."""
    last = request.messages[-1]
    if last.role == "tool":
        return f"The answer is {float(last.content or 'nan'):g}."
    match = QUESTION.fullmatch(last.content or "")
    assert match is not None
    return ScriptedModel.tool_call("calculate", op="add", a=int(match[1]), b=int(match[2]))


def cases(count: int) -> list[Case]:
    """`count` sums, each expecting the model's answer."""
    return [
        Case(f"c{i}", f"What is {i} + {i + 1}?", expected=f"The answer is {2 * i + 1}.")
        for i in range(count)
    ]

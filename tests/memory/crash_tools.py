"""An agent whose `remember` call is killed right after the memory store committed it.

`python -m tests.memory.crash_tools RUNS_DB MEMORY_DB [--resume] [--kill]`: a
scripted model asks to remember two facts and a forget; with `--kill` the
process SIGKILLs itself the moment the memory store has committed the first
`remember`, before the checkpoint store records the call's result. Resumed,
the run makes the calls again; each store write carries the call's effect id.
"""

from agentgraph import AgentContext, ToolCall
from agentgraph.memory import memory_tools
from agentgraph.memory._tools import fact_key
from agentgraph.nodes import react_agent
from agentgraph.testing import ScriptedModel
from tests.memory.crash import crash_run

RUN_ID = "remember"
FACTS = ("Alice is vegetarian.", "Alice loves spicy food.")


def reply(request):
    """The script, by how many tool results the conversation holds (a resume asks afresh)."""
    answered = sum(1 for m in request.messages if m.role == "tool")
    if answered == 0:
        return ScriptedModel.tool_calls(
            ToolCall("c1", "remember", {"fact": FACTS[0]}),
            ToolCall("c2", "forget", {"key": fact_key("Alice eats meat.")}),
        )
    if answered == 2:
        return ScriptedModel.tool_calls(ToolCall("c3", "remember", {"fact": FACTS[1]}))
    return "Noted."


def agent(memory):
    model = ScriptedModel(reply, repeat=True)
    tools = memory_tools(memory, lambda ctx: ("user", ctx.state["user_id"]))
    return react_agent(model, tools)


if __name__ == "__main__":
    out = crash_run(agent, AgentContext("Remember these", state={"user_id": "alice"}), RUN_ID)
    for message in out.history:
        if message.role == "tool":
            print("tool", message.content, flush=True)
    print("answer", out.input, flush=True)

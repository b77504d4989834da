"""A supervisor: a router agent asks specialists, each on its own task, and answers.

Runs offline with scripted models; swap in real ones (`"openai:gpt-4o-mini"`).
"""

from __future__ import annotations

import anyio

from agentgraph import AgentContext, GraphRunner, tool
from agentgraph.teams import Agent, supervisor
from agentgraph.testing import ScriptedModel


@tool
def weather(city: str) -> str:
    """Today's weather in a city."""
    return f"sunny in {city}"


def build() -> object:
    boss = ScriptedModel(
        ScriptedModel.tool_call("transfer_to_forecaster", task="weather in Rome"),
        ScriptedModel.tool_call("transfer_to_writer", task="one line: sunny in Rome"),
        "Rome: sunny all day.",
    )
    forecaster = ScriptedModel(ScriptedModel.tool_call("weather", city="Rome"), "Sunny in Rome.")
    writer = ScriptedModel("Rome: sunny all day.")
    return supervisor(
        Agent("boss", boss, system_prompt="Ask the specialists, then answer."),
        [
            Agent("forecaster", forecaster, tools=[weather], description="weather questions"),
            Agent("writer", writer, description="short copy"),
        ],
        history="none",
    )


async def main() -> str:
    out = await GraphRunner().run(build(), AgentContext("What is the weather in Rome?"))
    print(out.input)
    print("agents:", " -> ".join(out.state["team"]["chain"]), "| requests:", out.usage.requests)
    return str(out.input)


if __name__ == "__main__":
    anyio.run(main)

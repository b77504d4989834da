"""A swarm: a triage agent hands a customer to billing, which refunds the order.

Runs offline with scripted models; swap in real ones (`"openai:gpt-4o-mini"`).
"""

from __future__ import annotations

import anyio

from agentgraph import AgentContext, GraphRunner, tool
from agentgraph.teams import Agent, Handoff, swarm
from agentgraph.testing import ScriptedModel


@tool
def refund(order: str) -> str:
    """Refund an order."""
    return f"order {order} refunded"


def build() -> tuple[object, ScriptedModel]:
    triage_model = ScriptedModel(
        ScriptedModel.tool_call("transfer_to_billing", task="refund order 7")
    )
    billing_model = ScriptedModel(
        ScriptedModel.tool_call("refund", order="7"), "Order 7 is refunded."
    )
    team = swarm(
        [
            Agent(
                "triage",
                triage_model,
                system_prompt="Find out what the customer needs; hand billing questions on.",
                handoffs=[Handoff("billing", history="full")],
            ),
            Agent(
                "billing",
                billing_model,
                tools=[refund],
                system_prompt="You handle refunds.",
                description="refunds and invoices",
                handoffs=["triage"],
            ),
        ],
        start="triage",
    )
    return team, billing_model


async def main() -> str:
    team, _ = build()
    out = await GraphRunner().run(team, AgentContext("Please refund order 7."))
    print(out.input)
    print("agents:", " -> ".join(out.state["team"]["chain"]), "| requests:", out.usage.requests)
    return str(out.input)


if __name__ == "__main__":
    anyio.run(main)

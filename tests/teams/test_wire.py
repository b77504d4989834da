"""The fake OpenAI chat, Responses, Anthropic and Ollama servers accept what teams send.

The fakes refuse what the services refuse (orphan tool calls and results,
reasoning items cut from what they led to); a swarm handing off with the whole
history, a supervisor's returning handoff and an agent used as a tool must
pass them all.
"""

from collections.abc import Iterator

import pytest

from agentgraph import AgentContext, GraphRunner, Message, Settings, tool
from agentgraph.llm import AnthropicModel, OllamaModel, OpenAIModel, OpenAIResponsesModel
from agentgraph.nodes import react_agent
from agentgraph.teams import Agent, Handoff, agent_tool, supervisor, swarm
from agentgraph.testing import FakeServer, ScriptedModel

pytestmark = pytest.mark.anyio
call = ScriptedModel.tool_call


@tool
def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


@pytest.fixture(scope="module")
def shared() -> Iterator[FakeServer]:
    with FakeServer() as server:
        yield server


@pytest.fixture
def server(shared: FakeServer) -> Iterator[FakeServer]:
    shared.reset()
    yield shared
    shared.reset()


PROVIDERS = ["openai", "responses", "anthropic", "ollama"]


def model(provider, server):
    if provider == "openai":
        return OpenAIModel("gpt-4o-mini", base_url=server.openai_url, api_key="sk-t")
    if provider == "responses":  # a reasoning model: reasoning items go back with each call
        return OpenAIResponsesModel("o4-mini", base_url=server.openai_url, api_key="sk-t")
    if provider == "anthropic":
        return AnthropicModel("claude-sonnet-4-5", base_url=server.url, api_key="sk-ant-t")
    return OllamaModel("llama3.2", base_url=server.url)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_swarm_handoff_with_the_whole_history(provider, server):
    server.add(
        call("transfer_to_billing", task="refund 7"),
        call("refund", order="7"),
        "Refunded order 7.",
    )
    async with model(provider, server) as m:
        team = swarm(
            [
                Agent("triage", m, system_prompt="Triage.", handoffs=["billing"]),
                Agent("billing", m, tools=[refund], system_prompt="Billing."),
            ]
        )
        out = await GraphRunner().run(team, AgentContext("refund order 7"))
    assert out.input == "Refunded order 7."
    assert len(server.requests) == 3


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_supervisor_s_returning_handoff(provider, server):
    server.add(call("transfer_to_math", task="2+2"), "4", "It is 4.")
    async with model(provider, server) as m:
        boss = Agent("boss", m, system_prompt="Delegate.")
        team = supervisor(boss, [Agent("math", m)], history="full")
        out = await GraphRunner().run(team, AgentContext("what is 2+2?"))
    assert out.input == "It is 4."
    assert len(server.requests) == 3


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_an_agent_as_a_tool(provider, server):
    server.add(call("booker", task="refund 7"), call("refund", order="7"), "Done.", "All set.")
    async with model(provider, server) as m:
        sub = react_agent(m, [refund], name="booker")
        caller = react_agent(m, [agent_tool(sub)], name="caller")
        out = await GraphRunner().run(caller, AgentContext("refund 7"))
    assert out.input == "All set."
    assert out.history[2].content == "Done."


@tool
def lookup_order(order: str) -> str:
    """Look an order up."""
    return f"order {order}: shipped"


@tool
def status(order: str) -> str:
    """Look an order's status up."""
    return f"order {order} is paid"


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_routed_answer_handed_on_with_the_whole_history(provider, server):
    # The front desk looks the order up and answers; the router hands that answer on,
    # so billing's request ends on the tool result (reasoning withdrawn with the answer).
    server.add(
        call("status", order="7"),
        "A billing matter: refund order 7.",
        call("refund", order="7"),
        "Refunded order 7.",
    )

    def billing_matters(ctx):
        return "billing" if ctx.input.content.startswith("A billing matter") else None

    async with model(provider, server) as m:
        team = swarm(
            [
                Agent("desk", m, tools=[status], system_prompt="Front desk."),
                Agent("billing", m, tools=[refund], system_prompt="Billing."),
            ],
            route=billing_matters,
        )
        out = await GraphRunner().run(team, AgentContext("refund order 7"))
    assert out.input == "Refunded order 7."
    assert len(server.requests) == 4
    sent = [str(r.body) for r in server.requests]
    assert "A billing matter" not in sent[2] and "order 7 is paid" in sent[2]


def thinking_call(name: str, **arguments: object) -> Message:
    """A scripted tool call made after some thinking (signed by the fake server)."""
    (made,) = call(name, **arguments).tool_calls
    return Message.assistant(tool_calls=(made,), reasoning=f"I should call {name}.")


@pytest.mark.parametrize("provider", ["anthropic", "responses"])
@pytest.mark.parametrize("history", ["full", "summary"])
@pytest.mark.parametrize("thinks", ["target", "source", "both"])
async def test_a_handoff_between_agents_with_and_without_thinking(
    provider, history, thinks, server
):
    # The target's first request must suit its own settings: with thinking on, the
    # last assistant turn that calls tools carries thinking it cannot have made.
    source_thinks = thinks in ("source", "both")
    handing = thinking_call if source_thinks else call
    replies: list[object] = [handing("lookup_order", order="7")]
    replies.append(handing("transfer_to_billing", task="refund 7"))
    if history == "summary":
        replies.append("The user wants order 7 refunded.")
    target_thinks = thinks in ("target", "both")
    replies += [(thinking_call if target_thinks else call)("refund", order="7")]
    replies.append("Refunded order 7.")
    server.add(*replies)
    thinking = Settings(think=True)
    async with model(provider, server) as m:
        team = swarm(
            [
                Agent(
                    "triage",
                    m,
                    tools=[lookup_order],
                    system_prompt="Triage.",
                    handoffs=[Handoff("billing", history=history)],
                    settings=thinking if source_thinks else None,
                ),
                Agent(
                    "billing",
                    m,
                    tools=[refund],
                    system_prompt="Billing.",
                    settings=thinking if target_thinks else None,
                ),
            ]
        )
        before = AgentContext("refund order 7").append(
            Message.user("where is order 7?"), Message.assistant("It shipped.")
        )
        out = await GraphRunner().run(team, before)
    assert out.input == "Refunded order 7."

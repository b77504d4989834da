"""The graphs `langgraph dev` serves as the server benchmark's reference.

They match `benchmarks/_server_graph.py`: `agent` is one async node that
answers the user's message; `asks` is one async node that waits on an
interrupt. Run only by `langgraph dev` from its own virtualenv.
"""

from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import interrupt


class State(TypedDict):
    messages: Annotated[list[Any], add_messages]


async def answer(state: State) -> dict[str, Any]:
    last = state["messages"][-1]
    return {"messages": [{"role": "assistant", "content": f"ok: {last.content}"}]}


async def ask(state: State) -> dict[str, Any]:
    told = interrupt("continue?")
    return {"messages": [{"role": "assistant", "content": str(told)}]}


_agent = StateGraph(State)
_agent.add_node("answer", answer)
_agent.add_edge(START, "answer")
_agent.add_edge("answer", END)
agent = _agent.compile()

_asks = StateGraph(State)
_asks.add_node("ask", ask)
_asks.add_edge(START, "ask")
_asks.add_edge("ask", END)
asks = _asks.compile()

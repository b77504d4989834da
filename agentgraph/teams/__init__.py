"""Teams of agents: handoffs, agents as tools, supervisors and swarms, as ordinary graphs.

`swarm` builds peers that hand the conversation to each other, `supervisor`
a router agent over specialists, and `agent_tool` offers any graph as a tool
of another agent. Each is built from graph nodes and runtime effects, so
runs, checkpoints, traces and limits work as for any graph.
"""

from .._core._events import HandedOff as HandedOff
from ._agent_tool import agent_tool as agent_tool
from ._errors import HandoffError as HandoffError
from ._errors import HandoffLoop as HandoffLoop
from ._handoff import Agent as Agent
from ._handoff import Handoff as Handoff
from ._handoff import HandoffView as HandoffView
from ._handoff import HistoryPolicy as HistoryPolicy
from ._handoff import Summary as Summary
from ._handoff import conversation_problem as conversation_problem
from ._nodes import team_state as team_state
from ._team import supervisor as supervisor
from ._team import swarm as swarm

__all__ = (
    "Agent",
    "HandedOff",
    "Handoff",
    "HandoffError",
    "HandoffLoop",
    "HandoffView",
    "HistoryPolicy",
    "Summary",
    "agent_tool",
    "conversation_problem",
    "supervisor",
    "swarm",
    "team_state",
)

from .._util._public import publish as _publish

_publish(__name__, __all__, globals())

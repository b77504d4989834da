"""Ready-made nodes and combinators."""

from ._agent import ToolUse as ToolUse
from ._agent import answer as answer
from ._agent import react_agent as react_agent
from ._agent import tool_turns as tool_turns
from ._agent import tool_use as tool_use
from ._chat import Chat as Chat
from ._chat import build_request as build_request
from ._chat import chat as chat
from ._chat import user_turn as user_turn
from ._combinators import MapEach as MapEach
from ._combinators import Parallel as Parallel
from ._combinators import map_each as map_each
from ._combinators import parallel as parallel

__all__ = (
    "Chat",
    "MapEach",
    "Parallel",
    "ToolUse",
    "answer",
    "build_request",
    "chat",
    "map_each",
    "parallel",
    "react_agent",
    "tool_turns",
    "tool_use",
    "user_turn",
)

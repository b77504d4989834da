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
from ._generate import Generate as Generate
from ._generate import generate as generate
from ._partial import Partial as Partial
from ._partial import PartialStream as PartialStream
from ._partial import stream_structured as stream_structured
from ._retrieve import Retrieve as Retrieve
from ._retrieve import Source as Source
from ._retrieve import format_sources as format_sources
from ._retrieve import retrieve as retrieve
from ._sections import Section as Section
from ._summarize import Summarize as Summarize
from ._summarize import needs_summary as needs_summary
from ._summarize import summarize as summarize
from ._tokens import TokenCounter as TokenCounter
from ._tokens import count_context_tokens as count_context_tokens
from ._tokens import estimate_tokens as estimate_tokens
from ._tokens import tiktoken_counter as tiktoken_counter

__all__ = (
    "Chat",
    "Generate",
    "MapEach",
    "Parallel",
    "Partial",
    "PartialStream",
    "Retrieve",
    "Section",
    "Source",
    "Summarize",
    "TokenCounter",
    "ToolUse",
    "answer",
    "build_request",
    "chat",
    "count_context_tokens",
    "estimate_tokens",
    "format_sources",
    "generate",
    "map_each",
    "needs_summary",
    "parallel",
    "react_agent",
    "retrieve",
    "stream_structured",
    "summarize",
    "tiktoken_counter",
    "tool_turns",
    "tool_use",
    "user_turn",
)

from .._util._public import publish as _publish

_publish(__name__, __all__, globals())

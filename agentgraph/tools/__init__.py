"""Typed tools: `@tool` turns a function into something the model can call, and
`execute_calls` carries out the model's calls safely; `effect_id` names the call a
tool runs for, so a tool's own writes can be applied once."""

from .._util._clip import MAX_RESULT_CHARS as MAX_RESULT_CHARS
from .._util._tool_effect import effect_id as effect_id
from ..llm._messages import RAW_ARGUMENTS as RAW_ARGUMENTS
from ._execute import ToolFailure as ToolFailure
from ._execute import ToolOutcome as ToolOutcome
from ._execute import execute_calls as execute_calls
from ._execute import run_tool_calls as run_tool_calls
from ._tool import Tool as Tool
from ._tool import ToolResult as ToolResult
from ._tool import ToolSite as ToolSite
from ._tool import tool as tool

__all__ = (
    "MAX_RESULT_CHARS",
    "RAW_ARGUMENTS",
    "Tool",
    "ToolFailure",
    "ToolOutcome",
    "ToolResult",
    "ToolSite",
    "effect_id",
    "execute_calls",
    "run_tool_calls",
    "tool",
)

from .._util._public import publish as _publish

_publish(__name__, __all__, globals())

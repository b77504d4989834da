"""Provider-neutral messages, the `ChatModel` protocol, and provider clients."""

from ._messages import Message as Message
from ._messages import Role as Role
from ._messages import ToolCall as ToolCall
from ._messages import ToolSpec as ToolSpec
from ._messages import Usage as Usage
from ._model import ChatModel as ChatModel
from ._model import ChatRequest as ChatRequest
from ._model import ChatResponse as ChatResponse
from ._model import FinishReason as FinishReason
from ._model import OutputSchema as OutputSchema
from ._model import ReasoningDelta as ReasoningDelta
from ._model import ResponseDone as ResponseDone
from ._model import StreamEvent as StreamEvent
from ._model import TextDelta as TextDelta
from ._model import ToolCallDelta as ToolCallDelta
from ._model import ToolChoice as ToolChoice

__all__ = (
    "ChatModel",
    "ChatRequest",
    "ChatResponse",
    "FinishReason",
    "Message",
    "OutputSchema",
    "ReasoningDelta",
    "ResponseDone",
    "Role",
    "StreamEvent",
    "TextDelta",
    "ToolCall",
    "ToolCallDelta",
    "ToolChoice",
    "ToolSpec",
    "Usage",
)

"""Provider-neutral messages, the `ChatModel` protocol, and provider clients."""

from ._anthropic import AnthropicModel as AnthropicModel
from ._capabilities import Capabilities as Capabilities
from ._capabilities import OnUnsupported as OnUnsupported
from ._content import Document as Document
from ._content import Image as Image
from ._content import ImageType as ImageType
from ._content import Part as Part
from ._embed import Embedder as Embedder
from ._embed import OllamaEmbedder as OllamaEmbedder
from ._embed import OpenAIEmbedder as OpenAIEmbedder
from ._gigachat import GigaChatModel as GigaChatModel
from ._gigachat_embed import GigaChatEmbedder as GigaChatEmbedder
from ._http import ProviderRetry as ProviderRetry
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
from ._ollama import OllamaModel as OllamaModel
from ._openai import OpenAIModel as OpenAIModel
from ._pool import SpreadTransport as SpreadTransport
from ._resolve import model_from_string as model_from_string

__all__ = (
    "AnthropicModel",
    "Capabilities",
    "ChatModel",
    "ChatRequest",
    "ChatResponse",
    "Document",
    "Embedder",
    "FinishReason",
    "GigaChatEmbedder",
    "GigaChatModel",
    "Image",
    "ImageType",
    "Message",
    "OllamaEmbedder",
    "OllamaModel",
    "OnUnsupported",
    "OpenAIEmbedder",
    "OpenAIModel",
    "OutputSchema",
    "Part",
    "ProviderRetry",
    "ReasoningDelta",
    "ResponseDone",
    "Role",
    "SpreadTransport",
    "StreamEvent",
    "TextDelta",
    "ToolCall",
    "ToolCallDelta",
    "ToolChoice",
    "ToolSpec",
    "Usage",
    "model_from_string",
)

"""Provider-neutral messages, the `ChatModel` protocol, and provider clients."""

from ._anthropic import AnthropicModel as AnthropicModel
from ._capabilities import Capabilities as Capabilities
from ._capabilities import OnUnsupported as OnUnsupported
from ._embed import Embedder as Embedder
from ._embed import OllamaEmbedder as OllamaEmbedder
from ._embed import OpenAIEmbedder as OpenAIEmbedder
from ._gateways import litellm_model as litellm_model
from ._gateways import openrouter_model as openrouter_model
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
from ._responses import OpenAIResponsesModel as OpenAIResponsesModel

__all__ = (
    "AnthropicModel",
    "Capabilities",
    "ChatModel",
    "ChatRequest",
    "ChatResponse",
    "Embedder",
    "FinishReason",
    "GigaChatEmbedder",
    "GigaChatModel",
    "Message",
    "OllamaEmbedder",
    "OllamaModel",
    "OnUnsupported",
    "OpenAIEmbedder",
    "OpenAIModel",
    "OpenAIResponsesModel",
    "OutputSchema",
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
    "litellm_model",
    "model_from_string",
    "openrouter_model",
)

"""Provider-neutral messages, the `ChatModel` protocol, and provider clients.

The messages and content parts load with the package; the `ChatModel` protocol
with its request, response and stream types, the capabilities, and each
provider client (and httpx with it) load the first time one of their names is
used, so an engine that never calls a provider never pays for importing them.
"""

import typing as _typing

from .._util._public import publish as _publish
from ._content import Document as Document
from ._content import Image as Image
from ._content import ImageType as ImageType
from ._content import Part as Part
from ._embedder import Embedder as Embedder
from ._messages import Message as Message
from ._messages import Role as Role
from ._messages import ToolCall as ToolCall
from ._messages import ToolSpec as ToolSpec
from ._messages import Usage as Usage

if _typing.TYPE_CHECKING:
    from ._anthropic import AnthropicModel as AnthropicModel
    from ._capabilities import Capabilities as Capabilities
    from ._capabilities import OnUnsupported as OnUnsupported
    from ._embed import OllamaEmbedder as OllamaEmbedder
    from ._embed import OpenAIEmbedder as OpenAIEmbedder
    from ._gateways import litellm_model as litellm_model
    from ._gateways import openrouter_model as openrouter_model
    from ._gigachat import GigaChatModel as GigaChatModel
    from ._gigachat_embed import GigaChatEmbedder as GigaChatEmbedder
    from ._http_retry import ProviderRetry as ProviderRetry
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
    from ._transcript import TranscriptRepair as TranscriptRepair
    from ._transcript import Wire as Wire
    from ._transcript import check_transcript as check_transcript
    from ._transcript import repair_transcript as repair_transcript

_LAZY = {
    "AnthropicModel": "_anthropic",
    "Capabilities": "_capabilities",
    "ChatModel": "_model",
    "ChatRequest": "_model",
    "ChatResponse": "_model",
    "FinishReason": "_model",
    "GigaChatEmbedder": "_gigachat_embed",
    "GigaChatModel": "_gigachat",
    "OllamaEmbedder": "_embed",
    "OllamaModel": "_ollama",
    "OnUnsupported": "_capabilities",
    "OpenAIEmbedder": "_embed",
    "OpenAIModel": "_openai",
    "OpenAIResponsesModel": "_responses",
    "OutputSchema": "_model",
    "ProviderRetry": "_http_retry",
    "ReasoningDelta": "_model",
    "ResponseDone": "_model",
    "SpreadTransport": "_pool",
    "StreamEvent": "_model",
    "TextDelta": "_model",
    "ToolCallDelta": "_model",
    "ToolChoice": "_model",
    "TranscriptRepair": "_transcript",
    "Wire": "_transcript",
    "check_transcript": "_transcript",
    "litellm_model": "_gateways",
    "model_from_string": "_resolve",
    "openrouter_model": "_gateways",
    "repair_transcript": "_transcript",
}


def __getattr__(name: str) -> _typing.Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    _publish(__name__, (name,), globals())
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


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
    "OpenAIResponsesModel",
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
    "TranscriptRepair",
    "Usage",
    "Wire",
    "check_transcript",
    "litellm_model",
    "model_from_string",
    "openrouter_model",
    "repair_transcript",
)

_publish(__name__, __all__, globals())

"""`FakeServer`: a loopback server that speaks the OpenAI, Anthropic, Ollama and GigaChat APIs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import TracebackType

import anyio.to_thread

from ..llm._messages import Message
from ..llm._model import ChatResponse
from ..llm._replies import EmbeddingFunction, Reply
from ._fake_anthropic import AnthropicDialect
from ._fake_app import FakeState, Responder, build_app
from ._fake_common import RecordedRequest, ServerOptions
from ._fake_gigachat import GigaChatDialect
from ._fake_ollama import OllamaDialect
from ._fake_openai import OpenAIDialect
from ._fake_quirks import OpenAIQuirks
from ._fake_responses import ResponsesDialect
from ._faults import Fault
from ._server_thread import server_thread

__all__ = ("FakeServer",)


class FakeServer:
    """A fake model provider on 127.0.0.1, for tests of clients and agents.

    ```python
    async with FakeServer("Hello!") as server:
        client = openai.AsyncOpenAI(base_url=server.openai_url, api_key="test")
        ...
        assert server.requests[0].body["model"] == "gpt-4o-mini"
    ```

    Routes: OpenAI `/v1/chat/completions`, `/v1/responses`, `/v1/embeddings`, `/v1/models`;
    Anthropic `/v1/messages`; Ollama `/api/chat`, `/api/embed`, `/api/tags`;
    GigaChat `/api/v2/oauth`, `/api/v1/chat/completions`, `/api/v1/embeddings`.

    Chat answers come from the script (`FakeServer(*replies)`, `add`), each a
    provider-neutral `ChatResponse`, `Message` or plain text rendered in the
    asking provider's format, streamed or not as the request says. When the
    script is empty the `responder(provider, recorded_request)` answers (it
    may be async), else `default`, else an HTTP 500 saying the script ran out.
    `openai_quirks` makes the OpenAI endpoint answer like a compatible server
    (missing ids, whole or object arguments, ...). Embeddings are deterministic
    vectors of `embedding_dim` floats (`default_embedding`), or whatever
    `embedder(text, dim)` returns.

    Requests are checked the way the real services check them (auth headers,
    unanswered tool calls, argument types, Anthropic's `max_tokens`, GigaChat
    tokens, ...) and refused with each provider's status and error body.
    `inject` queues faults; `delay` slows every answer (seconds, or a function
    of the request); a request whose client hangs up during a delay is
    dropped without using a reply. Every request is kept in `requests`.
    A cut connection is logged by uvicorn at error level on `uvicorn.error`;
    the server leaves the process's logging configuration alone.

    The server runs in a thread with its own event loop: use it with
    `async with` under asyncio or trio, or with `with` from synchronous code
    (a module-scoped fixture, then `reset()` between tests).
    """

    def __init__(
        self,
        *script: Reply,
        responder: Responder | None = None,
        default: Reply | None = None,
        delay: float | Callable[[RecordedRequest], float] = 0.0,
        chunk_size: int = 8,
        api_key: str | None = None,
        embedding_dim: int = 8,
        embedder: EmbeddingFunction | None = None,
        openai_quirks: OpenAIQuirks | None = None,
        gigachat_credentials: str | None = None,
        gigachat_token_ttl: float = 1800.0,
        models: Sequence[str] = ("fake-model",),
        host: str = "127.0.0.1",
        port: int = 0,
        backlog: int = 2048,
    ) -> None:
        options = ServerOptions(
            api_key=api_key,
            chunk_size=chunk_size,
            embedding_dim=embedding_dim,
            embedder=embedder,
            openai_quirks=openai_quirks or OpenAIQuirks(),
        )
        self._gigachat = GigaChatDialect(
            options, token_ttl=gigachat_token_ttl, credentials=gigachat_credentials
        )
        _check_replies((*script, *(() if default is None else (default,))))
        self._state = FakeState(responder, default, delay)
        self._state.script.extend(script)
        self._anthropic = AnthropicDialect(options)
        app = build_app(
            self._state,
            openai=OpenAIDialect(options),
            anthropic=self._anthropic,
            ollama=OllamaDialect(options),
            gigachat=self._gigachat,
            models=tuple(models),
            responses=ResponsesDialect(options),
        )
        self._thread = server_thread(app, host=host, port=port, backlog=backlog)
        self._host = host

    # -- lifecycle -------------------------------------------------------------

    def start(self) -> None:
        """Start serving; blocks until the server accepts requests."""
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and release the port; blocks until the server thread ends."""
        self._thread.stop()

    def __enter__(self) -> FakeServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    async def __aenter__(self) -> FakeServer:
        await anyio.to_thread.run_sync(self.start)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await anyio.to_thread.run_sync(self.stop)

    # -- addresses -------------------------------------------------------------

    @property
    def url(self) -> str:
        """`http://127.0.0.1:<port>`: the base for Anthropic and Ollama clients."""
        return f"http://{self._host}:{self._thread.port}"

    @property
    def openai_url(self) -> str:
        """The OpenAI base URL, ending in `/v1`."""
        return f"{self.url}/v1"

    @property
    def gigachat_url(self) -> str:
        """The GigaChat API base URL, ending in `/api/v1`."""
        return f"{self.url}/api/v1"

    @property
    def gigachat_auth_url(self) -> str:
        """The GigaChat OAuth token URL."""
        return f"{self.url}/api/v2/oauth"

    # -- script, faults, records -------------------------------------------------

    def add(self, *replies: Reply) -> None:
        """Queue more chat replies after the current script."""
        _check_replies(replies)
        with self._state.lock:
            self._state.script.extend(replies)

    @property
    def remaining(self) -> int:
        """How many scripted replies have not been served yet."""
        with self._state.lock:
            return len(self._state.script)

    def inject(
        self,
        *faults: Fault,
        times: int | None = 1,
        provider: str | None = None,
        endpoint: str | None = None,
    ) -> None:
        """Apply `faults` together to the next `times` matching requests (`None`: all of them).

        `provider` is `openai`, `openai-responses`, `anthropic`, `ollama` or `gigachat`; `endpoint`
        is `chat`, `embeddings`, `models` or `oauth`. Injections are used in the
        order they were made; an injected error answers before any validation.
        """
        if not faults:
            raise ValueError("inject() needs at least one fault")
        for fault in faults:
            if not isinstance(fault, Fault):
                raise TypeError(
                    f"not a fault: {fault!r}; use ErrorResponse, Delay, CutStream, "
                    "StreamError or MalformedJson"
                )
        if times is not None and times < 1:
            raise ValueError(f"times must be at least 1 or None, not {times}")
        self._state.inject(faults, times, provider, endpoint)

    def clear_faults(self) -> None:
        """Drop every injected fault that has not been used yet."""
        with self._state.lock:
            self._state.injections.clear()

    def expire_gigachat_tokens(self) -> None:
        """Expire every GigaChat token issued so far: the next chat request with one gets 401."""
        self._gigachat.expire_tokens()

    @property
    def requests(self) -> tuple[RecordedRequest, ...]:
        """Every request received so far, in arrival order."""
        with self._state.lock:
            return tuple(self._state.records)

    def reset(self) -> None:
        """Forget the script, faults, recorded requests, GigaChat tokens and Anthropic's cache."""
        with self._state.lock:
            self._state.script.clear()
            self._state.injections.clear()
            self._state.records.clear()
        self._gigachat.forget_tokens()
        self._anthropic.cache.forget()


def _check_replies(replies: tuple[object, ...]) -> None:
    for reply in replies:
        if not isinstance(reply, ChatResponse | Message | str):
            raise TypeError(
                f"a fake server reply is a ChatResponse, a Message or a str, not {reply!r}"
            )

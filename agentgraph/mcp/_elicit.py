"""An MCP server's questions in the middle of a tool call (elicitation), answered by the run.

A connection declares the elicitation capability only when `MCPTools` is given
a way to answer (`elicitation=`): with `True`, a question stops the run with
`Interrupted` (its question an `Elicitation`) and `GraphRunner.resume(...,
answer=...)` sends the answer; with an async function, the function answers
while the call waits.

Stopping the run needs a question the server can take an answer to later:
the 2026-07-28 protocol's `InputRequiredResult`, whose `request_state` the
client sends back with the answer. Each round of the call is recorded with
`Runtime.once` and each question asked with `Runtime.interrupt`, so a resumed
run sends only the answer, with the recorded state, never the call anew. A
question sent in the handshake era (`elicitation/create`) waits inside the
live call, so only a function can answer it: `elicitation=True` refuses such
servers when connecting.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import anyio
import attrs
import jsonschema
import jsonschema.exceptions
import mcp
import mcp.types
import pydantic

from .._core._errors import MCPAnswerError, MCPToolError
from .._core._runtime import tool_runtime
from .._util._public import stored_as

if TYPE_CHECKING:
    from mcp.client.session import ClientRequestContext

    from ._toolset import MCPTools

__all__ = ("Answerer", "CALLING", "Call", "Elicitation", "ask_in_run", "live_answers", "reply_of")

MAX_ROUNDS = 16
"""Rounds of questions one call may take before it is given up (the SDK's own bound)."""


class Call:
    """One call in flight with an answer function, and the refused answers that are its own."""

    __slots__ = ("refused", "tool")

    def __init__(self, tool: str) -> None:
        self.tool = tool
        """The server's name of the tool called."""
        self.refused: list[MCPToolError] = []

    def raise_refused(self, cause: Exception | None) -> None:
        """Raise the first refused answer: it was never sent, whatever the server said."""
        if self.refused:
            first = self.refused[0]
            raise first from first.__cause__ or cause  # an answerer's own error first


CALLING: ContextVar[Call | None] = ContextVar("agentgraph_mcp_calling", default=None)
"""The call in flight in this task: a 2026-07-28 question is answered inside it, and the
SDK answers a handshake-era one in the context of the call whose stream it came on."""


@stored_as("agentgraph:Elicitation")
@attrs.frozen
class Elicitation:
    """A question an MCP server asks in the middle of a tool call (a form to fill in).

    With `MCPTools(..., elicitation=True)` it is the `question` of the
    `Interrupted` that stops the run: answer with `GraphRunner.resume(...,
    answer={...})`, a mapping that fits `schema`, or `answer=None` to decline.
    With `elicitation=<async function>`, the function receives it and returns
    the mapping (or None).

    Attributes:
        server: the server's label (as errors name it).
        tool: the server's name of the tool whose call asks ("" when it cannot
            be told: a handshake-era question over stdio names no call, and
            several were in flight).
        message: the question, in the server's words.
        schema: the JSON Schema of the form (a flat object of simple fields).
    """

    server: str
    tool: str
    message: str
    schema: Mapping[str, Any]


Answerer = Callable[[Elicitation], Awaitable[Mapping[str, Any] | None]]
"""A function that answers a server's question while the call waits: the form's values, or None."""


def reply_of(question: Elicitation, answer: Any) -> mcp.types.ElicitResult:
    """The reply to send for `answer`: None or False declines, a fitting mapping accepts.

    Raises:
        MCPAnswerError: `answer` is neither, or does not fit the form; nothing is sent.
    """
    if answer is None or answer is False:
        return mcp.types.ElicitResult(action="decline")
    if not isinstance(answer, Mapping):
        problem = (
            "(root): expected the form's fields as a mapping, or None to decline, "
            f"not a {type(answer).__name__}"
        )
        raise MCPAnswerError(question.server, question.tool, [problem])
    content = dict(answer)
    try:
        cls = jsonschema.validators.validator_for(
            dict(question.schema), default=jsonschema.Draft202012Validator
        )
        cls.check_schema(dict(question.schema))
    except jsonschema.exceptions.SchemaError as exc:
        raise MCPToolError(
            question.server,
            question.tool,
            f"the server's form is not a valid JSON Schema: {exc.message}",
        ) from exc
    errors = sorted(
        cls(dict(question.schema)).iter_errors(content), key=lambda e: list(map(str, e.path))
    )
    problems = [f"{'/'.join(map(str, e.path)) or '(root)'}: {e.message}" for e in errors[:5]]
    if problems:
        raise MCPAnswerError(question.server, question.tool, problems)
    try:
        return mcp.types.ElicitResult(action="accept", content=content)
    except pydantic.ValidationError as exc:  # nested values the protocol cannot carry
        shown = [f"{'/'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:5]]
        raise MCPAnswerError(question.server, question.tool, shown) from exc


def _question(label: str, tool: str, request: Any) -> Elicitation:
    params = getattr(request, "params", None)
    if not isinstance(params, mcp.types.ElicitRequestFormParams):
        kind = type(params if params is not None else request).__name__
        raise MCPToolError(
            label,
            tool,
            f"the server asks for input agentgraph does not give ({kind}); only forms are answered",
        )
    return Elicitation(label, tool, params.message, dict(params.requested_schema))


async def ask_in_run(
    label: str, tool: str, client: mcp.Client, arguments: Mapping[str, Any]
) -> mcp.types.CallToolResult:
    """Call `tool`, answering each question of the server with the run's interrupts.

    Every round is recorded with `Runtime.once`, so a resumed run gets the
    rounds already made from the record and sends only what follows the answer.
    """
    rt = tool_runtime()
    responses: dict[str, Any] | None = None
    state: str | None = None
    for round_ in range(MAX_ROUNDS):

        async def send(
            r: dict[str, Any] | None = responses, s: str | None = state
        ) -> dict[str, Any]:
            result = await client.session.call_tool(
                tool, dict(arguments), input_responses=r, request_state=s, allow_input_required=True
            )
            kind = "ask" if isinstance(result, mcp.types.InputRequiredResult) else "done"
            return {kind: result.model_dump(mode="json", by_alias=True, exclude_none=True)}

        data: dict[str, Any] = (
            await send() if rt is None else await rt.once(f"mcp {tool} round {round_}", send)
        )
        if "done" in data:
            return mcp.types.CallToolResult.model_validate(data["done"])
        asked = mcp.types.InputRequiredResult.model_validate(data["ask"])
        state = asked.request_state
        if not asked.input_requests:  # the server is still working: ask again shortly
            responses = None
            await anyio.sleep(min(0.05 * 2**round_, 0.25))
            continue
        responses = {}
        for key, request in asked.input_requests.items():
            question = _question(label, tool, request)
            responses[key] = reply_of(question, await _interrupt(rt, question))
    raise MCPToolError(label, tool, f"the server was still asking after {MAX_ROUNDS} rounds")


async def _interrupt(rt: Any, question: Elicitation) -> Any:
    """The run's answer to `question` (the run stops here until it is given)."""
    why = (
        "answer it from a run with a checkpoint store (the run stops with Interrupted), "
        "or pass elicitation=<an async function> to answer while the call waits"
    )
    if rt is None:
        raise MCPToolError(
            question.server, question.tool, f"the server asks {question.message!r}; {why}"
        )
    try:
        return await rt.interrupt(question)
    except RuntimeError as exc:  # a run without a checkpoint store cannot stop and go on
        raise MCPToolError(
            question.server, question.tool, f"the server asks {question.message!r}; {why}"
        ) from exc


def live_answers(toolset: MCPTools) -> Any:
    """The SDK's elicitation callback for `toolset`: its answerer, or a refusal when it has none.

    A wrong answer is not sent: the server is told the question was
    cancelled, and the call then fails with the `MCPAnswerError`. So does an
    answerer that raises: its error (which may say anything) stays here, and
    the call fails with an `MCPToolError` caused by it.

    The failure goes to the call that asked, when that is certain. A
    2026-07-28 question is answered inside its own call. A handshake-era
    `elicitation/create` names no request it serves, but over streamable HTTP
    it comes on the stream of the call's POST, which the SDK answers in that
    call's context (as it does in process); over stdio it is a call's only
    when that call is alone in flight. One asked over stdio while several
    were in flight fails each of them still waiting (the one that asked is
    among them), each with an error of its own naming the question, so that
    no call takes the server's "cancelled" for an answer.
    """

    async def answer(
        context: ClientRequestContext, params: mcp.types.ElicitRequestParams
    ) -> mcp.types.ElicitResult | mcp.types.ErrorData:
        answerer = toolset.elicitation
        if not callable(answerer) or not isinstance(params, mcp.types.ElicitRequestFormParams):
            return mcp.types.ErrorData(
                code=mcp.types.INVALID_REQUEST, message="agentgraph answers form questions only"
            )
        waiting = list(toolset.in_flight)
        own = CALLING.get()
        if own not in waiting:  # not in a call's context (stdio): told only when alone
            own = waiting[0] if len(waiting) == 1 else None
        tool = own.tool if own is not None else ""
        question = Elicitation(toolset.label, tool, params.message, dict(params.requested_schema))
        try:
            return reply_of(question, await answerer(question))
        except MCPAnswerError as exc:
            refusal: MCPToolError = exc
        except Exception as exc:
            refusal = MCPToolError(
                toolset.label,
                tool,
                f"answering the server's question failed: {type(exc).__name__}: {exc}"[:2000],
            )
            refusal.__cause__ = exc
        if own is not None:
            own.refused.append(refusal)
        else:
            for call in waiting:
                if call in toolset.in_flight:
                    call.refused.append(
                        _unsure(toolset.label, call, question, len(waiting), refusal)
                    )
        return mcp.types.ElicitResult(action="cancel")

    return answer


def _unsure(
    label: str, call: Call, question: Elicitation, waiting: int, refusal: MCPToolError
) -> MCPToolError:
    """The error of a call that may be the one whose question was refused."""
    failed = MCPToolError(
        label,
        call.tool,
        f"the server asked {question.message!r} while {waiting} calls were in flight, and the "
        f"answer was refused ({type(refusal).__name__}: {refusal.detail}); the question names "
        "no call, so each call it may be for fails rather than take 'cancelled' for an answer",
    )
    failed.__cause__ = refusal
    return failed

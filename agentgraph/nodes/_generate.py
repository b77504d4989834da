"""The `generate` node: a model answer parsed and validated into a Python type.

```python
@generable("The verdict on a change")
@attrs.frozen
class Review:
    approve: Annotated[bool, Guide("True if the change can be merged as it is")]
    summary: str

review = generate(
    Review,
    instruction="Review the change.",
    context=[Section("Diff", "diff", budget=8000)],
    attempts=2,
    model=model,
)
```

The request has four layers, kept apart: the agent's identity (the context's
system prompt, as the system message), then one user message holding the
selected context sections, the instruction, and the output contract. The
node's input is the first section, labelled `Input` (text as it is, other
values as JSON): `input=False` leaves it out, and `input=Section(...)` names,
clips and places it (listed in `context=` too, it sits at that place). The
contract is `prompt_fragment(T)`, or, when the model takes a schema natively, a
short statement that the answer is JSON of that type while the schema itself
travels in `ChatRequest.output`.

An answer that does not parse or validate is sent back with its problems, up
to `attempts` answers in all; provider errors are not retried here (the
runner's retry policy handles the transient ones). The conversation in
`ctx.history` is neither sent nor changed: put what the model needs in
sections. Each call leaves one `StructuredOutput` trace event.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar, overload

import attrs

from .._core._context import AgentContext, Think
from .._core._errors import OutputError, ResponseFormatError
from .._core._events import ContextEntry, OutputAttempt, PartialOutput, StructuredOutput
from .._core._node import Node
from ..llm._messages import Message, Usage
from ..llm._model import ChatModel, ChatRequest, ChatResponse, OutputSchema, ResponseDone, TextDelta
from ..structured._compile import shape_of
from ..structured._parse import parse_repaired
from ._chat import as_model
from ._output import (
    TEXT,
    Answer,
    compose,
    contract,
    failure,
    feedback,
    native_output,
    output_schema,
    record_of,
    show,
)
from ._partial import Partial, PartialStream
from ._sections import Section, SectionSource, prompt_sections, render_sections, shown_for

if TYPE_CHECKING:
    from .._core._runner import Runtime

__all__ = ("Generate", "generate", "native_output")

T = TypeVar("T")

Instruction = str | Callable[[AgentContext[Any]], str]
"""The task: a fixed text, or a function of the context that returns it."""


@attrs.frozen(eq=False, slots=True, repr=False)
class Generate(Node[Any, T]):
    """Asks `model` for an instance of `output_type`; the output context's input is the value.

    Build it with `generate(...)`. Usage of every attempt is added to `ctx.usage`.
    """

    model: ChatModel
    output_type: Any
    instruction: Instruction
    sections: tuple[Section, ...] = ()
    attempts: int = 1
    strict: bool = False
    temperature: float | None = None
    max_output: int | None = None
    think: Think = None
    output: OutputSchema | None = None
    stream: bool = False
    contract: str = ""
    debug: bool = False
    input_section: Section | None = None
    """The section showing the node's input (also in `sections`), or None when it is not sent."""

    def data_types(self) -> tuple[type[Any], ...]:
        return (self.output_type,) if isinstance(self.output_type, type) else ()

    @property
    def label(self) -> str:
        """What the node asks for: the type's label, or `text`."""
        return "text" if self.output_type is TEXT else shape_of(self.output_type).label

    async def run(self, ctx: AgentContext[Any], rt: Runtime) -> AgentContext[T]:
        instruction = self._instruction(ctx)
        sections = shown_for(self.sections, self.input_section, ctx)
        context, entries = render_sections(sections, ctx)
        messages = [Message.system(ctx.system_prompt)] if ctx.system_prompt else []
        messages.append(Message.user(compose(context, instruction, self.contract)))
        if self.debug:
            show(f"{self.name}: prompt", messages)
        done: list[OutputAttempt] = []
        usage = Usage()
        for number in range(1, self.attempts + 1):
            try:
                answer = await self._ask(self._request(ctx, messages), rt, number)
            except Exception:
                # the answers that came before the provider failed still belong in the trace
                if done:
                    await self._trace(rt, instruction, entries, done, None, usage)
                raise
            response = answer.response
            usage += response.usage
            record = record_of(number, answer)
            done.append(record)
            if self.debug:
                verdict = "ok" if record.ok else "; ".join(record.errors)
                show(f"{self.name}: attempt {number} ({verdict})", [response.message])
            if record.ok:
                await self._trace(rt, instruction, entries, done, answer.value, usage)
                return ctx.with_input(answer.value).add_usage(usage)
            messages += [Message.assistant(record.raw), Message.user(feedback(record.errors))]
        await self._trace(rt, instruction, entries, done, None, usage)
        raise failure(self.name, self.label, done) from answer.error

    def _instruction(self, ctx: AgentContext[Any]) -> str:
        if isinstance(self.instruction, str):
            return self.instruction
        text = self.instruction(ctx)
        if not isinstance(text, str):
            raise TypeError(
                f"the instruction function of {self.name!r} returned {type(text).__name__}, not str"
            )
        return text

    def _request(self, ctx: AgentContext[Any], messages: Sequence[Message]) -> ChatRequest:
        settings = ctx.settings
        return ChatRequest(
            tuple(messages),
            temperature=self.temperature if self.temperature is not None else settings.temperature,
            max_output=self.max_output if self.max_output is not None else settings.max_output,
            think=self.think if self.think is not None else settings.think,
            output=self.output,
            model=settings.model,
            cache=settings.cache,
        )

    async def _ask(self, request: ChatRequest, rt: Runtime, number: int) -> Answer:
        if self.stream and self.output_type is TEXT:
            return await self._ask_streaming_text(request, rt, number)
        if self.stream:
            return await self._ask_streaming(request, rt, number)
        response = await rt.call_model(self.model, request)
        try:
            value, repairs = self._value(response.message.content)
        except OutputError as exc:
            return Answer(response, error=exc)
        return Answer(response, value, repairs=repairs)

    def _value(self, text: str) -> tuple[Any, tuple[str, ...]]:
        if self.output_type is not TEXT:
            return parse_repaired(self.output_type, text, strict=self.strict)
        if not text.strip():
            raise OutputError(
                "the answer is empty", attempts=[text], errors=["the answer is empty"]
            )
        return text.strip(), ()

    async def _ask_streaming_text(self, request: ChatRequest, rt: Runtime, number: int) -> Answer:
        text = ""
        response: ChatResponse | None = None
        async with rt.stream_model(self.model, request) as events:
            async for event in events:
                if isinstance(event, TextDelta):
                    text += event.text
                    partial: Partial[Any] = Partial(text, text=text)
                    await rt.emit(PartialOutput(rt.step, rt.path, number, partial))
                elif isinstance(event, ResponseDone):
                    response = event.response
        if response is None:
            raise ResponseFormatError("the stream ended without its final response")
        try:
            value, _ = self._value(response.message.content)
        except OutputError as exc:
            return Answer(response, error=exc)
        done = Partial(value, complete=True, result=value, text=text)
        await rt.emit(PartialOutput(rt.step, rt.path, number, done))
        return Answer(response, value)

    async def _ask_streaming(self, request: ChatRequest, rt: Runtime, number: int) -> Answer:
        value: Any = None
        error: OutputError | None = None
        async with rt.stream_model(self.model, request) as events:
            parts: PartialStream[Any] = PartialStream(
                events, shape_of(self.output_type), self.strict
            )
            try:
                async for partial in parts:
                    await rt.emit(PartialOutput(rt.step, rt.path, number, partial))
                    value = partial.result
            except OutputError as exc:  # the complete answer did not parse or validate
                error = exc
        response = parts.response
        if response is None:  # unreachable: the stream raises before it could end so
            raise AssertionError("a finished stream has a response")
        return Answer(response, value, error, parts.repairs)

    async def _trace(
        self,
        rt: Runtime,
        instruction: str,
        entries: tuple[ContextEntry, ...],
        attempts: list[OutputAttempt],
        value: Any,
        usage: Usage,
    ) -> None:
        config = {
            "attempts": self.attempts,
            "strict": self.strict,
            "native": self.output is not None,
            "stream": self.stream,
            "temperature": self.temperature,
            "max_output": self.max_output,
            "think": self.think,
        }
        ok = attempts[-1].ok
        await rt.emit(
            StructuredOutput(
                rt.step,
                rt.path,
                self.model.name,
                self.label,
                instruction,
                MappingProxyType(config),
                entries,
                tuple(attempts),
                ok,
                value,
                usage,
            )
        )


@overload
def generate(
    tp: type[T],
    *,
    instruction: Instruction,
    model: ChatModel | str,
    context: Sequence[Section] | Mapping[str, SectionSource] = (),
    attempts: int = 1,
    strict: bool = False,
    max_output: int | None = None,
    temperature: float | None = None,
    think: Think = None,
    native: bool | None = None,
    stream: bool = False,
    debug: bool = False,
    input: bool | Section = True,
    name: str = "generate",
) -> Generate[T]: ...
@overload
def generate(
    *,
    instruction: Instruction,
    model: ChatModel | str,
    context: Sequence[Section] | Mapping[str, SectionSource] = (),
    attempts: int = 1,
    strict: bool = False,
    max_output: int | None = None,
    temperature: float | None = None,
    think: Think = None,
    native: bool | None = None,
    stream: bool = False,
    debug: bool = False,
    input: bool | Section = True,
    name: str = "generate",
) -> Generate[str]: ...
@overload
def generate(
    tp: Any,
    *,
    instruction: Instruction,
    model: ChatModel | str,
    context: Sequence[Section] | Mapping[str, SectionSource] = (),
    attempts: int = 1,
    strict: bool = False,
    max_output: int | None = None,
    temperature: float | None = None,
    think: Think = None,
    native: bool | None = None,
    stream: bool = False,
    debug: bool = False,
    input: bool | Section = True,
    name: str = "generate",
) -> Generate[Any]: ...
def generate(
    tp: Any = TEXT,
    *,
    instruction: Instruction,
    model: ChatModel | str,
    context: Sequence[Section] | Mapping[str, SectionSource] = (),
    attempts: int = 1,
    strict: bool = False,
    max_output: int | None = None,
    temperature: float | None = None,
    think: Think = None,
    native: bool | None = None,
    stream: bool = False,
    debug: bool = False,
    input: bool | Section = True,
    name: str = "generate",
) -> Generate[Any]:
    """A node that asks `model` for an instance of `tp` (see the module docs).

    Without `tp` the answer is free text (a `str`): the same prompt layers,
    attempts and trace, with no answer format; only an empty answer fails.

    Args:
        tp: the type of the answer: any type `json_schema` accepts.
        instruction: the task, or a function of the context returning it.
        model: the model to ask, or a `"provider:model"` string (see `model_from_string`).
        context: the sections to show: `Section`s, or a mapping of label to
            source (a state key or a function of the context).
        attempts: answers to ask for in all; each failed one is sent back with
            its problems.
        strict: validate without coercion and refuse unknown fields.
        max_output, temperature, think: override the context's settings.
        native: send the schema as `ChatRequest.output`. `None` decides by the
            model's `supports_output_schema` attribute (and a class at the root).
        stream: stream the answer and emit a `PartialOutput` event per change.
            Streamed answers are recorded like any other model call.
        debug: print the assembled prompt and each raw answer to standard
            error (secrets masked), while developing a prompt.
        input: send the node's input as a section of the prompt (the first,
            labelled `Input`; not when the input is None). `False` leaves it
            out; a `Section` reading the input names it and may clip it
            (`Section("Diff", lambda ctx: ctx.input, budget=8000)`), and when
            the same section is in `context=` it is shown at that place.
        name: the node's name.

    Raises:
        UnsupportedType: `tp` has no JSON form, or `native=True` for a type
            whose root is not a class.
    """
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
        raise ValueError(f"attempts must be an int >= 1, not {attempts!r}")
    if isinstance(instruction, str):
        if not instruction.strip():
            raise ValueError("the instruction must not be empty")
    elif not callable(instruction):
        raise TypeError(f"instruction is a str or a function, not {type(instruction).__name__}")
    model = as_model(model, f"generate {name!r}")
    if tp is str:  # a `str` answer is free text: nothing to parse
        tp = TEXT
    if tp is not TEXT:
        shape_of(tp)  # an unsupported type fails here, not at the first run
    output = output_schema(tp, native, model)
    sections, shown = prompt_sections(context, input)
    return Generate(
        model,
        tp,
        instruction,
        sections,
        attempts,
        strict,
        temperature,
        max_output,
        think,
        output,
        stream,
        contract(tp, output),
        debug,
        shown,
        name=name,
    )

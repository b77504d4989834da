"""`generate` sends the node's input: the `input=` option, and `str` answers as free text."""

from __future__ import annotations

import attrs
import pytest

from agentgraph import (
    AgentContext,
    GraphRunner,
    Section,
    StructuredOutput,
    generate,
)
from agentgraph.testing import ScriptedModel

pytestmark = pytest.mark.anyio


@attrs.frozen
class Change:
    title: str
    lines: int


async def run(node, ctx, sinks=()):
    return await GraphRunner(sinks=list(sinks)).run(node, ctx)


def prompt(model: ScriptedModel) -> str:
    (request,) = model.requests
    return request.messages[-1].content


async def test_the_input_is_the_first_section_of_the_prompt_and_text_stays_text():
    model = ScriptedModel("ok")
    node = generate(instruction="Answer.", context={"Notes": "notes"}, model=model)
    await run(node, AgentContext("What is 2 + 3?", state={"notes": "n"}))
    assert prompt(model).startswith(
        "## Context\n\n### Input\nWhat is 2 + 3?\n\n### Notes\nn\n\n## Task\n\nAnswer."
    )


async def test_an_input_that_is_not_text_is_sent_as_json():
    model = ScriptedModel("ok")
    await run(generate(instruction="Sum up.", model=model), AgentContext(Change("fix", 3)))
    assert '### Input\n{\n  "title": "fix",\n  "lines": 3\n}' in prompt(model)


async def test_input_false_leaves_it_out_and_a_none_input_is_not_shown():
    model = ScriptedModel("ok", "ok")
    await run(generate(instruction="Go.", model=model, input=False), AgentContext("secret"))
    await run(generate(instruction="Go.", model=model), AgentContext(None))
    for request in model.requests:
        assert request.messages[-1].content == "## Task\n\nGo."


async def test_a_section_names_and_clips_the_input_and_the_trace_says_so():
    model = ScriptedModel("ok")
    events = []
    shown = Section("Diff", lambda ctx: ctx.input, budget=5)
    node = generate(instruction="Review.", model=model, input=shown)
    await run(node, AgentContext("+added line"), [events.append])
    assert prompt(model).startswith(
        "## Context\n\n### Diff (clipped: the first 5 of 11 characters)\n+adde\n"
    )
    (out,) = [e for e in events if isinstance(e, StructuredOutput)]
    assert [(c.label, c.clipped) for c in out.context] == [("Diff", True)]


async def test_a_section_listed_in_context_places_the_input_there():
    model = ScriptedModel("ok")
    shown = Section("Question", lambda ctx: ctx.input)
    node = generate(
        instruction="Answer.", model=model, context=[Section("Notes", "notes"), shown], input=shown
    )
    await run(node, AgentContext("why?", state={"notes": "n"}))
    assert prompt(model).startswith("## Context\n\n### Notes\nn\n\n### Question\nwhy?\n\n")


async def test_the_default_input_section_is_traced_as_the_context_input():
    model = ScriptedModel("ok")
    events = []
    await run(generate(instruction="Go.", model=model), AgentContext("hi"), [events.append])
    (out,) = [e for e in events if isinstance(e, StructuredOutput)]
    assert [(c.label, c.source, c.text) for c in out.context] == [("Input", "ctx.input", "hi")]


def test_input_takes_a_bool_or_a_section_and_its_label_must_be_free():
    model = ScriptedModel("ok")
    with pytest.raises(TypeError, match="input= is True, False or a Section, not str"):
        generate(instruction="Go.", model=model, input="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="two context sections are labelled 'Input'"):
        generate(instruction="Go.", model=model, context={"Input": "x"})


async def test_generate_str_is_free_text_not_json():
    model = ScriptedModel("Plain words, not JSON.")
    node = generate(str, instruction="Say something.", model=model)
    assert node.label == "text"
    out = await run(node, AgentContext("hello"))
    assert out.input == "Plain words, not JSON."
    assert "## Answer format" not in prompt(model)

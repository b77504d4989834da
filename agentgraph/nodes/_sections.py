"""Labelled context sections for prompts, each within a character budget.

```python
Section("Diff", "diff", budget=4000)                 # the state key "diff"
Section("Request", lambda ctx: ctx.input)            # a function of the context
```

A section's text is the value itself when it is a string, else its JSON
(indented). A section longer than its budget is cut to the budget, and the cut
is marked twice in the prompt: in the heading and by a closing line saying how
much was left out. The trace records the same facts as a `ContextEntry`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs
import orjson

from .._core._context import AgentContext
from .._core._events import ContextEntry
from .._core._json import to_data

__all__ = (
    "INPUT",
    "Section",
    "SectionSource",
    "as_sections",
    "input_section",
    "prompt_sections",
    "render_sections",
    "shown_for",
)

SectionSource = str | Callable[[AgentContext[Any]], Any]
"""Where a section's value comes from: a key of `ctx.state`, or a function of the context."""


def _check_label(instance: Any, attribute: Any, value: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"a section label must be a non-empty string, not {value!r}")


def _check_source(instance: Any, attribute: Any, value: Any) -> None:
    if not (isinstance(value, str) or callable(value)):
        raise TypeError(
            f"a section's source is a state key or a function of the context, "
            f"not {type(value).__name__}"
        )


def _check_budget(instance: Any, attribute: Any, value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise ValueError(f"a section budget is a number of characters >= 0, not {value!r}")


@attrs.frozen
class Section:
    """One labelled piece of context in a `generate` prompt.

    Args:
        label: the section's heading.
        source: a key of `ctx.state`, or a function of the context (sync).
        budget: the most characters of the section the prompt may show;
            `None` for no limit.
    """

    label: str = attrs.field(validator=_check_label)
    source: SectionSource = attrs.field(validator=_check_source)
    budget: int | None = attrs.field(default=None, kw_only=True, validator=_check_budget)

    def describe(self) -> str:
        """Where the section's text comes from, for the trace."""
        if isinstance(self.source, str):
            return f"state[{self.source!r}]"
        return getattr(self.source, "__qualname__", None) or type(self.source).__name__

    def text(self, ctx: AgentContext[Any]) -> str:
        """The section's full text for `ctx`.

        Raises:
            KeyError: the state key is not in `ctx.state`.
            ContextEncodingError: the value has no JSON form.
        """
        if isinstance(self.source, str):
            if self.source not in ctx.state:
                raise KeyError(
                    f"context section {self.label!r} reads the state key {self.source!r}, "
                    f"which the context does not hold (keys: {sorted(ctx.state)})"
                )
            value = ctx.state[self.source]
        else:
            value = self.source(ctx)
        if isinstance(value, str):
            return value
        data = to_data(value, where=f"section {self.label!r}")
        return orjson.dumps(data, option=orjson.OPT_INDENT_2).decode()


def as_sections(spec: Sequence[Section] | Mapping[str, SectionSource]) -> tuple[Section, ...]:
    """Sections from a sequence of `Section`s or a mapping of label to source (no budget)."""
    items: Iterable[Section]
    if isinstance(spec, Mapping):
        items = [Section(label, source) for label, source in spec.items()]
    else:
        items = spec
    sections = tuple(items)
    labels: set[str] = set()
    for section in sections:
        if not isinstance(section, Section):
            raise TypeError(f"context= takes Section objects, not {type(section).__name__}")
        if section.label in labels:
            raise ValueError(f"two context sections are labelled {section.label!r}")
        labels.add(section.label)
    return sections


def render_sections(
    sections: Sequence[Section], ctx: AgentContext[Any]
) -> tuple[str, tuple[ContextEntry, ...]]:
    """The prompt text of `sections` for `ctx`, and what each one showed."""
    blocks: list[str] = []
    entries: list[ContextEntry] = []
    for section in sections:
        text = section.text(ctx)
        budget = section.budget
        source = section.describe()
        if budget is None or len(text) <= budget:
            blocks.append(f"### {section.label}\n{text}")
            entries.append(ContextEntry(section.label, len(text), len(text), False, source, text))
            continue
        left_out = len(text) - budget
        blocks.append(
            f"### {section.label} (clipped: the first {budget:,} of {len(text):,} characters)\n"
            f"{text[:budget]}\n[... {left_out:,} more characters clipped]"
        )
        shown = text[:budget]
        entries.append(ContextEntry(section.label, len(text), budget, True, source, shown))
    return "\n\n".join(blocks), tuple(entries)


def _node_input(ctx: AgentContext[Any]) -> Any:
    return ctx.input


_node_input.__qualname__ = "ctx.input"  # what the trace names as the section's source

INPUT = Section("Input", _node_input)
"""The section `generate` shows the node's input in by default."""


def input_section(spec: bool | Section) -> Section | None:
    """The section `generate(input=...)` shows the node's input in, or None when not sent."""
    if isinstance(spec, Section):
        return spec
    if spec is True:
        return INPUT
    if spec is False:
        return None
    raise TypeError(f"input= is True, False or a Section, not {type(spec).__name__}")


def prompt_sections(
    context: Sequence[Section] | Mapping[str, SectionSource], spec: bool | Section
) -> tuple[tuple[Section, ...], Section | None]:
    """`generate`'s sections from `context=` and `input=`, and the one showing the input.

    The input's section comes first unless it is not sent or `context=` already places it.
    """
    sections = as_sections(context)
    shown = input_section(spec)
    if shown is None or shown in sections:
        return sections, shown
    return as_sections((shown, *sections)), shown  # its label must differ from the others'


def shown_for(
    sections: tuple[Section, ...], shown: Section | None, ctx: AgentContext[Any]
) -> tuple[Section, ...]:
    """The sections a run with `ctx` shows: the input's section is left out when it is None."""
    if ctx.input is None and shown is not None:
        return tuple(s for s in sections if s is not shown)
    return sections

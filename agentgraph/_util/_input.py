"""How a run's input is read from text, the same in `agentgraph run --input` and the live page.

JSON when the text is valid JSON (`42`, `true`, `[1, 2]`, `{"a": 1}`,
`"quoted text"`), the text itself otherwise (`hello`). Text that starts like a
JSON object, array or string (`{`, `[`, `"`) must be valid JSON, since it was
clearly meant as such.
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ("read_input",)

_JSON_STARTS = ("{", "[", '"')


def read_input(text: str) -> Any:
    """The value `text` stands for; raises `ValueError` for text that is broken JSON."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        if text.lstrip().startswith(_JSON_STARTS):
            raise ValueError(f"looks like JSON but does not parse: {exc}") from exc
        return text

"""Structured output: types described by annotations, JSON Schema, lenient parsing.

A type (an attrs class, a dataclass, or a composition of lists, optionals,
literals, enums and tagged unions) is compiled once into a shape that gives its
JSON Schema, a prompt fragment and a validator. `parse` turns model text into a
value of the type; `loads_lenient` is the repairing JSON loader underneath, and
`repair_json` returns its value as a `Repaired` that names the repairs applied.
"""

from ._guide import Guide as Guide
from ._guide import generable as generable
from ._lenient import Repaired as Repaired
from ._lenient import loads_lenient as loads_lenient
from ._lenient import repair_json as repair_json
from ._parse import parse as parse
from ._parse import try_parse as try_parse
from ._schema import describe as describe
from ._schema import from_tool_call as from_tool_call
from ._schema import json_schema as json_schema
from ._schema import prompt_fragment as prompt_fragment
from ._schema import tools_for_union as tools_for_union
from ._schema import validate as validate

__all__ = (
    "Guide",
    "Repaired",
    "describe",
    "from_tool_call",
    "generable",
    "json_schema",
    "loads_lenient",
    "parse",
    "prompt_fragment",
    "repair_json",
    "tools_for_union",
    "try_parse",
    "validate",
)

from .._util._public import publish as _publish

_publish(__name__, __all__, globals())

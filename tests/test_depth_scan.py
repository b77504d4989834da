"""The depth check on valid JSON agrees with a walk of the value, whichever test decides."""

import random
from typing import Any

import orjson
import pytest

from agentgraph import OutputError, loads_lenient, parse
from agentgraph.structured import _depth

LEAVES = [1, 'a]b{c\\"}[', None, "x\\\\", [], {}, '""[[[', "]]]}}}", "é[ü", "\n[\t", ""]


def depth(value) -> int:
    if isinstance(value, dict):
        return 1 + max([depth(v) for v in value.values()] + [0])
    if isinstance(value, list):
        return 1 + max([depth(v) for v in value] + [0])
    return 0


def nested(rng: random.Random, levels: int):
    """A value `levels` deep, with siblings and keys full of brackets, quotes and escapes."""
    if levels == 0:
        return rng.choice(LEAVES)
    siblings = [rng.choice(LEAVES) for _ in range(rng.randint(0, 2))]
    if rng.random() < 0.5:
        return [*siblings, nested(rng, levels - 1)]
    keys = {f'k{i}]"{{\\n': v for i, v in enumerate(siblings)}
    return {**keys, 'deep[\\"': nested(rng, levels - 1)}


@pytest.mark.parametrize("seed", range(4))
def test_values_past_the_limit_are_refused_and_the_rest_kept(seed):
    rng = random.Random(seed)
    for _ in range(150):
        value = nested(rng, rng.randint(95, 106))
        text = orjson.dumps(value).decode()
        if depth(value) > 100:
            with pytest.raises(OutputError, match="nests deeper than 100"):
                loads_lenient(text)
        else:
            assert loads_lenient(text) == value


def test_a_wide_shallow_document_is_kept_whole():
    items = [
        {"id": i, "name": f"[n{i}]", "tags": ["{", "}"], "sub": {"a": [1]}} for i in range(500)
    ]
    text = orjson.dumps({"items": items}).decode()
    assert parse(dict, text) == {"items": items}


@pytest.mark.parametrize("scan_alone", [False, True])
@pytest.mark.parametrize("seed", range(2))
def test_parse_any_keeps_the_same_limit(seed, scan_alone, monkeypatch):
    if scan_alone:  # without the fast test (an orjson whose limit is another)
        monkeypatch.setattr(_depth, "_WRAPPER", None)
    rng = random.Random(seed)
    for _ in range(60):
        value = nested(rng, rng.randint(97, 104))
        text = orjson.dumps(value).decode()
        if depth(value) > 100:
            with pytest.raises(OutputError, match="nests deeper than 100"):
                parse(Any, text)
        else:
            assert parse(Any, text) == value


def chain(levels: int, kind: str) -> str:
    """`levels` nested containers of one kind, the shortest text for that depth."""
    if kind == "dict":
        return '{"":' * (levels - 1) + "{}" + "}" * (levels - 1)
    return "[" * levels + "]" * levels


@pytest.mark.parametrize("kind", ["dict", "list"])
@pytest.mark.parametrize("levels", [99, 100, 101, 102, 500, 1024])
@pytest.mark.parametrize("padding", [0, 3, 10_000])
def test_the_shortest_texts_around_the_limit(kind, levels, padding):
    """Texts at the length bounds, and long ones that pass the bracket count."""
    text = chain(levels, kind) + " " * padding
    if levels > 100:
        with pytest.raises(OutputError, match="nests deeper than 100"):
            parse(Any, text)
        with pytest.raises(OutputError, match="nests deeper than 100"):
            loads_lenient(text)
    else:
        assert parse(Any, text) == orjson.loads(text)
        assert loads_lenient(text) == orjson.loads(text)


def test_orjson_writes_the_value_at_the_limit_and_not_past_it():
    # The fast test is in use with the orjson installed; without it the scan decides alone.
    assert _depth._WRAPPER is not None


@pytest.mark.parametrize("dicts", range(0, 102, 5))
@pytest.mark.parametrize("total", [99, 100, 101, 102])
def test_dicts_then_lists_around_the_limit(dicts, total):
    """Short texts whose lists open late, where the position of the first `[` bounds them."""
    dicts = min(dicts, total)
    lists = total - dicts
    text = '{"":' * dicts + "[" * lists + "]" * lists + "}" * dicts
    if lists == 0:
        text = '{"":' * (dicts - 1) + "{}" + "}" * (dicts - 1)
    if total > 100:
        with pytest.raises(OutputError, match="nests deeper than 100"):
            parse(Any, text)
    else:
        assert parse(Any, text) == orjson.loads(text)

"""The depth check on valid JSON reads the text's brackets, and agrees with a walk of the value."""

import random

import orjson
import pytest

from agentgraph import OutputError, loads_lenient, parse

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

"""Write ``benchmarks/data/lenient_corpus.jsonl``: broken model answers and their intended values.

Each line is one case: ``{"id", "kind", "text", "expected", "partial"}``. ``kind`` names how
the answer is broken (the way models break JSON: cut off mid-string, prose around, code
fences, Python literals, trailing commas, mixed and smart quotes, missing commas,
unescaped inner quotes, comments, unquoted keys and values, loose numbers, stray text,
missing values; and two shapes from json_repair's own tests, capitalised literals and
doubled quotes), or is ``refusal`` for an answer whose only right reading is none at all
(``expected`` is null): a bracket inside a broken value, two different values, NaN, a
final answer cut off, sets, units after numbers and the like. ``partial`` marks a
streamed answer read as a prefix (``partial=True``).

The payloads are built from templates of what structured-output prompts ask for (code
reviews, contacts, tasks, extracted entities, tool arguments) with a fixed seed, so the
file is the same on every run::

    python benchmarks/make_lenient_corpus.py    # rewrites the file
"""

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent / "data" / "lenient_corpus.jsonl"
SEED = 15
PER_KIND = 34  # 17 kinds: 578 broken answers
REFUSALS = 100
# Shapes found by running json_repair's own tests through the parser, drawn after the
# rest from a seed of their own so that the cases above stay as they were.
OUTSIDE_SEED = 16
OUTSIDE_REFUSALS = 50  # 5 shapes

FIRST = ("Ann", "Bob", "Chen", "Dara", "Emil", "Fatima", "Goran", "Hana", "Ivo", "Jun")
LAST = ("Smith", "Okafor", "Larsen", "Novak", "Rossi", "Tanaka", "Silva", "Berg")
CITIES = ("Oslo", "Lagos", "Lima", "Kyiv", "Osaka", "Porto", "Quito", "Riga")
TEXT = (
    "the loop never ends when the list is empty so the caller waits forever and the retry "
    "budget is spent before the guard clause runs add a test for the edge case"
)
WORDS = tuple(TEXT.split())
TAGS = ("bug", "style", "perf", "security", "tests", "docs")
PROSE_BEFORE = (
    "Sure! Here is the JSON you asked for:",
    "Here you go:",
    "Based on the text, the result is",
    "I analysed the code. Result:",
    "Certainly.",
)
PROSE_AFTER = ("Let me know if you need anything else.", "Hope this helps!", "", "Done.")


def sentence(rng: random.Random, low: int = 3, high: int = 9) -> str:
    start = rng.randrange(len(WORDS) - high)
    return " ".join(WORDS[start : start + rng.randint(low, high)])


def payload(rng: random.Random) -> dict[str, Any]:
    """One answer of a kind structured-output prompts ask for."""
    kind = rng.randrange(4)
    if kind == 0:
        return {
            "approve": rng.random() < 0.5,
            "score": round(rng.uniform(0, 10), 1),
            "summary": sentence(rng),
            "issues": [
                {"line": rng.randint(1, 400), "message": sentence(rng), "tag": rng.choice(TAGS)}
                for _ in range(rng.randint(1, 3))
            ],
        }
    if kind == 1:
        return {
            "name": f"{rng.choice(FIRST)} {rng.choice(LAST)}",
            "age": rng.randint(18, 90),
            "city": rng.choice(CITIES),
            "email": None if rng.random() < 0.3 else f"{rng.choice(FIRST).lower()}@example.org",
        }
    if kind == 2:
        return {
            "title": sentence(rng, 2, 5),
            "done": rng.random() < 0.5,
            "priority": rng.randint(1, 5),
            "tags": rng.sample(TAGS, rng.randint(0, 3)),
        }
    return {
        "tool": rng.choice(("search", "lookup", "fetch_page")),
        "query": sentence(rng, 2, 6),
        "limit": rng.randint(1, 50),
    }


# -- writing a value the way a model would -----------------------------------------------


def dump(value: Any, *, indent: bool = False) -> str:
    if indent:
        return json.dumps(value, indent=2, ensure_ascii=False)
    return json.dumps(value, ensure_ascii=False)


def write(
    value: Any,
    *,
    key: Callable[[str], str] = lambda k: json.dumps(k, ensure_ascii=False),
    string: Callable[[str], str] = lambda s: json.dumps(s, ensure_ascii=False),
    scalar: Callable[[Any], str] = lambda v: json.dumps(v),
    comma: str = ", ",
    trailing: bool = False,
) -> str:
    """JSON text of `value` with each part written by the function given for it."""

    def go(item: Any) -> str:
        if isinstance(item, dict):
            parts = [f"{key(k)}: {go(v)}" for k, v in item.items()]
            return "{" + comma.join(parts) + ("," if trailing and parts else "") + "}"
        if isinstance(item, list):
            parts = [go(v) for v in item]
            return "[" + comma.join(parts) + ("," if trailing and parts else "") + "]"
        if isinstance(item, str):
            return string(item)
        return scalar(item)

    return go(value)


def python_scalar(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return repr(value)
    return json.dumps(value)


def single(text: str) -> str:
    return "'" + text.replace("'", "\\'") + "'"


# -- the kinds of broken answer ----------------------------------------------------------


def prose(rng: random.Random, value: Any) -> str:
    body = dump(value, indent=rng.random() < 0.5)
    return f"{rng.choice(PROSE_BEFORE)}\n{body}\n{rng.choice(PROSE_AFTER)}"


def fence(rng: random.Random, value: Any) -> str:
    tag = rng.choice(("json", "JSON", ""))
    body = write(value, trailing=rng.random() < 0.5)
    return f"{rng.choice(PROSE_BEFORE)}\n```{tag}\n{body}\n```\n{rng.choice(PROSE_AFTER)}"


def python_literals(rng: random.Random, value: Any) -> str:
    return write(value, key=single, string=single, scalar=python_scalar)


def trailing_commas(rng: random.Random, value: Any) -> str:
    return write(value, trailing=True, comma=rng.choice((", ", ",\n  ")))


def mixed_quotes(rng: random.Random, value: Any) -> str:
    def key(text: str) -> str:
        return single(text) if rng.random() < 0.5 else json.dumps(text)

    return write(
        value, key=key, string=lambda s: single(s) if rng.random() < 0.5 else json.dumps(s)
    )


def missing_commas(rng: random.Random, value: Any) -> str:
    return write(value, comma=rng.choice(("\n  ", " ", "\n")))


def inner_quotes(rng: random.Random, value: Any) -> tuple[str, Any]:
    quoted = rng.choice(("hi", "retry", "guard", "ok", "empty"))
    phrase = f'the "{quoted}" case {sentence(rng, 1, 3)}'
    target = _string_field(value)
    value = {**value, target: phrase}
    text = dump(value).replace(json.dumps(phrase, ensure_ascii=False), f'"{phrase}"')
    return text, value


def _string_field(value: dict[str, Any]) -> str:
    names = [k for k, v in value.items() if isinstance(v, str)]
    return names[0] if names else "note"


def comments(rng: random.Random, value: Any) -> str:
    lines = dump(value, indent=True).split("\n")
    style = rng.choice(("//", "#", "/*"))
    out = []
    for line in lines:
        out.append(line)
        if line.rstrip().endswith(",") and rng.random() < 0.5:
            note = sentence(rng, 2, 4)
            out.append(f"  /* {note} */" if style == "/*" else f"  {style} {note}")
    return "\n".join(out)


def unquoted_keys(rng: random.Random, value: Any) -> str:
    return write(value, key=lambda k: k)


def unquoted_values(rng: random.Random, value: Any) -> tuple[str, Any]:
    word = rng.choice(CITIES + tuple(f"{f} {last}" for f in FIRST[:3] for last in LAST[:2]))
    target = _string_field(value)
    value = {**value, target: word}
    text = dump(value).replace(json.dumps(word), word)
    return text, value


def smart_quotes(rng: random.Random, value: Any) -> str:
    def curly(text: str) -> str:
        return "\u201c" + text + "\u201d"

    if rng.random() < 0.5:
        return write(value, key=curly)
    return write(value, key=curly, string=curly)


def loose_numbers(rng: random.Random, value: Any) -> tuple[str, Any]:
    number = rng.choice((0.25, 0.5, 0.75))
    form = rng.choice(("lead", "trail", "plus"))
    if form == "lead":
        value = {**value, "weight": number}
        return dump(value).replace(f'"weight": {number}', f'"weight": {str(number)[1:]}'), value
    if form == "trail":
        value = {**value, "ratio": 2.0}
        return dump(value).replace('"ratio": 2.0', '"ratio": 2.'), value
    value = {**value, "delta": 3}
    return dump(value).replace('"delta": 3', '"delta": +3'), value


def stray_text(rng: random.Random, value: Any) -> str:
    lines = dump(value, indent=True).split("\n")
    index = next(i for i, line in enumerate(lines) if line.rstrip().endswith(","))
    lines.insert(index + 1, "  " + rng.choice(("...", "(and so on)", "etc.", "// ...")))
    return "\n".join(lines)


def missing_value(rng: random.Random, value: Any) -> tuple[str, Any]:
    text = dump(value)
    return text[:-1] + ', "notes": }', value


def control_characters(rng: random.Random, value: Any) -> tuple[str, Any]:
    target = _string_field(value)
    text_value = f"{sentence(rng, 2, 4)}\n{sentence(rng, 2, 4)}\t(see above)"
    value = {**value, target: text_value}
    raw = json.dumps(text_value, ensure_ascii=False)[1:-1].replace("\\n", "\n").replace("\\t", "\t")
    return dump(value).replace(json.dumps(text_value, ensure_ascii=False), f'"{raw}"'), value


def truncated(rng: random.Random, value: Any) -> tuple[str, Any, bool]:
    """A stream cut off inside a string: the value is what the string held so far."""
    target = _string_field(value)
    text = dump(value)
    full = json.dumps(value[target], ensure_ascii=False)
    start = text.index(f'"{target}": ') + len(target) + 4
    cut = start + 1 + rng.randint(1, max(1, len(full) - 3))
    partial_value = json.loads(text[start:cut] + '"')
    kept = {}
    for key, item in value.items():
        if key == target:
            kept[key] = partial_value
            break
        kept[key] = item
    return text[:cut], kept, True


def cased_literals(rng: random.Random, value: Any) -> tuple[str, Any]:
    """`TRUE`, `FALSE`, `NULL` and `Null`, as some models write JSON's literals."""
    value = {**value, "verified": rng.choice((True, False, None))}

    def scalar(item: Any) -> str:
        if item is None:
            return rng.choice(("NULL", "Null"))
        return str(item).upper() if isinstance(item, bool) else json.dumps(item)

    return write(value, scalar=scalar), value


def doubled_quotes(rng: random.Random, value: Any) -> str:
    """Every quote doubled, as JSON kept in a CSV cell comes out."""
    return write(value, key=lambda k: f'""{k}""', string=lambda s: f'""{s}""')


def combined(rng: random.Random, value: Any) -> str:
    body = write(value, key=lambda k: k, string=single, scalar=python_scalar, trailing=True)
    return f"{rng.choice(PROSE_BEFORE)}\n```json\n{body}\n```"


KINDS: dict[str, Callable[[random.Random, Any], Any]] = {
    "prose around": prose,
    "code fence": fence,
    "python literals": python_literals,
    "trailing commas": trailing_commas,
    "mixed quotes": mixed_quotes,
    "missing commas": missing_commas,
    "inner quotes": inner_quotes,
    "comments": comments,
    "unquoted keys": unquoted_keys,
    "unquoted values": unquoted_values,
    "smart quotes": smart_quotes,
    "loose numbers": loose_numbers,
    "stray text": stray_text,
    "missing value": missing_value,
    "control characters": control_characters,
    "truncated mid-string": truncated,
    "combined": combined,
}
OUTSIDE_KINDS: dict[str, Callable[[random.Random, Any], Any]] = {
    "cased literals": cased_literals,
    "doubled quotes": doubled_quotes,
}


# -- answers whose only right reading is a refusal ----------------------------------------


def refusal(rng: random.Random, index: int) -> str:
    value = payload(rng)
    text = dump(value)
    field = _string_field(value)
    shape = index % 10
    if shape == 0:  # a string that never closes, with an object inside it
        written = json.dumps(value[field], ensure_ascii=False) if field in value else '""'
        return text.replace(written, written[:-1] + ', {"k": 1}', 1)
    if shape == 1:  # two different answers
        return f"Option A: {dump(value)}\nOption B: {dump(payload(rng))}"
    if shape == 2:  # not a number JSON has
        return text[:-1] + f', "ratio": {rng.choice(("NaN", "Infinity", "-Infinity"))}}}'
    if shape == 3:  # a final answer cut off by the output limit
        return text[: rng.randint(len(text) // 3, len(text) - 2)]
    if shape == 4:  # a set, not a list
        return text[:-1] + ', "tags": {"bug", "perf"}}'
    if shape == 5:  # units after a number
        return text[:-1] + f', "width": {rng.randint(2, 90)}{rng.choice(("px", "%", "ms", "kg"))}}}'
    if shape == 6:  # a comment that never closes swallows the rest
        return text[:-1] + ', /* the remaining fields: {"k": 1}'
    if shape == 7:  # a key without its value
        return text[:-1] + ", reviewed}"
    if shape == 8:  # words where a value belongs in a list
        return text[:-1] + f', "tags": [{rng.choice(TAGS)}, {rng.choice(TAGS)}]}}'
    # an inner value quoted inside a string whose quotes break it
    return text.replace(f'"{field}": "', f'"{field}": "use {{"verbose": true}}, "', 1)


def outside_refusal(rng: random.Random, index: int) -> str:
    """The shapes json_repair's tests hold that have no safe reading."""
    value = payload(rng)
    text = dump(value)
    field = _string_field(value)
    written = json.dumps(value[field], ensure_ascii=False) if field in value else '""'
    shape = index % 5
    if shape == 0:  # a bracket closed before the members that follow it
        return text.replace(', "', '}, "', 1)
    if shape == 1:  # a key no parser reads after a string: the next member, or text?
        return text.replace(written, f"{written}, {rng.randint(1, 9)}: {written}", 1)
    if shape == 2:  # a list item with one quote: a word missing its opening quote, or text?
        first, second, third = rng.sample(TAGS, 3)
        return text[:-1] + f', "tags": ["{first}" {second}", "{third}"]}}'
    if shape == 3:  # a quote doubled at the start only: an empty string, or text?
        return text.replace(written, '"' + written, 1)
    return text[:-1] + rng.choice((', "pair": (1, 2)}', ', "empty": ()}'))  # a tuple


def broken(rng: random.Random, kinds: dict[str, Callable[[random.Random, Any], Any]]) -> list:
    cases: list[dict[str, Any]] = []
    for kind, make in kinds.items():
        for _ in range(PER_KIND):
            value = payload(rng)
            made = make(rng, value)
            partial = False
            if isinstance(made, tuple):
                text, value, *rest = made
                partial = bool(rest and rest[0])
            else:
                text = made
            cases.append({"kind": kind, "text": text, "expected": value, "partial": partial})
    return cases


def build() -> list[dict[str, Any]]:
    rng = random.Random(SEED)
    cases = broken(rng, KINDS)
    for index in range(REFUSALS):
        text = refusal(rng, index)
        cases.append({"kind": "refusal", "text": text, "expected": None, "partial": False})
    rng = random.Random(OUTSIDE_SEED)
    cases += broken(rng, OUTSIDE_KINDS)
    for index in range(OUTSIDE_REFUSALS):
        text = outside_refusal(rng, index)
        cases.append({"kind": "refusal", "text": text, "expected": None, "partial": False})
    for number, case in enumerate(cases):
        case["id"] = number
    return cases


def main() -> None:
    OUT.parent.mkdir(exist_ok=True)
    lines = (json.dumps(case, ensure_ascii=False, sort_keys=True) for case in build())
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {OUT.name}")


if __name__ == "__main__":
    main()

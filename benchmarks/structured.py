"""Structured output parsing: agentgraph's parser beside orjson and the json-repair package.

Three measurements, all on documents generated here from a fixed seed:

- clean: valid JSON of three sizes; µs per document for bare ``orjson.loads``,
  ``loads_lenient``, ``parse(Any, ...)``, typed ``parse(Review, ...)``, ``orjson.loads`` +
  ``validate`` (the hand-written typed baseline) and ``json_repair.loads``.
- messy: the same documents as models send them (code fences, prose, trailing commas,
  Python literals, unquoted keys, comments, raw newlines in strings, a cut-off stream);
  how many each parser recovers exactly, how many it turns into a different value, how
  many it refuses, and µs per document.
- streaming: the cost of re-parsing the growing answer at every chunk, as
  ``stream_structured`` does.

Usage::

    python benchmarks/structured.py          # full run; writes its section of RESULTS.md
    python benchmarks/structured.py --quick  # small run; prints the section only

Only the ``## Structured output parsing`` section of RESULTS.md is replaced; the rest of
the file is left as it is. The section is rendered in ``_structured_report.py``.
"""

import random
import sys
from collections.abc import Callable
from dataclasses import dataclass
from time import perf_counter
from typing import Any, Literal

import _structured_report as report
import attrs
import orjson
from _common import load_average, publish, section_parser
from _common import write_section as write_section  # re-exported: the section writer
from _structured_report import HEADING as HEADING  # re-exported: the section's heading

from agentgraph import OutputError, parse, validate
from agentgraph.structured._lenient import loads_lenient
from agentgraph.structured._prefix import PrefixParser

TEXT = (
    "the function does not check for an empty list before it reads the first item "
    "so a call with no data raises and the caller's retry loop never ends; rename "
    'the variable, add a "guard" clause and a test for the edge case it misses'
)
WORDS = tuple(TEXT.split())
TAGS = ("bug", "style", "perf", "security", "tests", "docs")


@attrs.frozen
class Issue:
    line: int
    severity: Literal["low", "medium", "high"]
    message: str
    tags: tuple[str, ...] = ()


@attrs.frozen
class Review:
    approve: bool
    score: float
    summary: str
    reviewer: str | None
    issues: list[Issue]


@dataclass(frozen=True)
class Sizes:
    """How much work each measurement does."""

    docs: int = 200
    rounds: int = 11
    budget: float = 0.1
    """Seconds each round of a timing aims for; rounds are repeated and the fastest kept."""
    stream: tuple[str, ...] = ("small", "medium", "large")
    """The answer sizes of the streaming measurement."""


QUICK = Sizes(docs=12, rounds=2, budget=0.01, stream=("small", "medium"))


# -- the corpus --------------------------------------------------------------------------


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def review(rng: random.Random, issues: int) -> dict[str, Any]:
    return {
        "approve": rng.random() < 0.5,
        "score": round(rng.uniform(0, 10), 2),
        "summary": sentence(rng, 14),
        "reviewer": None if rng.random() < 0.3 else rng.choice(("ana", "bo", "chen")),
        "issues": [
            {
                "line": rng.randint(1, 4000),
                "severity": rng.choice(("low", "medium", "high")),
                "message": sentence(rng, 9),
                "tags": rng.sample(TAGS, rng.randint(0, 3)),
            }
            for _ in range(issues)
        ],
    }


def literal(value: Any, *, keys: str = "quoted", trailing: bool = False, python: bool = False,
            comments: bool = False, depth: int = 0) -> str:  # fmt: skip
    """Pretty JSON-like text with the chosen mistakes."""
    pad, inner = "  " * depth, "  " * (depth + 1)
    again = {"keys": keys, "trailing": trailing, "python": python, "comments": comments}
    if isinstance(value, dict):
        items = []
        for key, item in value.items():
            name = key if keys == "bare" else repr(key) if python else orjson.dumps(key).decode()
            note = f"{inner}// {key}\n" if comments and depth == 0 else ""
            text = literal(item, **again, depth=depth + 1)
            items.append(f"{note}{inner}{name}: {text}")
        return _close("{", items, "}", pad, trailing)
    if isinstance(value, list):
        items = [inner + literal(item, **again, depth=depth + 1) for item in value]
        return _close("[", items, "]", pad, trailing)
    return repr(value) if python else orjson.dumps(value).decode()


def _close(opener: str, items: list[str], closer: str, pad: str, trailing: bool) -> str:
    if not items:
        return opener + closer
    tail = "," if trailing else ""
    return f"{opener}\n" + ",\n".join(items) + f"{tail}\n{pad}{closer}"


def pretty(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()


def truncated(data: dict[str, Any], rng: random.Random) -> tuple[str, dict[str, Any]]:
    """A stream cut after a complete issue; the value a cut-off parser should close."""
    keep = rng.randint(1, len(data["issues"]) - 1)
    shorter = {**data, "issues": data["issues"][:keep]}
    text = orjson.dumps(shorter).decode()[:-2]  # drop the closing "]}"
    return text + ",", shorter


def with_newlines(data: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    value = {**data, "summary": data["summary"].replace(" ", "\n", 2)}
    return pretty(value).replace("\\n", "\n"), value


Case = tuple[str, Any]
MESSY: dict[str, Callable[[dict[str, Any], random.Random], Case]] = {
    "code fence": lambda d, r: (f"```json\n{pretty(d)}\n```", d),
    "prose around": lambda d, r: (f"Sure! Here is the review:\n\n{pretty(d)}\n\nAnything else?", d),
    "prose + fence": lambda d, r: (
        f"I read the diff.\n```json\n{pretty(d)}\n```\nHope it helps.",
        d,
    ),
    "trailing commas": lambda d, r: (literal(d, trailing=True), d),
    "Python literals": lambda d, r: (literal(d, python=True), d),
    "unquoted keys": lambda d, r: (literal(d, keys="bare"), d),
    "// comments": lambda d, r: (literal(d, comments=True), d),
    "raw newlines in strings": lambda d, r: with_newlines(d),
    "all of the above": lambda d, r: (
        f"Here you go:\n```json\n{literal(d, python=True, trailing=True, comments=True)}\n```",
        d,
    ),
    "cut-off stream": lambda d, r: truncated(d, r),
}


def corpus(kind: str, sizes: Sizes, issues: int) -> list[Case]:
    rng = random.Random(f"{kind}:{issues}")
    make = MESSY[kind]
    return [make(review(rng, issues), rng) for _ in range(sizes.docs)]


# -- timing ---------------------------------------------------------------------------------


Parser = Callable[[str], Any]


def per_doc(
    fns: dict[str, Parser | None], docs: list[str], sizes: Sizes
) -> dict[str, float | None]:
    """µs per document for each parser: the fastest of `rounds` rounds.

    The rounds are interleaved (every parser once per round), so that a burst of
    load from other processes slows all of them alike instead of one.
    """
    loops: dict[str, int] = {}
    for name, fn in fns.items():
        if fn is not None:
            start = perf_counter()
            for doc in docs:
                fn(doc)
            loops[name] = max(1, int(sizes.budget / max(perf_counter() - start, 1e-9)))
    best = dict.fromkeys(loops, float("inf"))
    for _ in range(sizes.rounds):
        for name, count in loops.items():
            fn = fns[name]
            assert fn is not None
            start = perf_counter()
            for _ in range(count):
                for doc in docs:
                    fn(doc)
            best[name] = min(best[name], (perf_counter() - start) / (count * len(docs)))
    return {name: best[name] * 1e6 if name in best else None for name in fns}


def json_repair_loads() -> Callable[[str], Any] | None:
    try:
        import json_repair
    except ImportError:
        return None
    return json_repair.loads


def agentgraph_parser(*, streaming: bool) -> Callable[[str], Any]:
    """`parse(Any, text)`, or the streaming parser of `stream_structured`; refusals marked."""

    def run(text: str) -> Any:
        try:
            return loads_lenient(text, partial=True) if streaming else parse(Any, text)
        except OutputError:
            return _REFUSED

    return run


_REFUSED: Any = object()


# -- measurements ------------------------------------------------------------------------------

CLEAN = {"small": 1, "medium": 20, "large": 400}
"""Issues per review at each size of clean document."""

MESSY_ISSUES = 8
STREAM = {"small": 1, "medium": 20, "large": 100}
CHUNK = 4
"""Characters per streamed delta: about one token."""


def clean_parsers() -> dict[str, Parser | None]:
    return {
        "orjson.loads": orjson.loads,
        "loads_lenient": loads_lenient,
        "parse(Any, ...)": lambda text: parse(Any, text),
        "parse(Review, ...)": lambda text: parse(Review, text),
        "orjson.loads + validate(Review, ...)": lambda text: validate(Review, orjson.loads(text)),
        "json_repair.loads": json_repair_loads(),
    }


def measure_clean(sizes: Sizes) -> list[dict[str, Any]]:
    rows = []
    for label, issues in CLEAN.items():
        rng = random.Random(f"clean:{issues}")
        count = max(2, sizes.docs * 2 // (issues + 1))
        docs = [orjson.dumps(review(rng, issues)).decode() for _ in range(count)]
        timings = per_doc(clean_parsers(), docs, sizes)
        size = sum(len(d) for d in docs) / len(docs)
        rows.append({"size": label, "issues": issues, "chars": size, "us": timings})
    return rows


def _outcome(fn: Callable[[str], Any], text: str, expected: Any) -> str:
    try:
        result = fn(text)
    except Exception:
        return "refused"
    if result is _REFUSED:
        return "refused"
    return "recovered" if result == expected else "other value"


def measure_messy(sizes: Sizes) -> list[dict[str, Any]]:
    repair = json_repair_loads()
    rows = []
    for kind in MESSY:
        cases = corpus(kind, sizes, MESSY_ISSUES)
        streaming = kind == "cut-off stream"
        parsers = {"agentgraph": agentgraph_parser(streaming=streaming), "json-repair": repair}
        if streaming:
            parsers["agentgraph, not streaming"] = agentgraph_parser(streaming=False)
        timings = per_doc(parsers, [text for text, _ in cases], sizes)
        for name, fn in parsers.items():
            if fn is None:
                rows.append({"kind": kind, "parser": name, "missing": True})
                continue
            counts = {"recovered": 0, "other value": 0, "refused": 0}
            for text, expected in cases:
                counts[_outcome(fn, text, expected)] += 1
            rows.append({"kind": kind, "parser": name, "docs": len(cases), **counts})
            rows[-1]["us"] = timings[name]
    return rows


Factory = Callable[[], Callable[[str], Any]]


def per_answer(make: Factory, prefixes: list[str], sizes: Sizes) -> float:
    """ms to parse every prefix of one answer in turn, with a fresh parser per answer.

    At most three rounds: re-parsing a long answer from the start takes seconds.
    """

    def once() -> float:
        parse_prefix = make()
        start = perf_counter()
        for prefix in prefixes:
            parse_prefix(prefix)
        return perf_counter() - start

    loops = max(1, int(sizes.budget / max(once(), 1e-9)))
    rounds = min(sizes.rounds, 3)
    return min(sum(once() for _ in range(loops)) / loops for _ in range(rounds)) * 1000


def streaming_parsers() -> dict[str, Factory | None]:
    repair = json_repair_loads()

    def incremental() -> Callable[[str], Any]:
        parser = PrefixParser()

        def run(text: str) -> Any:
            try:
                return parser.parse(text)
            except OutputError:
                return _REFUSED

        return run

    return {
        "agentgraph (stream_structured)": incremental,
        "agentgraph loads_lenient(partial=True)": lambda: agentgraph_parser(streaming=True),
        "json-repair (stream_stable)": None
        if repair is None
        else lambda: lambda text: repair(text, stream_stable=True),
    }


def measure_streaming(sizes: Sizes) -> list[dict[str, Any]]:
    rows = []
    for label in sizes.stream:
        issues = STREAM[label]
        text = "```json\n" + pretty(review(random.Random(f"stream:{issues}"), issues)) + "\n```"
        prefixes = [text[:end] for end in range(CHUNK, len(text) + CHUNK, CHUNK)]
        timings = {
            name: None if make is None else per_answer(make, prefixes, sizes)
            for name, make in streaming_parsers().items()
        }
        rows.append({"size": label, "chars": len(text), "chunks": len(prefixes), "ms": timings})
    return rows


# -- report and command line ---------------------------------------------------------


def render(
    clean: list[dict[str, Any]],
    messy: list[dict[str, Any]],
    stream: list[dict[str, Any]],
    sizes: Sizes,
    load: tuple[float, float] | None = None,
) -> str:
    """This benchmark's section of RESULTS.md, from the three measurements' rows."""
    return report.render(
        clean, messy, stream, sizes=sizes, messy_issues=MESSY_ISSUES, chunk=CHUNK, load=load
    )


def main(argv: list[str] | None = None) -> str:
    parser = section_parser(__doc__, "a small run; print, do not write")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else Sizes()
    before = load_average()
    results = measure_clean(sizes), measure_messy(sizes), measure_streaming(sizes)
    section = render(*results, sizes, (before, load_average()))
    publish(section, output=args.output, quick=args.quick)
    return section


if __name__ == "__main__":
    main(sys.argv[1:])

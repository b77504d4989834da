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
the file is left as it is.
"""

import argparse
import os
import platform
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from time import perf_counter
from typing import Any, Literal

import attrs
import orjson

from agentgraph import OutputError, parse, validate
from agentgraph._lenient import loads_lenient
from agentgraph._prefix import PrefixParser

HEADING = "## Structured output parsing"
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


# -- the report -----------------------------------------------------------------------------


def _us(value: float | None) -> str:
    if value is None:
        return "not installed"
    return f"{value:,.1f}" if value >= 10 else f"{value:.2f}"


def _ratio(value: float | None, base: float) -> str:
    return "-" if value is None else f"{value / base:.2f}x"


def clean_table(rows: list[dict[str, Any]]) -> list[str]:
    names = list(rows[0]["us"])
    lines = [
        "| Parser | " + " | ".join(f"{r['size']} ({r['chars']:,.0f} chars)" for r in rows) + " |",
        "|---|" + "--:|" * len(rows),
    ]
    for name in names:
        cells = []
        for row in rows:
            us = row["us"][name]
            base = row["us"]["orjson.loads"]
            cells.append(f"{_us(us)} µs ({_ratio(us, base)})")
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    return lines


def clean_targets(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| Target | Size | Measured | Verdict |", "|---|---|--:|---|"]
    checks = [
        ("`loads_lenient` ≤ 1.5x `orjson.loads`", "loads_lenient", "orjson.loads"),
        ("`parse(Any, ...)` ≤ 1.5x `orjson.loads`", "parse(Any, ...)", "orjson.loads"),
        (
            "`parse(Review, ...)` ≤ 1.5x `orjson.loads` + `validate`",
            "parse(Review, ...)",
            "orjson.loads + validate(Review, ...)",
        ),
    ]
    for label, name, base in checks:
        for row in rows:
            ratio = row["us"][name] / row["us"][base]
            verdict = "met" if ratio <= 1.5 else f"**missed** ({ratio / 1.5 - 1:.0%} over)"
            lines.append(f"| {label} | {row['size']} | {ratio:.2f}x | {verdict} |")
    return lines


def messy_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| Mistake | Parser | Recovered | Other value | Refused | µs/doc |",
        "|---|---|--:|--:|--:|--:|",
    ]
    for row in rows:
        if row.get("missing"):
            lines.append(f"| {row['kind']} | {row['parser']} | not installed | - | - | - |")
            continue
        docs = row["docs"]
        lines.append(
            f"| {row['kind']} | {row['parser']} | {row['recovered']}/{docs} | "
            f"{row['other value']} | {row['refused']} | {_us(row['us'])} |"
        )
    return lines


def messy_totals(rows: list[dict[str, Any]]) -> list[str]:
    lines = []
    for parser in ("agentgraph", "json-repair"):
        mine = [r for r in rows if r["parser"] == parser and not r.get("missing")]
        if not mine:
            continue
        got = sum(r["recovered"] for r in mine)
        docs = sum(r["docs"] for r in mine)
        mean = sum(r["us"] for r in mine) / len(mine)
        lines.append(
            f"- **{parser}**: {got}/{docs} recovered exactly; "
            f"mean of the per-mistake times {_us(mean)} µs/doc."
        )
    return lines


def _ms(value: float | None) -> str:
    return "not installed" if value is None else f"{value:,.1f}"


def stream_table(rows: list[dict[str, Any]]) -> list[str]:
    names = list(rows[0]["ms"])
    lines = [
        "| Answer | Chunks | " + " | ".join(f"{n}, ms" for n in names) + " |",
        "|---|--:|" + "--:|" * len(names),
    ]
    for row in rows:
        cells = " | ".join(
            "not installed" if row["ms"][n] is None else f"{row['ms'][n]:,.1f}" for n in names
        )
        lines.append(f"| {row['size']} ({row['chars']:,} chars) | {row['chunks']:,} | {cells} |")
    return lines


def machine(load: tuple[float, float] | None) -> list[str]:
    def version(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "not installed"

    return [
        f"- Python {platform.python_version()} ({platform.python_implementation()}), "
        f"{platform.machine()}, {os.cpu_count()} CPUs",
        f"- orjson {version('orjson')}, json-repair {version('json-repair')}, "
        f"agentgraph {version('agentgraph')}",
        *(
            []
            if load is None
            else [
                f"- load average: {load[0]:.2f} before the run, {load[1]:.2f} after "
                "(other processes share the CPUs; ratios are steadier than times)"
            ]
        ),
    ]


def render(clean: list[dict[str, Any]], messy: list[dict[str, Any]],
           stream: list[dict[str, Any]], sizes: Sizes,
           load: tuple[float, float] | None = None) -> str:  # fmt: skip
    lines = [
        HEADING,
        "",
        "How fast agentgraph turns model answers into values, beside bare `orjson.loads` and "
        "the `json-repair` package. Produced by `python benchmarks/structured.py`; "
        "lower times are better.",
        "",
        "### Clean JSON",
        "",
        "µs per document, and the ratio to `orjson.loads` on the same documents.",
        "",
        *clean_table(clean),
        "",
        *clean_targets(clean),
        "",
        "### Messy model output",
        "",
        f"{messy[0]['docs']} generated reviews ({MESSY_ISSUES} issues each, pretty-printed) per "
        "kind of mistake. *Recovered* means the parser returned exactly the value the "
        "model meant; *other value* means it returned something else without an error; "
        "*refused* means it raised (agentgraph's `OutputError`).",
        "",
        *messy_table(messy),
        "",
        *messy_totals(messy),
        "",
        "### Streaming partial objects",
        "",
        f"A fenced answer arrives in chunks of {CHUNK} characters (about one token) and the "
        "text so far is parsed after every chunk: the total parsing time for one answer. "
        "`stream_structured` scans only the new characters while the answer is clean JSON "
        "and hands each closed prefix to orjson; re-running `loads_lenient(partial=True)` "
        "on the whole text, and json-repair with `stream_stable=True`, are shown beside it.",
        "",
        *stream_table(stream),
        "",
        "### Method",
        "",
        "- Documents are reviews (`approve`, `score`, `summary`, `reviewer`, and a list of "
        "issues with `line`, `severity`, `message`, `tags`) drawn from a seeded generator, so "
        "every run parses the same text.",
        "- Clean documents are compact `orjson.dumps` output: small = 1 issue, medium = 20, "
        "large = 400. `parse(Any, ...)` is the public entry point with no type to check; "
        "`parse(Review, ...)` also builds the attrs objects, so its baseline is "
        "`orjson.loads` followed by `validate`.",
        "- agentgraph parses messy text with `parse(Any, text)` (fenced JSON and JSON inside "
        "prose go to orjson; the rest to the lenient parser), and the cut-off stream with "
        "`loads_lenient(text, partial=True)`, whose values `stream_structured` reproduces; "
        "`parse` itself refuses a cut-off answer on purpose (the *not streaming* row), so "
        "that `generate` asks again instead of accepting half a value. The cut-off "
        "documents end after a complete issue and a comma; the meant value is the review "
        "with the issues that arrived.",
        f"- Each time is the fastest of {sizes.rounds} rounds (streaming: of "
        f"{min(sizes.rounds, 3)}); in a round each parser loops over the documents for "
        f"about {sizes.budget:g} s (at least once), the parsers of a table taking turns "
        "round by round so that load from other processes falls on all of them alike; one "
        "process, garbage collector on.",
        "",
        "### Machine",
        "",
        *machine(load),
        "",
    ]
    return "\n".join(lines)


def write_section(path: Path, section: str) -> None:
    """Replace this benchmark's section of `path` (or append it), leaving the rest alone."""
    text = path.read_text() if path.exists() else ""
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.rstrip() == HEADING), None)
    if start is None:
        before, after = text.rstrip("\n"), ""
        before = before + "\n\n" if before else ""
    else:
        end = next(
            (j for j in range(start + 1, len(lines)) if lines[j].startswith(("# ", "## "))),
            len(lines),
        )
        before, after = "".join(lines[:start]), "".join(lines[end:])
        after = "\n" + after if after else ""
    path.write_text(before + section + after)


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a small run; print, do not write")
    parser.add_argument(
        "--output",
        type=Path,
        help="the Markdown file whose section to write (default: RESULTS.md beside this file)",
    )
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else Sizes()
    before = os.getloadavg()[0]
    results = measure_clean(sizes), measure_messy(sizes), measure_streaming(sizes)
    section = render(*results, sizes, (before, os.getloadavg()[0]))
    output = args.output or (None if args.quick else Path(__file__).with_name("RESULTS.md"))
    if output is not None:
        write_section(output, section)
    print(section)
    return section


if __name__ == "__main__":
    main(sys.argv[1:])

"""The structured-output benchmark's section of RESULTS.md: tables, targets, method, machine."""

import os
import platform
from typing import TYPE_CHECKING, Any

from _common import python, versions

if TYPE_CHECKING:
    from structured import Sizes

HEADING = "## Structured output parsing"


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
    small = rows[0]["us"]
    extra = small["parse(Any, ...)"] - small["orjson.loads"]
    lines += [
        "",
        f"On the {rows[0]['size']} documents `parse(Any, ...)` takes {_us(extra)} µs more than "
        "`orjson.loads`: the call itself and the depth guard, which refuses answers nested "
        "past 100 levels (texts over 201 characters are looked at for `[` first, and counted "
        "only when that does not settle it). The guard is what keeps hostile nesting out; "
        "dropping it is the only way left to a smaller ratio on short answers.",
    ]
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
        cells = " | ".join(_ms(row["ms"][n]) for n in names)
        lines.append(f"| {row['size']} ({row['chars']:,} chars) | {row['chunks']:,} | {cells} |")
    return lines


def machine(load: tuple[float, float] | None) -> list[str]:
    return [
        f"- {python()}, {platform.machine()}, {os.cpu_count()} CPUs",
        f"- {versions('orjson', 'json-repair', 'agentgraph')}",
        *(
            []
            if load is None
            else [
                f"- load average: {load[0]:.2f} before the run, {load[1]:.2f} after "
                "(other processes share the CPUs; ratios are steadier than times)"
            ]
        ),
    ]


def render(
    clean: list[dict[str, Any]],
    messy: list[dict[str, Any]],
    stream: list[dict[str, Any]],
    *,
    sizes: "Sizes",
    messy_issues: int,
    chunk: int,
    load: tuple[float, float] | None,
) -> str:
    """The section; `messy_issues` issues per messy review, `chunk` characters per delta."""
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
        f"{messy[0]['docs']} generated reviews ({messy_issues} issues each, pretty-printed) per "
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
        f"A fenced answer arrives in chunks of {chunk} characters (about one token) and the "
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

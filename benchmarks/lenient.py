"""Lenient parsing: recovery and wrong answers on a corpus of broken answers, beside json_repair.

Four measurements, in one run:

- corpus: ``data/lenient_corpus.jsonl`` (written by ``make_lenient_corpus.py``): for
  each kind of breakage, how many answers each parser recovers exactly, how many it
  turns into a different value (a wrong answer; on a refusal case, any value at all),
  how many it refuses, and µs per document. json_repair answers ``""`` when it finds
  nothing; that counts as a refusal.
- examples of the values json_repair invents.
- adversarial shapes (repeated unclosed comments, openers, quotes) at 10 KB, 100 KB
  and 1 MB: ms per document and ns per byte, which stays level.
- clean JSON: µs per document for ``orjson.loads``, ``loads_lenient`` and the
  ``loads_lenient`` of the commit before this work (read from git), on the corpus's
  intended values.

Usage::

    python benchmarks/lenient.py          # full run; writes its section of RESULTS.md
    python benchmarks/lenient.py --quick  # small run; prints the section only
"""

import contextlib
import importlib.util
import json
import subprocess
import sys
import types
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter
from typing import Any

import orjson
from _common import load_average, publish, python, section_parser, versions

from agentgraph import OutputError, loads_lenient

HEADING = "## Lenient parsing"
CORPUS = Path(__file__).resolve().parent / "data" / "lenient_corpus.jsonl"
BASE = "02ce0ca"  # the commit before this parser's repairs, for the clean-JSON comparison
SHAPES = {
    "unclosed comments `[/*`": "[/*",
    "openers `{`": "{",
    "prose openers `x [`": "x [",
    'open strings `{"a": "`': '{"a": "',
    'quoted items `["a" "`': '["a" "',
    'members `{"a":1,`': '{"a":1,',
}
REFUSED = "refused"
NOTES = (
    "The corpus is ours: `make_lenient_corpus.py` writes it from templates of the answers "
    "structured-output prompts ask for, broken the ways models break JSON, so agentgraph "
    "recovering all of it shows that each repair works on realistic text, not how it fares "
    "on answers nobody has seen (the project is also measured on a held-out corpus). Some "
    "refusal cases are refusals by this parser's rules rather than by necessity (a cut-off "
    "final answer, bare words in an array); the rest have no safe reading. What holds "
    "either way is the wrong answers. json_repair never refuses: it reads the inner object "
    "of a broken string as text, merges two different answers into a list, turns a set "
    "into a list and `28kg` into a string, returns NaN and Infinity as floats (which orjson "
    'would store as null), fills a missing value with an invented `""`, and trims the '
    "whitespace at the end of a cut-off string, which changes the value. It is not offered "
    "as an extra behind the fast path: it recovers nothing here that agentgraph misses, and "
    "it answers where agentgraph refuses.",
)


@dataclass(frozen=True)
class Sizes:
    rounds: int = 5
    shape_sizes: tuple[int, ...] = (10_000, 100_000, 1_000_000)
    repair_sizes: tuple[int, ...] = (10_000,)  # json_repair: seconds at 10 KB already


QUICK = Sizes(rounds=1, shape_sizes=(10_000, 100_000), repair_sizes=(10_000,))


def corpus() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]


def same(left: Any, right: Any) -> bool:
    """Equal and of the same types all the way down (so 1 and 1.0 differ)."""
    if type(left) is not type(right):
        return False
    if isinstance(left, dict):
        return left.keys() == right.keys() and all(same(left[k], right[k]) for k in left)
    if isinstance(left, list):
        return len(left) == len(right) and all(map(same, left, right))
    return bool(left == right)


def ours(case: dict[str, Any]) -> Any:
    try:
        return loads_lenient(case["text"], partial=case["partial"])
    except OutputError:
        return REFUSED


def json_repair_parser() -> Callable[[dict[str, Any]], Any] | None:
    try:
        import json_repair
    except ImportError:
        return None

    def parse(case: dict[str, Any]) -> Any:
        try:
            value = json_repair.loads(case["text"])
        except Exception:  # a crash of the library is a refusal too
            return REFUSED
        return REFUSED if value == "" else value

    return parse


def outcome(value: Any, case: dict[str, Any]) -> str:
    if value is REFUSED:
        return "refused"
    if case["kind"] != "refusal" and same(value, case["expected"]):
        return "recovered"
    return "wrong"


def measure_corpus(cases: list[dict[str, Any]], sizes: Sizes) -> dict[str, Any]:
    """Per parser: outcomes by kind, µs per document, and examples of wrong answers."""
    parsers = {"agentgraph": ours, "json_repair": json_repair_parser()}
    results: dict[str, Any] = {}
    for name, parse in parsers.items():
        if parse is None:
            continue
        counts: Counter[tuple[str, str]] = Counter()
        wrong: list[tuple[dict[str, Any], Any]] = []
        for case in cases:
            value = parse(case)
            verdict = outcome(value, case)
            counts[case["kind"], verdict] += 1
            if verdict == "wrong":
                wrong.append((case, value))
        best = float("inf")
        for _ in range(sizes.rounds):
            start = perf_counter()
            for case in cases:
                parse(case)
            best = min(best, perf_counter() - start)
        results[name] = {"counts": counts, "us": best / len(cases) * 1e6, "wrong": wrong}
    return results


def timed(fn: Callable[[], Any], rounds: int) -> float:
    """The fastest of `rounds` runs, in seconds."""
    best = float("inf")
    for _ in range(rounds):
        start = perf_counter()
        with contextlib.suppress(OutputError):
            fn()
        best = min(best, perf_counter() - start)
    return best


def measure_shapes(sizes: Sizes) -> list[dict[str, Any]]:
    parse_repair = json_repair_parser()
    before = base_loads()
    rows = []
    for label, unit in SHAPES.items():
        for size in sizes.shape_sizes:
            text = unit * (size // len(unit))
            row: dict[str, Any] = {"shape": label, "size": size}
            for partial in (False, True):
                key = "partial" if partial else "plain"
                run = lambda t=text, p=partial: loads_lenient(t, partial=p)  # noqa: E731
                row[key] = timed(run, sizes.rounds) * 1e3
            row["json_repair"] = row["before"] = None
            if size in sizes.repair_sizes:
                if parse_repair is not None:
                    case = {"text": text}
                    row["json_repair"] = timed(lambda c=case: parse_repair(c), 1) * 1e3
                if before is not None:
                    row["before"] = timed(lambda t=text: before(t), 1) * 1e3
            rows.append(row)
    return rows


def measure_issue_case() -> dict[str, float | None]:
    """The issue's `"[/*" * 33_333` (100 KB) in ms, before and after."""
    text = "[/*" * 33_333
    before = base_loads()
    return {
        "after": timed(lambda: loads_lenient(text), 3) * 1e3,
        "before": None if before is None else timed(lambda: before(text), 1) * 1e3,
    }


def base_loads() -> Callable[[str], Any] | None:
    """`loads_lenient` as it was at `BASE`, or None without git or that commit."""
    root = Path(__file__).resolve().parent.parent
    try:
        source = subprocess.run(
            ["git", "show", f"{BASE}:agentgraph/structured/_lenient.py"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    name = "agentgraph.structured._lenient_base"
    spec = importlib.util.spec_from_loader(name, loader=None)
    assert spec is not None
    module = types.ModuleType(name)
    module.__package__ = "agentgraph.structured"
    sys.modules[name] = module
    exec(compile(source, f"{BASE}:_lenient.py", "exec"), module.__dict__)
    loads: Callable[[str], Any] = module.loads_lenient
    return loads


def measure_clean(cases: list[dict[str, Any]], sizes: Sizes) -> dict[str, float | None]:
    docs = [orjson.dumps(c["expected"]).decode() for c in cases if c["kind"] != "refusal"]
    docs += [orjson.dumps([c["expected"] for c in cases[:50]]).decode()]  # one large one
    fns: dict[str, Callable[[str], Any] | None] = {
        "orjson.loads": orjson.loads,
        "loads_lenient": loads_lenient,
        f"loads_lenient at {BASE}": base_loads(),
    }
    best = {name: float("inf") for name, fn in fns.items() if fn is not None}
    for _ in range(max(3, sizes.rounds) * 4):  # interleaved: load slows all alike
        for name in best:
            fn = fns[name]
            assert fn is not None
            start = perf_counter()
            for doc in docs:
                fn(doc)
            best[name] = min(best[name], (perf_counter() - start) / len(docs))
    return {name: best[name] * 1e6 if name in best else None for name in fns}


# -- the report ----------------------------------------------------------------------------


def _cell(counts: Counter[tuple[str, str]], kind: str) -> str:
    total = sum(v for (k, _), v in counts.items() if k == kind)
    good = counts[kind, "refused" if kind == "refusal" else "recovered"]
    return f"{good}/{total} ({counts[kind, 'wrong']} wrong)"


def render(
    results: dict[str, Any],
    shapes: list[dict[str, Any]],
    clean: dict[str, float | None],
    load: tuple[float, float] | None,
    issue: dict[str, float | None] | None = None,
) -> str:
    names = list(results)
    kinds = sorted({kind for result in results.values() for kind, _ in result["counts"]})
    kinds.sort(key=lambda k: k == "refusal")
    lines = [
        HEADING,
        "",
        f"`benchmarks/lenient.py` on `benchmarks/data/lenient_corpus.jsonl`: "
        f"{sum(1 for _ in results[names[0]]['counts'].elements())} answers. For each kind, "
        "the answers recovered exactly (refused, for the refusal cases) and the wrong ones: "
        "a different value, or any value where the only right answer is a refusal.",
        "",
        "| kind | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for kind in kinds:
        lines.append(
            f"| {kind} | " + " | ".join(_cell(results[n]["counts"], kind) for n in names) + " |"
        )
    total = []
    for name in names:
        counts = results[name]["counts"]
        broken = sum(v for (k, o), v in counts.items() if k != "refusal" and o == "recovered")
        of = sum(v for (k, _), v in counts.items() if k != "refusal")
        wrong = sum(v for (_, o), v in counts.items() if o == "wrong")
        total.append(f"{broken}/{of} recovered, {wrong} wrong, {results[name]['us']:.1f} µs/doc")
    lines += ["| **all** | " + " | ".join(total) + " |", "", *NOTES, ""]
    if "json_repair" in results:
        lines += ["Where json_repair answers with a value that is not the intended one:", ""]
        seen: set[str] = set()
        for case, value in results["json_repair"]["wrong"]:
            if case["kind"] in seen:
                continue
            seen.add(case["kind"])
            text = case["text"] if len(case["text"]) < 90 else case["text"][:87] + "..."
            shown = json.dumps(value, ensure_ascii=False)
            shown = shown if len(shown) < 90 else shown[:87] + "..."
            lines.append(f"- {case['kind']}: `{text!r}` gives `{shown}`")
        lines.append("")
    lines += [
        "### Adversarial shapes",
        "",
        "ms per document; each shape repeated to the size given, and agentgraph's time per "
        "byte. Time grows with the size, not its square: the time per byte stays level, but "
        "for a step where the text outgrows the CPU's caches (plain regular-expression "
        "scans take the same step). json_repair and the parser before this work are timed "
        "at 10 KB only: seconds there already.",
        "",
        f"| shape | size | agentgraph | agentgraph, partial | agentgraph at {BASE} "
        "| json_repair | ns/byte |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in shapes:
        before, repair = (
            "-" if row[key] is None else f"{row[key]:.1f}" for key in ("before", "json_repair")
        )
        lines.append(
            f"| {row['shape']} | {row['size'] // 1000} KB | {row['plain']:.1f} | "
            f"{row['partial']:.1f} | {before} | {repair} | "
            f"{row['plain'] * 1e6 / row['size']:.0f} |"
        )
    if issue is not None:
        was = "-" if issue["before"] is None else f"{issue['before']:.0f} ms"
        lines += [
            "",
            f'The issue\'s `"[/*" * 33_333` (100 KB): {issue["after"]:.2f} ms, '
            f"against {was} at {BASE}.",
        ]
    lines += ["", "### Clean JSON", "", "µs per document (valid JSON, the corpus's values):", ""]
    for name, us in clean.items():
        lines.append(f"- {name}: " + ("not measured (no git)" if us is None else f"{us:.2f}"))
    lines += ["", "### Machine", "", f"- {python()}", f"- {versions('orjson', 'json-repair')}"]
    if load is not None:
        lines.append(f"- load average: {load[0]:.2f} before the run, {load[1]:.2f} after")
    lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> str:
    parser = section_parser(__doc__, "fewer rounds and sizes")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else Sizes()
    before = load_average()
    cases = corpus()
    results = measure_corpus(cases, sizes)
    shapes = measure_shapes(sizes)
    clean = measure_clean(cases, sizes)
    issue = measure_issue_case()
    section = render(results, shapes, clean, (before, load_average()), issue)
    publish(section, output=args.output, quick=args.quick)
    return section


if __name__ == "__main__":
    main()

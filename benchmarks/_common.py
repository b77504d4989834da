"""What the benchmark scripts share: machine facts, child processes and RESULTS.md sections.

Every script in this folder measures its cases in child processes of its own, renders one
``## `` section of RESULTS.md and replaces only that section there. The scripts import this
module as a sibling: ``python benchmarks/<name>.py`` puts this folder first on ``sys.path``.
"""

import argparse
import contextlib
import json
import os
import platform
import re
import resource
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
"""The file that holds every benchmark's section."""


# -- machine facts ------------------------------------------------------------------------


# Reports name the project as it is imported; its distribution is named otherwise.
_DISTRIBUTIONS = {"agentgraph": "agentgraph-engine"}


def version(package: str) -> str:
    """The installed version of `package`, or "not installed"."""
    try:
        return metadata.version(_DISTRIBUTIONS.get(package, package))
    except metadata.PackageNotFoundError:
        return "not installed"


def versions(*packages: str) -> str:
    """`name version` for each package, joined by commas."""
    return ", ".join(f"{package} {version(package)}" for package in packages)


def python() -> str:
    """The interpreter, e.g. "Python 3.11.9 (CPython)"."""
    return f"Python {platform.python_version()} ({platform.python_implementation()})"


def cpu_model() -> str:
    """The CPU's model name as the kernel reports it, else what `platform` knows."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def os_name() -> str:
    """The distribution's name and the kernel, e.g. "Debian GNU/Linux 12, Linux 6.1.0"."""
    kernel = f"{platform.system()} {platform.release()}"
    try:
        with open("/etc/os-release") as release:
            for line in release:
                if line.startswith("PRETTY_NAME="):
                    return f"{line.partition('=')[2].strip().strip(chr(34))}, {kernel}"
    except OSError:
        pass
    return kernel


def load_average() -> float:
    """The 1-minute load average: other work on the machine inflates every figure."""
    return os.getloadavg()[0]


def machine(load: float, *packages: str) -> str:
    """A section's last line: the interpreter, `packages`' versions and the load at the start."""
    return (
        f"Machine: {python()}; {versions(*packages)}; 1-minute load average {load:.2f} at the "
        "start (other work inflates every figure alike)."
    )


def peak_rss_mib() -> float:
    """This process's peak resident set size in MiB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10  # bytes vs KiB


# -- child processes ----------------------------------------------------------------------


class ChildFailed(Exception):
    """A child process ended with an error; `line` is the last line it wrote to stderr."""

    def __init__(self, line: str) -> None:
        super().__init__(f"the child process failed: {line}")
        self.line = line


def run_child(script: str | Path, *args: str, timeout: float) -> Any:
    """Run `script` with `args` in a fresh interpreter; its last line of output, as JSON.

    Raises:
        ChildFailed: the child exited with an error, or printed nothing.
    """
    done = subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise ChildFailed((done.stderr.strip().splitlines() or ["no output"])[-1])
    lines = done.stdout.strip().splitlines()
    if not lines:
        raise ChildFailed("no output")
    return json.loads(lines[-1])


def clean_error(line: str) -> str:
    """An error line fit for the report: the file paths it names are dropped."""
    return re.sub(r"\s*\(?(?<![\w.])(/[^\s/()]+)+/?\)?", "", line).rstrip(" :")


def measure_each(
    cases: Iterable[str], measure: Callable[[str], dict[str, Any]]
) -> list[dict[str, Any]]:
    """`measure` applied to each case in turn, saying on stderr which one is under way."""
    results = []
    for case in cases:
        print(f"measuring {case} ...", file=sys.stderr, flush=True)
        results.append(measure(case))
    return results


def case_parser(description: str, cases: Iterable[str]) -> argparse.ArgumentParser:
    """The command line of a benchmark that measures each case in a process of its own."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--case", choices=tuple(cases), help="measure one case, print one JSON line"
    )
    parser.add_argument("--quick", action="store_true", help="fewer runs, for a smoke run")
    parser.add_argument(
        "--output",
        type=Path,
        help="the Markdown file whose section to write (default: RESULTS.md beside this "
        "file, unless --quick)",
    )
    return parser


def section_parser(description: str, quick: str) -> argparse.ArgumentParser:
    """The command line of a benchmark measured in its own process: `--quick` (its `quick`
    help) and `--output`."""
    parser = argparse.ArgumentParser(description=description.partition("\n")[0])
    parser.add_argument("--quick", action="store_true", help=quick)
    parser.add_argument("--output", type=Path, help="write the section here")
    return parser


def measure_in_children(
    script: str | Path,
    cases: Sequence[str],
    *,
    quick: bool,
    timeout: float,
    failed: Callable[[str, str], dict[str, Any]],
) -> tuple[list[dict[str, Any]], tuple[float, float]]:
    """Each case measured in turn by ``script --case <case>``, in a fresh interpreter.

    Returns:
        The results, `failed(case, error)` standing for a case whose process failed, and
        the 1-minute load average before and after.
    """

    def one(case: str) -> dict[str, Any]:
        try:
            args = ["--case", case, *(["--quick"] if quick else [])]
            result: dict[str, Any] = run_child(script, *args, timeout=timeout)
        except ChildFailed as exc:
            return failed(case, clean_error(exc.line))
        return result

    before = load_average()
    results = measure_each(cases, one)
    return results, (before, load_average())


# -- PostgreSQL ---------------------------------------------------------------------------


@contextlib.contextmanager
def postgres_server(*, synchronous_commit: bool = True) -> Iterator[str]:
    """A DSN: ``AGENTGRAPH_BENCH_POSTGRES`` as given, or a durable server of this process's
    own (the tests' throwaway server), removed after; `synchronous_commit=False` turns
    that setting off on it."""
    given = os.environ.get("AGENTGRAPH_BENCH_POSTGRES")
    if given:
        yield given
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.pg_server import PostgresServer, bindir

    found = bindir()
    if found is None:
        raise SystemExit("no PostgreSQL server binaries: `make postgres` installs them")
    with PostgresServer(found, durable=True) as server:
        if not synchronous_commit:
            import psycopg

            with psycopg.connect(server.dsn, autocommit=True) as conn:
                conn.execute("ALTER SYSTEM SET synchronous_commit = off")
                conn.execute("SELECT pg_reload_conf()")
        yield server.dsn


# -- RESULTS.md ---------------------------------------------------------------------------


def replace_section(document: str, section: str, *, first: bool = False) -> str:
    """`document` with the section named by `section`'s first line replaced by `section`.

    A section runs from its ``## `` heading to the next ``#`` or ``##`` heading; nothing
    outside it changes. A document without the section gets it at its end, or with `first`
    before its first ``## `` section (after any title). One blank line separates sections.

    Raises:
        ValueError: `section` does not start with a ``## `` heading.
    """
    heading = section.partition("\n")[0].rstrip()
    if not heading.startswith("## "):
        raise ValueError(f"a section starts with its '## ' heading, not {heading!r}")
    lines = document.splitlines()
    start = next((i for i, line in enumerate(lines) if line.rstrip() == heading), None)
    if start is None:
        titled = (i for i, line in enumerate(lines) if line.startswith("## "))
        start = end = next(titled, len(lines)) if first else len(lines)
    else:
        end = next(
            (i for i in range(start + 1, len(lines)) if lines[i].startswith(("# ", "## "))),
            len(lines),
        )
    before, after = lines[:start], lines[end:]
    while before and not before[-1].strip():
        before.pop()
    kept = [*before, ""] if before else []
    kept += section.rstrip("\n").splitlines()
    if after:
        kept += ["", *after]
    return "\n".join(kept).rstrip("\n") + "\n"


def write_section(path: Path, section: str, *, first: bool = False) -> None:
    """Put `section` into the file at `path` in place of its old version (see `replace_section`).

    The file is read just before it is written: other benchmarks may have changed their
    sections meanwhile.
    """
    document = path.read_text() if path.exists() else ""
    path.write_text(replace_section(document, section, first=first))


def publish(section: str, *, output: Path | None, quick: bool, first: bool = False) -> None:
    """Print `section`, then write it into `output`: by default RESULTS.md, unless `quick`."""
    print(section)
    destination = output or (None if quick else RESULTS)
    if destination is not None:
        write_section(destination, section, first=first)
        heading = section.partition("\n")[0].removeprefix("## ")
        print(f"wrote the {heading} section of {destination}", file=sys.stderr)

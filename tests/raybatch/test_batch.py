"""`run_batch` on a local Ray cluster: rows in order, a failing row alone, typed, masked errors."""

import functools
import sys

import pytest

from agentgraph import ContextEncodingError, UsageError
from agentgraph.checkpoint import SQLiteStore
from agentgraph.llm import Usage
from agentgraph.ray import BatchRow, RateLimit, run_batch
from agentgraph.ray._batch import _rows, run_id_for  # the ids, without Ray
from agentgraph.ray._progress import Progress
from tests.raybatch.graphs import SECRET

pytestmark = pytest.mark.timeout(180)

AGENT = "tests.raybatch.graphs:agent"


def inputs(counter, keys, pause=0.0):
    return [f"{counter}|{key}|{pause}" for key in keys]


def test_every_input_gets_one_row_in_order_and_a_failing_row_fails_alone(ray_cluster, tmp_path):
    counter = tmp_path / "effects.txt"
    given = [*inputs(counter, ["a", "b", "c"]), "fail please", *inputs(counter, ["d"])]
    limits = {"scripted-bump": RateLimit(requests_per_minute=6000, tokens_per_minute=10**6)}
    rows = run_batch(AGENT, given, concurrency=2, rate_limits=limits, progress=False)

    assert [r.index for r in rows] == [0, 1, 2, 3, 4]
    assert [r.status for r in rows] == ["finished"] * 3 + ["failed", "finished"]
    assert [r.output for r in rows] == ["done a", "done b", "done c", None, "done d"]
    finished = rows[0]
    assert finished.origin == "new" and finished.error is None and finished.error_type is None
    assert finished.usage.requests == 2 and finished.usage.total_tokens > 0
    assert finished.steps == 5  # user turn, chat, tools, chat, answer
    assert sorted(counter.read_text().split()[::2]) == ["a", "b", "c", "d"]
    failed = rows[3]
    assert failed.error_type == "NodeFailed"
    assert "ProviderError" in failed.error and "(HTTP 400)" in failed.error
    assert SECRET not in failed.error and "***" in failed.error
    assert failed.output is None and failed.key == "3"
    assert failed.steps == 2 and failed.usage.requests == 0  # the chat step, before any answer
    assert len({r.run_id for r in rows}) == 5


def test_run_ids_follow_from_the_batch_id_and_the_keys(tmp_path):
    given = inputs(tmp_path / "effects.txt", ["x", "y"])
    first = _rows(given, "ids", ["kx", "ky"])
    again = _rows(given, "ids", lambda q: "k" + q[-5])
    assert [r["run_id"] for r in first] == [r["run_id"] for r in again]
    assert [r["run_id"] for r in first] == [run_id_for("ids", "kx"), run_id_for("ids", "ky")]
    assert all(r["run_id"].startswith("ids-") for r in first)
    assert [r["key"] for r in first] == ["kx", "ky"]
    assert [r["key"] for r in _rows(given, "ids", None)] == ["0", "1"]
    other = _rows(given, "other", ["kx", "ky"])
    assert {r["run_id"] for r in other}.isdisjoint(r["run_id"] for r in first)


def test_a_second_run_of_a_batch_reads_finished_rows_back_and_retries_failed_ones(
    ray_cluster, tmp_path
):
    counter = tmp_path / "effects.txt"
    store = functools.partial(SQLiteStore, tmp_path / "runs.db")
    given = [*inputs(counter, ["a", "b"]), "fail again"]
    first = run_batch(AGENT, given, store=store, batch_id="twice", progress=False)
    second = run_batch(AGENT, given, store=store, batch_id="twice", progress=False)

    assert [(r.status, r.origin) for r in first] == [
        ("finished", "new"),
        ("finished", "new"),
        ("failed", "new"),
    ]
    assert [(r.status, r.origin) for r in second[:2]] == [("finished", "stored")] * 2
    assert second[2].status == "failed" and second[2].error_type == "NodeFailed"
    assert [r.output for r in second] == [r.output for r in first]
    assert [r.usage for r in second[:2]] == [r.usage for r in first[:2]]
    assert [r.steps for r in second[:2]] == [r.steps for r in first[:2]]
    assert sorted(counter.read_text().split()[::2]) == ["a", "b"]  # no tool ran twice


def test_bad_arguments_are_refused_before_anything_runs(ray_cluster, tmp_path):
    store = functools.partial(SQLiteStore, tmp_path / "runs.db")
    with pytest.raises(UsageError, match="batch_id"):
        run_batch(AGENT, ["q"], store=store)
    with pytest.raises(UsageError, match=r"'package\.module:attribute'"):
        run_batch("tests.raybatch.graphs.agent", ["q"])
    with pytest.raises(UsageError, match="cannot be imported"):
        run_batch("tests.raybatch.nowhere:agent", ["q"])
    with pytest.raises(UsageError, match="'missing' is not defined"):
        run_batch("tests.raybatch.graphs:missing", ["q"])
    with pytest.raises(UsageError, match="two inputs"):
        run_batch(AGENT, ["q", "r"], keys=["same", "same"])
    with pytest.raises(UsageError, match="one per input"):
        run_batch(AGENT, ["q", "r"], keys=["only"])
    with pytest.raises(UsageError, match="at least 1"):
        run_batch(AGENT, ["q"], concurrency=0)
    with pytest.raises(UsageError, match="zero-argument callable"):
        run_batch(AGENT, ["q"], store=SQLiteStore(tmp_path / "open.db"), batch_id="b")
    with pytest.raises(ContextEncodingError, match=r"cannot encode context\.input"):
        run_batch(AGENT, ["q", object()])
    with pytest.raises(ValueError, match="positive"):
        RateLimit(requests_per_minute=0)
    assert run_batch(AGENT, [], progress=False) == []


def test_the_progress_bar_counts_rows_failures_and_tokens(capsys, monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # as on a terminal
    usage = Usage(input_tokens=7, output_tokens=3, requests=1)
    rows = [
        BatchRow(0, "0", "b-0", "finished", "new", "x", None, None, usage, 3, 0.1),
        BatchRow(1, "1", "b-1", "failed", "new", None, "NodeFailed", "boom", usage, 1, 0.1),
    ]
    with Progress(2, enabled=True) as bar:
        bar.advance(rows)
    assert (bar.done, bar.failed, bar.tokens) == (2, 1, 20)
    drawn = capsys.readouterr().err
    assert "2/2" in drawn and "failed=1" in drawn and "tokens=20" in drawn and "run/s" in drawn
    with Progress(2, enabled=False) as quiet:
        quiet.advance(rows)
    assert capsys.readouterr().err == "" and quiet.done == 2


def test_the_progress_bar_is_left_out_of_a_pipe_or_a_log_file(capsys):
    usage = Usage(input_tokens=7, output_tokens=3, requests=1)
    row = BatchRow(0, "0", "b-0", "finished", "new", "x", None, None, usage, 3, 0.1)
    with Progress(1, enabled=True) as bar:
        bar.advance([row])
    assert capsys.readouterr().err == "" and (bar.done, bar.tokens) == (1, 10)

"""The record layer: events as plain data, secrets masked, user redaction, odd values."""

import logging
import math

import orjson
import pytest

from agentgraph import AgentContext, GraphRunner, NodeFailed, StepInfo
from agentgraph._util._redact import is_secret_name
from agentgraph.tracing import Recorder, Redactor, TraceRecorder
from agentgraph.tracing._jsonl import encode_record
from agentgraph.tracing._records import plain

from .support import FAILED_RUN, FAKE_KEY, kinds, mask_emails, nested_graph, scripted_agent
from .support import secret_context as secret_ctx

pytestmark = pytest.mark.anyio


async def test_records_of_a_nested_run_with_a_retry_and_a_failure():
    recorder = TraceRecorder()
    with pytest.raises(NodeFailed):
        await GraphRunner(sinks=[recorder]).run(nested_graph(fail=True), AgentContext(1))
    records = recorder.records
    assert kinds(records) == FAILED_RUN
    assert len({r["run"] for r in records}) == 1
    elapsed = [r["elapsed"] for r in records]
    assert elapsed == sorted(elapsed)
    started = [r for r in records if r["event"] == "node_started"]
    assert [(r["index"], r["depth"], r["path"]) for r in started[:3]] == [
        (1, 0, ["outer", "prepare"]),
        (2, 0, ["outer", "inner"]),
        (3, 1, ["outer", "inner", "flaky"]),
    ]
    assert started[1]["kind"] == "graph" and started[0]["kind"] == "node"
    retry = next(r for r in records if r["event"] == "retry_scheduled")
    assert retry["attempt"] == 1 and retry["wait"] == 0.25 and retry["index"] == 3
    assert retry["error"] == {"type": "TimeoutError", "message": "upstream slow"}
    failed = [r for r in records if r["event"] == "node_failed"]
    assert [r["path"][-1] for r in failed] == ["check", "inner"]
    assert failed[0]["error"] == {"type": "ValueError", "message": "32 is too big"}
    assert failed[1]["error"]["type"] == "NodeFailed"
    assert failed[1]["error"]["cause"]["type"] == "ValueError"
    prepared = records[3]
    assert prepared["output"] == 2 and prepared["messages"][0]["content"] == "start at 2"
    end = records[-1]
    assert end["ok"] is False and end["steps"] == 8 and end["output"] == 32
    orjson.dumps(records)  # every record is plain JSON


async def test_an_agent_run_records_model_and_tool_calls():
    agent, _ = scripted_agent()
    recorder = TraceRecorder()
    out = await GraphRunner(sinks=[recorder]).run(agent, AgentContext("add 2 and 3"))
    assert out.input.startswith("2 + 3 = 5")
    by_kind = {}
    for record in recorder.records:
        by_kind.setdefault(record["event"], []).append(record)
    requested = by_kind["model_requested"]
    assert [r["model"] for r in requested] == ["scripted-model", "scripted-model"]
    messages = requested[0]["request"]["messages"]
    assert messages[0] == {**messages[0], "role": "system", "content": "You add numbers."}
    assert [t["name"] for t in requested[0]["request"]["tools"]] == ["add", "lookup"]
    responded = by_kind["model_responded"][0]
    assert responded["response"]["finish_reason"] == "tool_calls"
    assert responded["response"]["usage"]["output_tokens"] > 0 and responded["latency"] >= 0
    tools = by_kind["tool_finished"]
    assert [(t["call"]["name"], t["is_error"]) for t in tools] == [
        ("add", False),
        ("lookup", True),
    ]
    assert tools[0]["call"]["arguments"] == {"a": 2, "b": 3} and tools[0]["result"] == "5"
    assert tools[0]["path"] == ["react_agent", "tools"]


async def test_secrets_are_masked_and_the_hook_masks_personal_data():
    agent, model = scripted_agent()
    recorder = TraceRecorder(redact=mask_emails)
    await GraphRunner(sinks=[recorder]).run(agent, secret_ctx("mail me at bob@example.org"))
    sent = model.requests[0].messages  # the model itself saw everything
    assert FAKE_KEY in sent[1].content and "bob@example.org" in sent[-1].content
    text = orjson.dumps(recorder.records).decode()
    assert FAKE_KEY not in text and "test-0123456789" not in text
    assert "@example" not in text and "<email>" in text
    first = recorder.records[0]["context"]
    assert first["state"] == {"Authorization": "***", "region": "eu"}
    request = next(r for r in recorder.records if r["event"] == "model_requested")["request"]
    earlier = request["messages"][1]
    assert earlier["content"] == "my key is ***, keep it safe"
    assert earlier["provider_data"] == {
        "openai.headers": {"x-api-key": "***", "Accept": "text/plain"}
    }
    # Structure and names are left alone.
    assert request["messages"][-1]["content"] == "mail me at <email>"
    assert recorder.records[1]["path"] == ["react_agent"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Authorization: Bearer abc.def-123456", "Authorization: ***"),
        ("curl -H 'x-api-key: 9f8e7d6c5b4a'", "curl -H 'x-api-key: ***'"),
        ('{"api_key": "hunter2hunter2"}', '{"api_key": "***"}'),
        ("token eyJhbGciOiJI.eyJzdWIiOiIx.SflKxwRJSMeKKF2QT4", "token ***"),
        ("use ghp_abcdefghijklmnopqrstuvwx12 now", "use *** now"),
        ("Basic dXNlcjpwYXNzd29yZA==", "Basic ***"),
        ("Bearer abcdefghijKLMNOP", "Bearer ***"),
        ("Basic understanding of Token limitations", "Basic understanding of Token limitations"),
        ("nothing secret here, 12 tokens", "nothing secret here, 12 tokens"),
        ("short", "short"),
    ],
)
def test_key_shapes_in_text_are_masked(text, expected):
    assert Redactor(environment=False).mask(text) == expected


def test_secret_field_names():
    secret = ["Authorization", "x-api-key", "X-Api-Key", "api_key", "apiKey", "accessToken"]
    secret += ["refresh_token", "client_secret", "password", "Cookie", "credentials"]
    plain_names = ["input_tokens", "max_tokens", "model", "content", "key", "tokens"]
    assert all(is_secret_name(n) for n in secret)
    assert not any(is_secret_name(n) for n in plain_names)


def test_environment_and_given_secrets_are_masked(monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", "plain-looking-value-42")
    redactor = Redactor(secrets=["correct horse battery"])
    record = redactor.record({"note": "t=plain-looking-value-42; pw=correct horse battery"})
    assert record == {"note": "t=***; pw=***"}
    assert Redactor(environment=False).mask("plain-looking-value-42") == "plain-looking-value-42"


def test_a_failing_hook_masks_the_value_and_is_logged_once(caplog):
    def broken(field, text):
        raise RuntimeError("bug in hook")

    redactor = Redactor(broken, environment=False)
    with caplog.at_level(logging.ERROR, "agentgraph.tracing"):
        out = redactor.record({"a": "personal", "b": ["data"], "n": 3})
    assert out == {"a": "***", "b": ["***"], "n": 3}
    assert len([r for r in caplog.records if "redaction hook failed" in r.getMessage()]) == 1
    assert Redactor(lambda f, t: None, environment=False).text("x" * 10) == "***"  # type: ignore[arg-type, return-value]


class Opaque:
    def __repr__(self) -> str:
        return "<Opaque>"


class Hostile:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def test_values_without_a_json_form_become_their_repr():
    assert plain({"ok": 1, "set": {1}, "obj": Opaque(), "bad": Hostile()}) == {
        "ok": 1,
        "set": "{1}",
        "obj": "<Opaque>",
        "bad": "<unrepresentable Hostile>",
    }
    assert plain(Opaque()) == "<Opaque>"
    assert plain("x" * 5000) == "x" * 5000


async def test_a_run_whose_context_holds_live_objects_is_still_recorded():
    recorder = TraceRecorder()
    lock = Opaque()
    ctx = AgentContext({"handle": lock, "n": math.inf}, state={"client": lock})
    graph = nested_graph()
    with pytest.raises(NodeFailed):  # prepare expects an int and fails; recording does not
        await GraphRunner(sinks=[recorder]).run(graph, ctx)
    first = recorder.records[0]["context"]
    assert first["input"] == {"handle": "<Opaque>", "n": math.inf}
    assert first["state"] == {"client": "<Opaque>"}
    assert recorder.records[-1]["event"] == "run_finished"


def test_lines_survive_huge_integers_and_lone_surrogates():
    line = encode_record({"big": 2**70, "text": "a\ud800b", "ok": [1, 2]})
    assert orjson.loads(line) == {"big": str(2**70), "text": "a?b", "ok": [1, 2]}
    assert line.endswith(b"\n")


def test_events_seen_outside_a_run_and_unknown_events_get_records():
    recorder = Recorder(redact=Redactor(environment=False))
    info = StepInfo(1, 1, 0, ("g", "a"), 1, 0.5)
    record = recorder(info)  # not an event the recorder knows: field by field
    assert record["event"] == "step_info" and record["path"] == ["g", "a"]
    assert record["duration"] == 0.5 and isinstance(record["run"], str)
    assert recorder(object())["value"].startswith("<object object")


async def test_a_configured_redactor_keeps_names_and_paths_intact():
    def shout(field, text):
        return text.upper()

    recorder = TraceRecorder(redact=Redactor(shout, secrets=["start at"], environment=False))
    await GraphRunner(sinks=[recorder]).run(nested_graph(), AgentContext(1))
    started = next(r for r in recorder.records if r["event"] == "node_started")
    assert (started["event"], started["node"], started["path"]) == (
        "node_started",
        "prepare",
        ["outer", "prepare"],
    )
    finished = next(r for r in recorder.records if r["event"] == "node_finished")
    assert (
        finished["messages"][0]["content"] == "*** 2" and finished["messages"][0]["role"] == "USER"
    )


def test_model_answers_in_structured_output_attempts_are_redacted():
    from types import MappingProxyType

    from agentgraph import OutputAttempt, StructuredOutput
    from agentgraph.llm import Usage

    seen = []

    def hook(field, text):
        seen.append(field)
        return mask_emails(field, text)

    raw = f'{{"key": "{FAKE_KEY}", "who": "alice@example.com"}}'
    attempt = OutputAttempt(1, raw, False, (f"$.key: {FAKE_KEY} is not an int",))
    event = StructuredOutput(
        1,
        ("g", "gen"),
        "m",
        "Review",
        "do it",
        MappingProxyType({}),
        (),
        (attempt,),
        False,
        None,
        Usage(),
    )
    record = Recorder(redact=Redactor(hook, environment=False))(event)
    assert FAKE_KEY not in str(record)
    (attempt_record,) = record["attempts"]
    assert attempt_record["number"] == 1 and attempt_record["ok"] is False
    assert "alice@example.com" not in attempt_record["raw"]
    assert attempt_record["errors"] == ["$.key: *** is not an int"]
    assert {"attempts.0.raw", "attempts.0.errors.0"} <= set(seen)
    assert record["path"] == ["g", "gen"] and "path" not in seen  # names stay as they are


async def test_a_runs_usage_is_redacted_like_any_field_in_every_record():
    agent, _ = scripted_agent()
    redactor = Redactor(secrets=["input_tokens"], environment=False)
    recorder = TraceRecorder(redact=redactor)
    out = await GraphRunner(sinks=[recorder]).run(agent, secret_ctx("what is 2 + 3?"))
    ends = ("node_finished", "run_finished")
    usages = [r["usage"] for r in recorder.records if r["event"] in ends]
    expected = redactor.record({"usage": plain(out.usage)})["usage"]
    assert "***" in expected and "input_tokens" not in expected
    assert usages[-1] == usages[-2] == expected and usages[0] != expected
    assert len({id(u) for u in usages}) == len(usages)  # no record shares another's dict

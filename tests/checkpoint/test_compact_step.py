"""A thread turn's compaction is the turn's first step, `compact`: its summary is a model
call like a node's (events, usage, limits, retries, spans), and its record makes resume and
replay exact."""

import pytest

from agentgraph import (
    AgentContext,
    GraphRunner,
    ModelRequested,
    ModelResponded,
    NodeFinished,
    NodeStarted,
    ResumeError,
    RetryPolicy,
    RetryScheduled,
    Usage,
    UsageLimitExceeded,
    UsageLimits,
)
from agentgraph.checkpoint import Compaction, CompactionFailed, MemoryStore, read_thread
from agentgraph.checkpoint._compact_step import COMPACTION_KEY, PLAN_KEY
from agentgraph.checkpoint._compaction import is_summary, measure
from agentgraph.nodes import chat
from agentgraph.testing import ScriptedModel

pytestmark = pytest.mark.anyio

SUMMARY = "they said a and b"


async def long_thread(store: MemoryStore, thread: str = "t") -> ScriptedModel:
    """Two long turns on `thread`: a third one (226 tokens with its input) must be compacted."""
    model = ScriptedModel("b" * 200, repeat=True)
    for question in ("first " + "a" * 200, "second " + "a" * 200):
        await GraphRunner().run(chat(model), AgentContext(question), store=store, thread_id=thread)
    return model


def policy(summarizer: ScriptedModel, **options) -> Compaction:
    return Compaction(200, model=summarizer, summary_tokens=20, **options)


def responded_usage(events) -> Usage:
    total = Usage()
    for event in events:
        if isinstance(event, ModelResponded):
            total += event.response.usage
    return total


async def test_the_summary_is_a_step_whose_model_call_sinks_see_and_usage_counts():
    store = MemoryStore()
    model = await long_thread(store)
    summarizer = ScriptedModel(SUMMARY)
    events = []
    agent = chat(model)
    out = await GraphRunner(sinks=[events.append]).run(
        agent, AgentContext("third"), store=store, thread_id="t", compaction=policy(summarizer)
    )
    steps = [(e.index, e.path, e.local_index) for e in events if isinstance(e, NodeStarted)]
    assert steps == [(1, ("chat", "compact"), 0), (2, ("chat", "chat"), 1)]
    calls = [
        (type(e).__name__, e.index, e.path, e.model)
        for e in events
        if isinstance(e, ModelRequested | ModelResponded)
    ]
    assert calls == [
        ("ModelRequested", 1, ("chat", "compact"), "scripted"),
        ("ModelResponded", 1, ("chat", "compact"), "scripted"),
        ("ModelRequested", 2, ("chat", "chat"), "scripted"),
        ("ModelResponded", 2, ("chat", "chat"), "scripted"),
    ]
    asked = next(e for e in events if isinstance(e, ModelRequested))
    assert asked.request == summarizer.requests[0]
    finished = next(e for e in events if isinstance(e, NodeFinished))
    assert finished.node.name == "compact" and is_summary(finished.context.history[0])
    # The run's usage holds the summary's tokens and request besides the chat's.
    summary, answer = [e.response.usage for e in events if isinstance(e, ModelResponded)]
    assert summary.input_tokens > 0 and summary.requests == 1
    assert out.usage == summary + answer == responded_usage(events)
    # The turn's input is the user's message after the summary and the kept turn.
    roles = [(m.role, m.content[:6]) for m in out.history]
    assert roles == [
        ("system", "Summar"),
        ("user", "second"),
        ("assistant", "bbbbbb"),
        ("user", "third"),
        ("assistant", "bbbbbb"),
    ]
    assert SUMMARY in out.history[0].content
    # The model was sent the compacted conversation, within the budget.
    assert measure(AgentContext(None, history=model.requests[-1].messages)) <= 200
    log = await store.load((await read_thread(store, "t")).head)
    assert {PLAN_KEY, COMPACTION_KEY} <= {e.key for e in log.effects}
    assert [(r.step, r.node, r.next, r.local) for r in log.steps] == [
        (1, "compact", "chat", 0),
        (2, "chat", "finish", 1),
    ]


async def test_a_usage_limit_the_summary_passes_stops_the_run_as_a_node_call_would():
    store = MemoryStore()
    model = await long_thread(store)
    before = len(model.requests)
    given = AgentContext("third")
    runner = GraphRunner(usage_limits=UsageLimits(input_tokens=50))
    with pytest.raises(UsageLimitExceeded) as stopped:
        await runner.run(
            chat(model), given, store=store, thread_id="t", compaction=policy(ScriptedModel("s"))
        )
    error = stopped.value
    assert error.step == 1 and error.path == ("chat", "compact")
    assert error.reason == "180 input tokens spent, the limit is 50"
    # The context kept is the turn's first one, uncompacted: the thread's two turns and the input.
    assert error.context.input == "third" and len(error.context.history) == 4
    assert len(model.requests) == before  # the chat node never ran
    # The same limit on a node's own call raises the same error, from that node.
    with pytest.raises(UsageLimitExceeded) as by_node:
        await runner.run(chat(model), AgentContext("x" * 400), store=MemoryStore())
    assert type(by_node.value) is type(error) and by_node.value.path == ("chat", "chat")


async def test_a_transient_error_on_the_summary_is_retried_under_the_runs_policy():
    store = MemoryStore()
    model = await long_thread(store)
    summarizer = ScriptedModel(TimeoutError("the summary timed out"), SUMMARY)
    waits = []

    async def sleep(seconds):
        waits.append(seconds)

    events = []
    runner = GraphRunner(
        retry=RetryPolicy(attempts=2, initial=0.25, jitter=0, sleep=sleep), sinks=[events.append]
    )
    out = await runner.run(
        chat(model),
        AgentContext("third"),
        store=store,
        thread_id="t",
        compaction=policy(summarizer),
    )
    retried = [(e.index, e.path, e.attempt) for e in events if isinstance(e, RetryScheduled)]
    assert retried == [(1, ("chat", "compact"), 1)] and waits == [0.25]
    finished = [e.step for e in events if isinstance(e, NodeFinished)]
    assert finished[0].path == ("chat", "compact") and finished[0].attempts == 2
    assert len(summarizer.requests) == 2 and SUMMARY in out.history[0].content
    # Without a policy that retries, the same error fails the run.
    await long_thread(store, "u")
    with pytest.raises(Exception, match="timed out") as failed:
        await GraphRunner(retry=RetryPolicy(attempts=1)).run(
            chat(model),
            AgentContext("third"),
            store=store,
            thread_id="u",
            compaction=policy(ScriptedModel(TimeoutError("the summary timed out"))),
        )
    assert failed.value.path == ("chat", "compact")


async def test_a_resume_after_the_summary_was_committed_does_not_ask_for_it_again():
    store = MemoryStore()
    model = await long_thread(store)
    summarizer = ScriptedModel(SUMMARY)  # one answer: a second request would fail
    crashes = [RuntimeError("the process died")]

    def crash_once(ctx):
        if crashes:
            raise crashes.pop()
        return ctx

    from agentgraph import GraphBuilder, node

    with GraphBuilder[str, object]("turn") as g:
        g.start.edge_to(node(crash_once, name="crash")).edge_to(chat(model)).edge_to(g.finish)
    graph = g.build()
    runner = GraphRunner(retry=RetryPolicy(attempts=1))
    with pytest.raises(Exception, match="the process died") as failed:
        await runner.run(
            graph, AgentContext("third"), store=store, thread_id="t", compaction=policy(summarizer)
        )
    run_id = (await read_thread(store, "t")).runs[-1][0]
    assert failed.value.step == 2
    events = []
    out = await GraphRunner(sinks=[events.append]).resume(graph, run_id, store)
    assert len(summarizer.requests) == 1
    assert [e.path for e in events if isinstance(e, NodeStarted)] == [
        ("turn", "crash"),
        ("turn", "chat"),
    ]
    assert SUMMARY in out.history[0].content and out.history[-2].content == "third"
    assert (await read_thread(store, "t")).head == run_id


async def test_a_resume_after_the_summary_came_back_but_before_its_step_committed_uses_the_record():
    store = MemoryStore()
    model = await long_thread(store)
    summarizer = ScriptedModel(SUMMARY)

    def stop_after_compact(step, node, ctx):
        if node.name == "compact":
            raise RuntimeError("the process died")

    runner = GraphRunner(on_step=[stop_after_compact])
    with pytest.raises(RuntimeError, match="the process died"):
        await runner.run(
            chat(model),
            AgentContext("third"),
            store=store,
            thread_id="t",
            compaction=policy(summarizer),
        )
    run_id = (await read_thread(store, "t")).runs[-1][0]
    assert (await store.load(run_id)).steps == ()  # nothing committed: the step ends on resume
    events = []
    out = await GraphRunner(sinks=[events.append]).resume(chat(model), run_id, store)
    assert len(summarizer.requests) == 1
    models = [e.path for e in events if isinstance(e, ModelRequested)]
    assert models == [("chat", "chat")]  # the summary came from the record
    assert next(e.path for e in events if isinstance(e, NodeStarted)) == ("chat", "compact")
    assert SUMMARY in out.history[0].content and out.history[-2].content == "third"
    assert out.usage.requests == 2  # the recorded summary still counts
    # A replay of the turn calls nothing and ends where the run did.
    replayed = await GraphRunner().replay(chat(ScriptedModel()), run_id, store)
    assert replayed == out


async def test_a_turn_that_stopped_before_its_summary_came_back_is_refused_on_resume():
    store = MemoryStore()
    model = await long_thread(store)
    broken = ScriptedModel(ValueError("the summarizer broke"))
    with pytest.raises(Exception, match="the summarizer broke"):
        await GraphRunner().run(
            chat(model),
            AgentContext("third"),
            store=store,
            thread_id="t",
            compaction=policy(broken),
        )
    thread = await read_thread(store, "t")
    run_id = thread.runs[-1][0]
    with pytest.raises(ResumeError, match="stopped before its compaction's summary") as refused:
        await GraphRunner().resume(chat(model), run_id, store)
    assert refused.value.context.input == "third"
    # The thread is free and goes on from its head: the next turn compacts again.
    out = await GraphRunner().run(
        chat(model),
        AgentContext("third"),
        store=store,
        thread_id="t",
        compaction=policy(ScriptedModel(SUMMARY)),
    )
    assert SUMMARY in out.history[0].content


async def test_a_compacted_turn_replays_exactly_without_calling_a_model():
    store = MemoryStore()
    model = await long_thread(store)
    summarizer = ScriptedModel(SUMMARY)
    out = await GraphRunner().run(
        chat(model),
        AgentContext("third"),
        store=store,
        thread_id="t",
        compaction=policy(summarizer),
    )
    head = (await read_thread(store, "t")).head
    events = []
    replayed = await GraphRunner(sinks=[events.append]).replay(chat(ScriptedModel()), head, store)
    assert replayed == out and len(summarizer.requests) == 1
    assert [e.path for e in events if isinstance(e, NodeStarted)] == [
        ("chat", "compact"),
        ("chat", "chat"),
    ]


async def test_a_summary_too_long_for_its_room_fails_in_its_step_with_the_context_kept():
    store = MemoryStore()
    model = await long_thread(store)
    wordy = ScriptedModel("w" * 400)
    with pytest.raises(CompactionFailed) as failed:
        await GraphRunner().run(
            chat(model), AgentContext("third"), store=store, thread_id="t", compaction=policy(wordy)
        )
    error = failed.value
    assert error.step == 1 and error.path == ("chat", "compact")
    assert error.context.input == "third" and len(error.context.history) == 4
    assert "over the 20 set aside" in str(error)


async def test_the_otel_sink_gives_the_summary_a_chat_span_under_the_compact_step():
    pytest.importorskip("opentelemetry.sdk", reason="needs the otel extra")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import SpanKind

    from agentgraph.tracing import OtelSink

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    store = MemoryStore()
    model = await long_thread(store)
    summarizer = ScriptedModel(SUMMARY, name="summarizer")
    try:
        await GraphRunner(sinks=[OtelSink(provider)]).run(
            chat(model),
            AgentContext("third"),
            store=store,
            thread_id="t",
            compaction=policy(summarizer),
        )
        spans = exporter.get_finished_spans()
    finally:
        provider.shutdown()
    by_id = {s.context.span_id: s for s in spans}
    summary = next(s for s in spans if s.name == "chat summarizer")
    assert summary.kind is SpanKind.CLIENT
    assert summary.attributes["gen_ai.operation.name"] == "chat"
    assert summary.attributes["gen_ai.request.max_tokens"] == 20
    assert summary.attributes["gen_ai.usage.input_tokens"] > 0
    step = by_id[summary.parent.span_id]
    assert step.name == "compact"
    run = by_id[step.parent.span_id]
    assert run.parent is None and run.attributes["gen_ai.operation.name"] == "invoke_workflow"
    below = sorted(
        s.name for s in spans if s.parent is not None and s.parent.span_id == run.context.span_id
    )
    assert below == ["chat", "compact"]


async def test_output_guards_are_shown_the_summary_as_any_answer():
    from agentgraph import NodeFailed
    from agentgraph.guards import GuardrailTripped, Guards, MaxLength

    store = MemoryStore()
    model = await long_thread(store)
    runner = GraphRunner(guards=Guards(output=[MaxLength(5)]))
    with pytest.raises(NodeFailed) as failed:
        await runner.run(
            chat(model),
            AgentContext("third"),
            store=store,
            thread_id="t",
            compaction=policy(ScriptedModel(SUMMARY)),
        )
    assert failed.value.path == ("chat", "compact")
    assert isinstance(failed.value.__cause__, GuardrailTripped)
    assert failed.value.context.input == "third"

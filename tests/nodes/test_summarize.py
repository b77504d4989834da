import sys
from typing import Any

import pytest

from agentgraph import (
    AgentContext,
    BadRequestError,
    GraphBuilder,
    GraphRunner,
    Message,
    ModelRequested,
    NodeFailed,
    OutputError,
    RetryPolicy,
    ServerError,
    Settings,
    Summarized,
    ToolCall,
)
from agentgraph.nodes import (
    answer,
    chat,
    count_context_tokens,
    estimate_tokens,
    needs_summary,
    summarize,
    tiktoken_counter,
    user_turn,
)
from agentgraph.nodes._summarize import cut_point
from agentgraph.testing import ScriptedModel

pytestmark = pytest.mark.anyio


async def no_sleep(seconds: float) -> None:
    return None


def call(call_id: str, name: str = "look", **arguments: Any) -> ToolCall:
    return ToolCall(call_id, name, arguments)


def result(call_id: str, text: str, name: str = "look") -> Message:
    return Message.tool(call_id, text, name=name)


def long(text: str) -> str:
    return f"{text} " + "x" * 400


# u0 a1(c1) t2 a3 u4 a5(c2,c3 parallel) t6(c3) t7(c2) a8 u9 a10(c4) t11
HISTORY = (
    Message.user(long("first question")),
    Message.assistant(tool_calls=(call("c1", q="a"),)),
    result("c1", long("first result")),
    Message.assistant(long("first answer")),
    Message.user(long("second question")),
    Message.assistant(tool_calls=(call("c2", q="b"), call("c3", q="c"))),
    result("c3", long("third result")),
    result("c2", long("second result")),
    Message.assistant(long("second answer")),
    Message.user("latest question"),
    Message.assistant(tool_calls=(call("c4", q="d"),)),
    result("c4", "latest result"),
)


def callers(history) -> dict[int, int]:
    issued: dict[str, int] = {}
    found = {}
    for i, m in enumerate(history):
        for c in m.tool_calls:
            issued[c.id] = i
        if m.role == "tool" and m.tool_call_id in issued:
            found[i] = issued[m.tool_call_id]
    return found


def assert_groups_whole(history, cut: int) -> None:
    for i, caller in callers(history).items():
        assert (i < cut) == (caller < cut), f"tool result {i} and its call {caller} split at {cut}"
    if cut < len(history):
        assert history[cut].role != "tool"


async def run_node(node, ctx, *, runner=None, events=None):
    with GraphBuilder[Any, Any]("g") as g:
        g.start.edge_to(node).edge_to(g.finish)
    runner = runner or GraphRunner(sinks=[events.append] if events is not None else [])
    return await runner.run(g.build(), ctx)


# -- cut points -------------------------------------------------------------------


@pytest.mark.parametrize("keep_last", range(len(HISTORY) + 2))
def test_no_cut_point_separates_a_tool_call_from_its_results(keep_last):
    cut = cut_point(HISTORY, keep_last=keep_last)
    assert_groups_whole(HISTORY, cut)
    assert cut <= 9  # the latest turn (from the last user message on) is always kept
    assert cut <= max(len(HISTORY) - keep_last, 0) or keep_last == 0


@pytest.mark.parametrize(
    ("keep_last", "expected"),
    [
        (0, 9),  # whole: everything before the latest user message
        (3, 9),  # the latest turn is longer than 3 messages
        (4, 8),
        (5, 5),  # would start at t7: moves back to the parallel call a5
        (6, 5),  # would start at t6 (answers c3 of a5): moves back to a5
        (7, 5),
        (8, 4),
        (10, 1),  # would start at t2: moves back to a1
        (12, 0),
        (40, 0),
    ],
)
def test_cut_points_inside_groups_move_to_the_calling_message(keep_last, expected):
    assert cut_point(HISTORY, keep_last=keep_last) == expected


def test_cut_point_of_an_empty_history_and_of_histories_without_a_user_message():
    assert cut_point(()) == 0
    only_tools = (
        Message.assistant(tool_calls=(call("c1"),)),
        result("c1", "r1"),
        Message.assistant("done"),
        Message.assistant(tool_calls=(call("c2"),)),
        result("c2", "r2"),
    )
    # The latest turn is the last message; its call comes along with it.
    assert cut_point(only_tools) == 3


def test_reused_call_ids_pair_each_result_with_the_latest_call_before_it():
    history = (
        Message.user("q1"),
        Message.assistant(tool_calls=(call("call_0"),)),
        result("call_0", "r1"),
        Message.assistant(tool_calls=(call("call_0"),)),
        result("call_0", "r2"),
        Message.user("q2"),
    )
    assert cut_point(history, keep_last=1) == 5
    assert cut_point(history, keep_last=2) == 3
    assert cut_point(history, keep_last=4) == 1


def test_an_orphan_tool_result_stays_with_what_precedes_it():
    history = (Message.user("q1"), Message.assistant("a"), result("gone", "r"), Message.user("q2"))
    assert cut_point(history, keep_last=2) == 1


# -- the node ------------------------------------------------------------------------


async def test_under_the_threshold_nothing_changes_and_the_model_is_not_called():
    model = ScriptedModel()
    shrink = summarize(model, context_window=100_000)
    ctx = AgentContext("go", history=HISTORY, system_prompt="Be brief.")
    events: list[Any] = []
    out = await run_node(shrink, ctx, events=events)
    assert out.history == ctx.history and out.system_prompt == "Be brief."
    assert model.requests == ()
    assert not any(isinstance(e, Summarized | ModelRequested) for e in events)
    assert not shrink.needs_summary(ctx)


async def test_an_empty_history_over_the_threshold_is_left_alone():
    model = ScriptedModel()
    ctx = AgentContext("go", system_prompt="x" * 4000)
    shrink = summarize(model, context_window=100)
    assert shrink.needs_summary(ctx)
    out = await run_node(shrink, ctx)
    assert list(out.history) == [] and out.system_prompt == ctx.system_prompt
    assert model.requests == ()


async def test_whole_strategy_keeps_system_prompt_and_latest_turn():
    model = ScriptedModel("They asked two questions; both were answered.")
    ctx = AgentContext(
        "go",
        history=HISTORY,
        system_prompt="Be brief.",
        tools=(),
        state={"k": 1},
        settings=Settings(model="big", temperature=0.3),
    )
    events: list[Any] = []
    out = await run_node(summarize(model, context_window=600), ctx, events=events)

    assert out.system_prompt == "Be brief." and out.state == {"k": 1} and out.input == "go"
    summary, *kept = out.history
    assert summary == Message.system(
        "Summary of the earlier conversation:\nThey asked two questions; both were answered."
    )
    assert kept == list(HISTORY[9:])
    (request,) = model.requests
    assert request.tools == () and request.tool_choice is None
    assert request.model == "big" and request.temperature == 0.3
    instructions, transcript = request.messages
    assert instructions.role == "system" and "Summarize" in instructions.content
    assert transcript.role == "user"
    assert "first question" in transcript.content and "second answer" in transcript.content
    assert 'assistant called look({"q":"b"})' in transcript.content
    assert "latest question" not in transcript.content
    assert out.usage.requests == 1
    (done,) = [e for e in events if isinstance(e, Summarized)]
    assert (done.strategy, done.summarized, done.kept, done.requests) == ("whole", 9, 3, 1)
    assert done.tokens_after < done.tokens_before == count_context_tokens(ctx)
    assert done.tokens_after == count_context_tokens(out)


async def test_keep_last_with_a_cut_inside_parallel_tool_calls_keeps_the_whole_group():
    model = ScriptedModel("summary")
    shrink = summarize(model, context_window=600, strategy="keep_last", keep_last=6)
    out = await run_node(shrink, AgentContext("go", history=HISTORY))
    summary, *kept = out.history
    assert summary.content.endswith("summary")
    assert kept == list(HISTORY[5:])  # from the parallel call a5, not from its result t6
    assert kept[0].tool_calls and {m.tool_call_id for m in kept[1:3]} == {"c2", "c3"}
    transcript = model.requests[0].messages[1].content
    assert "second question" in transcript and "third result" not in transcript


async def test_chunked_strategy_summarizes_in_pieces_and_carries_the_summary_forward():
    seen: list[str] = []

    def rolling(request):
        text = request.messages[1].content
        if seen:  # every piece after the first carries the summary so far
            assert text.startswith(f"Summary of the conversation so far:\n{seen[-1]}\n\n")
        else:
            assert text.startswith("The conversation:\n")
        seen.append(f"S{len(seen) + 1}")
        return seen[-1]

    model = ScriptedModel(*[rolling] * 10)
    shrink = summarize(model, context_window=600, strategy="chunked", chunk_tokens=250)
    events: list[Any] = []
    out = await run_node(shrink, AgentContext("go", history=HISTORY), events=events)
    assert len(model.requests) >= 3
    assert out.history[0].content.endswith(seen[-1])
    assert list(out.history[1:]) == list(HISTORY[9:])
    transcript = "".join(r.messages[1].content for r in model.requests)
    for message in HISTORY[:9]:
        assert message.content[:20] in transcript  # every old message went into some piece
    for request in model.requests:
        assert request.tools == ()
        assert count_context_tokens(AgentContext(None, history=request.messages)) < 600
    (done,) = [e for e in events if isinstance(e, Summarized)]
    assert done.requests == len(model.requests) == out.usage.requests


async def test_chunked_cuts_a_message_larger_than_a_piece():
    history = (Message.user("y" * 3000), Message.assistant("ok"), Message.user("next"))
    model = ScriptedModel("a", "b", "c", "d", "e", "f", "g")
    shrink = summarize(model, context_window=500, strategy="chunked", chunk_tokens=300)
    out = await run_node(shrink, AgentContext("go", history=history))
    assert 3 <= len(model.requests) <= 4
    assert [m.content for m in out.history[1:]] == ["next"]


@pytest.mark.parametrize("strategy", ["whole", "chunked"])
async def test_a_failed_summary_call_leaves_the_history_untouched(strategy):
    failure = BadRequestError("context too long", provider="scripted", status=400)
    model = ScriptedModel("S1", failure) if strategy == "chunked" else ScriptedModel(failure)
    shrink = summarize(model, context_window=600, strategy=strategy, chunk_tokens=250)
    ctx = AgentContext("go", history=HISTORY)
    runner = GraphRunner(retry=RetryPolicy(attempts=3, sleep=no_sleep))
    with pytest.raises(NodeFailed) as caught:
        await run_node(shrink, ctx, runner=runner)
    assert caught.value.__cause__ is failure
    assert caught.value.attempts == 1  # a bad request is not retried
    assert caught.value.context.history == HISTORY
    assert caught.value.path[-1] == "summarize"


async def test_a_retryable_provider_error_is_retried_and_then_succeeds():
    model = ScriptedModel(ServerError("overloaded", provider="scripted", status=503), "S")
    runner = GraphRunner(retry=RetryPolicy(attempts=3, sleep=no_sleep))
    out = await run_node(
        summarize(model, context_window=600), AgentContext("go", history=HISTORY), runner=runner
    )
    assert out.history[0].content.endswith("S") and len(model.requests) == 2


async def test_a_retryable_error_that_persists_surfaces_as_a_node_failure():
    errors = [ServerError("down", provider="scripted", status=503) for _ in range(2)]
    model = ScriptedModel(*errors)
    runner = GraphRunner(retry=RetryPolicy(attempts=2, sleep=no_sleep))
    with pytest.raises(NodeFailed) as caught:
        await run_node(
            summarize(model, context_window=600),
            AgentContext("go", history=HISTORY),
            runner=runner,
        )
    assert caught.value.attempts == 2 and caught.value.__cause__ is errors[1]
    assert caught.value.context.history == HISTORY


async def test_an_empty_summary_is_refused():
    model = ScriptedModel("   ")
    with pytest.raises(NodeFailed) as caught:
        await run_node(summarize(model, context_window=600), AgentContext("go", history=HISTORY))
    assert isinstance(caught.value.__cause__, OutputError)
    assert caught.value.context.history == HISTORY


async def test_settings_message_and_instructions_are_the_users_to_choose():
    model = ScriptedModel("S")
    shrink = summarize(
        model,
        context_window=600,
        instructions="Summarize tersely.",
        settings=Settings(model="small", max_output=200),
        message=lambda text: Message.user(f"(earlier: {text})"),
    )
    ctx = AgentContext("go", history=HISTORY, settings=Settings(model="big", temperature=0.1))
    out = await run_node(shrink, ctx)
    assert out.history[0] == Message.user("(earlier: S)")
    request = model.requests[0]
    assert request.messages[0] == Message.system("Summarize tersely.")
    assert (request.model, request.max_output, request.temperature) == ("small", 200, 0.1)


async def test_needs_summary_drives_a_dynamic_edge():
    model = ScriptedModel("S", "the reply")
    out = await GraphRunner().run(_chat_graph(model), AgentContext("and now?", history=HISTORY))
    assert out.input == "the reply"
    sent = model.requests[1].messages
    assert sent[0].content.endswith("S") and sent[-1] == Message.user("and now?")
    assert len(sent) == 2  # the summary, then the new turn

    small = ScriptedModel("hello")
    out = await GraphRunner().run(_chat_graph(small), AgentContext("hi"))
    assert out.input == "hello" and len(small.requests) == 1  # no summary call


def _chat_graph(model):
    shrink = summarize(model, context_window=600)
    think = chat(model)
    prepare = user_turn()
    reply = answer()
    with GraphBuilder[str, str]("chat") as g:
        g.start.edge_to(prepare)
        prepare.edge_to(
            lambda ctx: shrink if shrink.needs_summary(ctx) else think, targets=(shrink, think)
        )
        shrink.edge_to(think)
        think.edge_to(reply).edge_to(g.finish)
    return g.build()


def test_module_level_needs_summary_matches_the_node():
    ctx = AgentContext("go", history=HISTORY, system_prompt="sys")
    tokens = count_context_tokens(ctx)
    assert needs_summary(ctx, context_window=tokens, threshold=0.99)
    assert not needs_summary(ctx, context_window=tokens, threshold=1.0)
    assert needs_summary(ctx, context_window=tokens * 2, threshold=0.4, count=lambda t: len(t))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"context_window": 0}, "context_window"),
        ({"context_window": 100, "threshold": 0}, "threshold"),
        ({"context_window": 100, "threshold": 1.5}, "threshold"),
        ({"context_window": 100, "strategy": "half"}, "strategy"),
        ({"context_window": 100, "keep_last": 0}, "keep_last"),
        ({"context_window": 100, "chunk_tokens": 0}, "chunk_tokens"),
    ],
)
def test_bad_options_are_refused(options, message):
    with pytest.raises(ValueError, match=message):
        summarize(ScriptedModel(), **options)


# -- token counting ----------------------------------------------------------------


def test_estimate_and_context_counts():
    assert [estimate_tokens(t) for t in ("", "a", "abcd", "abcde")] == [0, 1, 1, 2]
    ctx = AgentContext(
        None,
        system_prompt="abcd" * 10,
        history=(Message.user("abcd"), Message.assistant(tool_calls=(call("c1", q="zz"),))),
    )
    # 10 + 4 (system) + 1 + 4 (user) + tokens of "look\n{"q":"zz"}" (15 chars -> 4) + 4
    assert count_context_tokens(ctx) == 10 + 4 + 1 + 4 + 4 + 4


def _tiny_encoding(tiktoken):
    ranks = {bytes([b]): b for b in range(256)}
    ranks[b"ab"] = 256
    return tiktoken.Encoding(
        "tiny", pat_str=r"\S+|\s+", mergeable_ranks=ranks, special_tokens={"<|end|>": 257}
    )


def test_tiktoken_counter_counts_with_a_local_encoding():
    tiktoken = pytest.importorskip("tiktoken", reason="the `tokens` extra is not installed")
    count = tiktoken_counter(_tiny_encoding(tiktoken))
    assert count("ab") == 1 and count("abc") == 2 and count("ab ab") == 3
    assert count("<|end|>") == 7  # special-token text counts as plain text, never raises
    ctx = AgentContext(None, history=(Message.user("ab"),))
    assert count_context_tokens(ctx, count) == 1 + 4


def test_tiktoken_counter_by_name_and_its_failures(monkeypatch):
    tiktoken = pytest.importorskip("tiktoken", reason="the `tokens` extra is not installed")
    # Named encodings are downloaded on first use; the network is not reachable here,
    # so the loader is replaced by one that answers from memory or fails.
    tiny = _tiny_encoding(tiktoken)
    asked: list[str] = []

    def fake_get_encoding(name: str):
        asked.append(name)
        if name == "cl100k_base":
            return tiny
        if name == "offline":
            raise ConnectionError("no route to host")
        raise ValueError(f"Unknown encoding {name}")

    monkeypatch.setattr(tiktoken, "get_encoding", fake_get_encoding)
    assert tiktoken_counter()("ab ab") == 3 and asked == ["cl100k_base"]
    with pytest.raises(OSError, match="TIKTOKEN_CACHE_DIR"):
        tiktoken_counter("offline")
    with pytest.raises(ValueError, match="no encoding named 'nope'"):
        tiktoken_counter("nope")
    with pytest.raises(TypeError, match=r"tiktoken\.Encoding"):
        tiktoken_counter(42)


def test_tiktoken_counter_without_tiktoken_says_which_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    with pytest.raises(ImportError, match=r"agentgraph-engine\[tokens\]"):
        tiktoken_counter()

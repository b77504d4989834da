"""The one workflow that runs every graph, and the journal that turns effects into activities.

`GraphWorkflow` runs the graph its input names, among the graphs of the
worker, with the worker's `GraphRunner` and `WorkflowJournal` as the run's
journal (the durability protocol of `agentgraph._core._journal`). Temporal's history
is the record: a replayed workflow gets every activity's result back from it,
so committed steps, model calls and tool calls are not done again.

A run's guard rounds go on in the workflow: a deterministic guard
(`Guard.deterministic`) is asked there, any other (a judge) in an activity, so
its calls are made once and served from the history on replay.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutType
from temporalio.exceptions import TimeoutError as ActivityTimeout

from .._core._context import AgentContext
from .._core._errors import AgentGraphError, GraphCancelled, RunError, UsageError
from .._core._journal import EmbedCall, ModelCall, OnceCall, RemoteJournal, ToolAnswer, ToolsCall
from .._core._runtime import RunHandle
from ..guards._check import GuardRound, ask_one
from ..guards._effects import ResultsChecked
from ..guards._guard import Decision, Guard, Stage
from ..llm._messages import ToolCall
from ..llm._model import ChatRequest, ChatResponse
from ._registry import Registry, guards_of, registry_for

if TYPE_CHECKING:
    from .._core._graph import Graph
    from .._core._json import Types
    from .._core._node import Node
    from .._core._runtime import Interrupt, Runtime
    from ..tools._tool import Tool

__all__ = (
    "ANSWER",
    "EMBED",
    "GUARD",
    "MODEL",
    "ONCE",
    "STATE",
    "TOOL",
    "WORKFLOW",
    "ActivityFailed",
    "GraphWorkflow",
    "WorkflowJournal",
)

T = TypeVar("T")

WORKFLOW = "agentgraph.graph"
MODEL = "agentgraph.model"
TOOL = "agentgraph.tool"
EMBED = "agentgraph.embed"
ONCE = "agentgraph.once"
GUARD = "agentgraph.guard"
ANSWER = "agentgraph.answer"
STATE = "agentgraph.state"


class ActivityFailed(AgentGraphError):
    """An effect's activity failed for good: Temporal's attempts are spent, or it had one.

    `.activity` names the effect ("agentgraph.model", "agentgraph.tool", ...),
    `.kind` the error the activity raised (or the timeout that ended it).
    """

    def __init__(self, activity: str, kind: str, message: str) -> None:
        self.activity = activity
        self.kind = kind
        super().__init__(f"{activity} failed: {kind}: {message}")

    @classmethod
    def of(cls, activity: str, error: ActivityError) -> ActivityFailed:
        cause = error.cause
        if isinstance(cause, ApplicationError):
            return cls(activity, cause.type or "ApplicationError", cause.message)
        if isinstance(cause, ActivityTimeout):
            kind = TimeoutType(cause.type).name if cause.type is not None else "TIMEOUT"
            return cls(activity, "timeout", f"{kind.lower()} (a worker lost or too slow)")
        return cls(activity, type(cause).__name__, str(cause))


async def _activity(name: str, args: list[Any], options: dict[str, Any]) -> Any:
    """Run one effect's activity; its final failure as an `ActivityFailed`."""
    try:
        return await workflow.execute_activity(name, args=args, **options)
    except ActivityError as error:
        raise ActivityFailed.of(name, error) from error


class _Continue(BaseException):
    """Unwinds the run at a committed root step so the workflow can continue as new.

    Raised only by `WorkflowJournal.commit` for the root graph, between two
    steps, so no node's `except` is on its way; caught by `GraphWorkflow.run`.
    """

    def __init__(self, target: str, context: AgentContext[Any], local: int, steps: int) -> None:
        self.at = {"node": target, "local": local, "steps": steps}
        self.context = context
        super().__init__(target)


class WorkflowJournal(RemoteJournal):
    """The durability protocol inside a workflow: every effect is an activity.

    Temporal's history records each activity's result, so a replayed workflow
    (a new worker taking the run over) is served the results instead of
    repeating the calls. Steps need no record of their own: the history of
    the effects that made them is one. At a committed step of the root graph,
    once the history is long enough, the run unwinds and continues as new
    from that step.
    """

    replaying = False

    def __init__(
        self,
        flow: GraphWorkflow,
        registry: Registry,
        run_id: str,
        initial: AgentContext[Any],
        at: dict[str, Any] | None,
    ) -> None:
        self._flow = flow
        self._registry = registry
        self._at = at
        self.run_id = run_id
        self.initial = initial
        self.resumed_at = None if at is None else (initial, int(at["steps"]))

    def patched(self, name: str) -> bool:
        """`rt.patched`: Temporal's `workflow.patched`, whose marker the history keeps, so a
        replay of a run from before the patch answers False and a new run True."""
        return workflow.patched(name)

    # -- the loop's hooks -----------------------------------------------------------------
    def enter(
        self, parent: Runtime, rt: Runtime, index: int, local: int, given: AgentContext[Any]
    ) -> None:
        return None

    def new_attempt(self, rt: Runtime) -> None:
        return None

    def reenter(
        self, rt: Runtime, graph: Graph[Any, Any]
    ) -> tuple[Node[Any, Any], AgentContext[Any], int, int] | None:
        if self._at is None or rt.depth != 0:
            return None
        at, self._at = self._at, None
        nodes = {node.name: node for node in (*graph.nodes, graph.finish)}
        target = nodes.get(str(at["node"]))
        if target is None:
            raise UsageError(
                f"graph {graph.name!r} has no node {at['node']!r} to continue from: "
                "the worker's graph changed under a running workflow"
            )
        return target, self.initial, int(at["local"]), int(at["steps"])

    def commit(
        self,
        rt: Runtime,
        source: Node[Any, Any],
        target: Node[Any, Any],
        out: AgentContext[Any],
        local: int,
    ) -> None:
        if rt.depth != 0:
            return
        info = workflow.info()
        if (
            info.get_current_history_length() >= self._registry.history_events
            or info.is_continue_as_new_suggested()
        ):
            raise _Continue(target.name, out, local, rt.steps)

    # -- effects --------------------------------------------------------------------------
    async def model(
        self, rt: Runtime, request: ChatRequest, call: Callable[[], Awaitable[ChatResponse]]
    ) -> ChatResponse:
        if not isinstance(call, ModelCall):
            raise UsageError("a model call on Temporal goes through rt.call_model")
        name = self._registry.name_of("models", call.model)
        response: ChatResponse = await _activity(
            MODEL, [name, request], self._registry.policy("model").options()
        )
        return response

    def recorded_model(self, rt: Runtime, request: ChatRequest) -> tuple[str, ChatResponse | None]:
        return "", None  # a remote journal's layer makes a streamed call through `model`

    def record_model(
        self, rt: Runtime, key: str, request: ChatRequest, response: ChatResponse
    ) -> None:
        return None

    async def value(self, rt: Runtime, name: str, call: Callable[[], Awaitable[T]]) -> T:
        if isinstance(call, EmbedCall):
            embedder = self._registry.name_of("embedders", call.embedder)
            texts = list(call.texts)
            options = self._registry.policy("embed").options()
            result: T = await _activity(EMBED, [embedder, texts], options)
            return result
        if isinstance(call, OnceCall):
            fn = self._registry.name_of("functions", call.fn)
            options = self._registry.policy("once").options()
            result = await _activity(ONCE, [fn, list(call.args)], options)
            return result
        if isinstance(call, GuardRound):
            records: T = await call.run(self._guard)  # type: ignore[assignment]
            return records
        raise UsageError(f"the value {name!r} cannot be made by an activity")

    async def _guard(self, item: Guard, stage: Stage, value: Any, limit: float) -> Decision:
        """`item`'s decision: asked here if it is deterministic, else in an activity."""
        if item.deterministic:  # no timer: a deterministic check does not wait on anything
            return await ask_one(item, stage, value, math.inf)
        name = self._registry.name_of("guards", item)
        options = self._registry.policy("guard").options()
        found: dict[str, Any] = await _activity(GUARD, [stage, name, value, limit], options)
        return Decision(
            found["action"],
            found["reason"],
            found.get("value"),
            found["detail"],
            usage=found.get("usage"),
        )

    async def tools(
        self,
        rt: Runtime,
        calls: Sequence[ToolCall],
        unsafe: frozenset[str],
        run: Callable[[Sequence[ToolCall]], Awaitable[list[ToolAnswer]]],
    ) -> list[ToolAnswer]:
        if not isinstance(run, ToolsCall):
            raise UsageError("tool calls on Temporal go through rt.call_tools")
        allowed = [tool.name for tool in run.tools]
        for tool in run.tools:
            if self._registry.name_of("tools", tool) != tool.name:
                raise UsageError(f"tool {tool.name!r} is registered under another name")
        tools = cast("Sequence[Tool[..., Any]]", run.tools)  # what rt.call_tools was given
        wants_context = any(tool.context_param is not None for tool in tools)
        context = run.context if wants_context else None
        gate = asyncio.Semaphore(run.limit)
        policy = self._registry.policy("tool")
        guards = guards_of(rt._run.guards)
        checked = ResultsChecked(rt, guards, run.run) if guards and guards.results else None

        async def one(call: ToolCall) -> ToolAnswer:
            async with gate:
                # With result guards the activity checks its answer before returning it,
                # so the tool's raw result never enters the history.
                found = await _activity(
                    TOOL,
                    [
                        allowed,
                        call,
                        run.timeout,
                        context,
                        run.max_result_chars,
                        checked is not None,
                    ],
                    policy.options(retry_safe=call.name not in unsafe),
                )
            if checked is None:
                answer: ToolAnswer = found
                return answer
            asked, message, duration, records = found
            return await checked.settled((asked, message, duration), records)

        return list(await asyncio.gather(*(one(call) for call in calls)))

    async def interrupt(self, rt: Runtime, question: Any) -> Any:
        flow = self._flow
        flow.question, flow.asking = question, True
        await workflow.wait_condition(lambda: bool(flow.answers))
        flow.question, flow.asking = None, False
        return flow.answers.pop(0)

    # -- the run's end --------------------------------------------------------------------
    async def finish(self) -> None:
        return None

    async def settle(self, stopped: Interrupt | None = None) -> None:
        return None

    def close(self) -> None:
        return None


class _Source:
    """`store=` for the runner: opens the workflow's journal (a `JournalSource`)."""

    def __init__(self, journal: WorkflowJournal) -> None:
        self._journal = journal

    async def open_run(
        self, graph: Graph[Any, Any], ctx: AgentContext[Any], run_id: str
    ) -> WorkflowJournal:
        return self._journal

    async def open_resume(
        self, graph: Graph[Any, Any], run_id: str, answer: Any, types: Types
    ) -> WorkflowJournal:
        raise UsageError("a run on Temporal resumes itself: its workflow replays")

    async def open_replay(
        self, graph: Graph[Any, Any], run_id: str, types: Types
    ) -> WorkflowJournal:
        raise UsageError("a run on Temporal is replayed by Temporal's Replayer")


def _failure(error: AgentGraphError) -> ApplicationError:
    """The workflow's failure for `error`: its kind, message, and last context as details."""
    details: dict[str, Any] = {}
    if isinstance(error, RunError):
        details = {"context": error.context, "step": error.step, "path": list(error.path)}
        timeout = getattr(error, "timeout", None)
        if isinstance(timeout, float | int):
            details["timeout"] = float(timeout)
    return ApplicationError(str(error), details, type=type(error).__name__, non_retryable=True)


@workflow.defn(name=WORKFLOW)
class GraphWorkflow:
    """Runs the graph its input names, among the graphs of the worker, to its finish.

    Input: `{"graph": name, "context": ctx}` (and, after continue-as-new,
    `"at"`: the node, graph-local and run-wide step counts to go on from).
    Signal `agentgraph.answer` answers the question of `rt.interrupt`; query
    `agentgraph.state` returns the last context, its step and any open question.
    """

    def __init__(self) -> None:
        self.handle = RunHandle()
        self.answers: list[Any] = []
        self.question: Any = None
        self.asking = False

    @workflow.run
    async def run(self, start: dict[str, Any]) -> AgentContext[Any]:
        info = workflow.info()
        # A pinned run's tasks all come from workers of the version it started on, so its
        # graphs are that version's even when a worker of another version shares the process.
        version = info.get_current_deployment_version()
        built = None if version is None else version.to_canonical_string()
        registry = registry_for(info.task_queue, built)
        try:
            graph = registry.graph(str(start["graph"]))
        except UsageError as error:
            raise _failure(error) from None
        ctx: AgentContext[Any] = start["context"]
        at = start.get("at")
        journal = WorkflowJournal(self, registry, info.workflow_id, ctx, at)
        try:
            return await registry.runner.run(
                graph, ctx, handle=self.handle, store=_Source(journal), run_id=info.workflow_id
            )
        except _Continue as carry:
            carried = {"graph": graph.name, "context": carry.context, "at": carry.at}
            workflow.continue_as_new(carried)
        except asyncio.CancelledError:
            last = self.handle.context if self.handle.context is not None else ctx
            raise _failure(GraphCancelled(context=last, step=self.handle.step)) from None
        except AgentGraphError as error:
            raise _failure(error) from None

    @workflow.signal(name=ANSWER)
    def answer(self, value: Any) -> None:
        self.answers.append(value)

    @workflow.query(name=STATE)
    def state(self) -> dict[str, Any]:
        return {
            "context": self.handle.context,
            "step": self.handle.step,
            "asking": self.asking,
            "question": self.question,
        }

"""A turn another process runs on a thread while this server works out its own turn of it.

Two store objects on one SQLite file stand in for two processes. The other
process's turn comes in after this server read (and, when the client's
conversation differs, rewound) the thread and before this server's turn
holds it: the server's turn is refused with `ThreadBusy`, and the other turn
stays the thread's head, its messages whole.
"""

from pathlib import Path
from typing import Any

import anyio
import pytest

from agentgraph import AgentContext, GraphRunner
from agentgraph.checkpoint import SQLiteStore, ThreadBusy, ThreadMoved, read_thread, rewind_thread
from agentgraph.tracing import Redactor
from agentgraph.web import _runs
from agentgraph.web._runs import Runs
from tests.web.test_agui_client import remembers
from tests.web.test_runs_at_once import said

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("client", "rewound"),
    [(("a", "a", "b"), False), (("x", "a", "b"), True)],
    ids=["continued", "rewound"],
)
async def test_a_turn_slipped_in_by_another_process_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, client: tuple[str, ...], rewound: bool
) -> None:
    path = tmp_path / "runs.db"
    ours, theirs = SQLiteStore(path), SQLiteStore(path)
    graph = remembers()
    await GraphRunner().run(graph, said("a"), store=theirs, run_id="t1", thread_id="t")
    real = _runs.on_thread

    async def then_another_turn(*args: Any) -> Any:
        worked_out = await real(*args)
        await ours.flush()  # the rewind's lease is given back in the store's next commit
        other = said("c")
        await GraphRunner().run(graph, other, store=theirs, run_id="t2", thread_id="t")
        return worked_out

    monkeypatch.setattr(_runs, "on_thread", then_another_turn)
    runs = Runs(graph, runner=GraphRunner(), store=ours, redactor=Redactor())
    async with anyio.create_task_group() as tg:
        runs.tasks = tg
        live = await runs.start(said(*client), run_id="r", thread_id="t")
        await live.done.wait()
    assert live.status == "failed" and live.error is not None
    assert live.error.startswith("ThreadMoved: thread 't' moved on"), live.error
    assert "'t2'" in live.error
    thread = await read_thread(ours, "t")
    assert thread.head == "t2"
    # The other turn went on from the thread as it found it, the rewind included.
    before = [] if rewound else ["a", "a"]
    assert [m.content for m in thread.messages] == [*before, "c", " | ".join([*before, "c"])]
    assert ("r", thread.head) not in thread.runs and all(run != "r" for run, _ in thread.runs)
    assert len(thread.runs) == (3 if rewound else 2)  # t1, the rewind's seed, t2; r never began
    for store in (ours, theirs):
        await store.aclose()


async def test_a_rewind_of_a_head_that_moved_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    ours, theirs = SQLiteStore(path), SQLiteStore(path)
    graph = remembers()
    await GraphRunner().run(graph, said("a"), store=ours, run_id="t1", thread_id="t")
    await GraphRunner().run(graph, said("b"), store=theirs, run_id="t2", thread_id="t")
    with pytest.raises(ThreadMoved, match="its head is run 't2', not 't1'") as moved:
        await rewind_thread(ours, "t", 0, expect_head="t1")
    assert isinstance(moved.value, ThreadBusy)
    assert (moved.value.head, moved.value.expected) == ("t2", "t1")
    with pytest.raises(ThreadBusy, match="'t2'"):
        await GraphRunner().run(
            graph, AgentContext("c"), store=ours, run_id="r", thread_id="t", expect_head="t1"
        )
    with pytest.raises(ThreadBusy, match="'t2'"):
        await GraphRunner().run(
            graph, AgentContext("c"), store=ours, run_id="r2", thread_id="t", expect_head=None
        )
    assert (await read_thread(theirs, "t")).head == "t2"
    await GraphRunner().run(
        graph, AgentContext("c"), store=ours, run_id="r3", thread_id="t", expect_head="t2"
    )
    assert (await read_thread(theirs, "t")).head == "r3"
    for store in (ours, theirs):
        await store.aclose()

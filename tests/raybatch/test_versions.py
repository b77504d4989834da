"""A batch over runs that started on v1: each row resumes on its starting version.

The runner, with its `GraphVersions`, is pickled to the actors.
"""

import functools

import anyio
import pytest

from agentgraph import AgentContext, GraphRunner, GraphVersions
from agentgraph.checkpoint import SQLiteStore
from agentgraph.ray import run_batch
from agentgraph.ray._batch import run_id_for
from tests.raybatch.versions import V1, V2

pytestmark = pytest.mark.timeout(240)

ROWS = 4


def stop_on_v1(db, batch_id, armed):
    """Start each row's run on v1; it stops after its first step."""

    async def start():
        async with SQLiteStore(db) as store:
            for i in range(ROWS):
                rid = run_id_for(batch_id, f"k{i}")
                with pytest.raises(Exception, match="stopped before the deploy"):
                    await GraphRunner().run(V1, AgentContext(i), store=store, run_id=rid)

    armed.write_text("armed")
    anyio.run(start)
    armed.unlink()


def test_a_batch_resumes_each_row_on_its_starting_version(ray_cluster, tmp_path, monkeypatch):
    db = tmp_path / "runs.db"
    monkeypatch.setenv("AGENTGRAPH_TEST_ARMED", str(tmp_path / "armed"))
    stop_on_v1(db, "pinned", tmp_path / "armed")
    stop_on_v1(db, "latest", tmp_path / "armed")
    keys = [f"k{i}" for i in range(ROWS)]
    store = functools.partial(SQLiteStore, db)
    pinned = GraphRunner(versions=GraphVersions(V1, V2, policy="pinned"))
    rows = run_batch(
        "tests.raybatch.versions:V2",
        range(ROWS),
        store=store,
        batch_id="pinned",
        keys=keys,
        runner=pinned,
        progress=False,
    )
    assert [(r.origin, r.output) for r in rows] == [("resumed", f"v1 {i + 1}") for i in range(ROWS)]
    rows = run_batch(
        "tests.raybatch.versions:V2",
        range(ROWS),
        store=store,
        batch_id="latest",
        keys=keys,
        progress=False,
    )
    assert all("removed ['work'], added ['work2']" in str(r.error) for r in rows), rows

"""Every read of a damaged record is a `CheckpointError` naming the run and the damage,
on every store.

`DAMAGES` is the one table of cases: a record kind a store keeps joins it with the
ways it can be damaged; each case runs against the memory, SQLite and Postgres stores
(those that keep that kind of record).
"""

import sqlite3

import attrs
import pytest

from agentgraph import AgentContext, CheckpointError, GraphRunner, node
from agentgraph.checkpoint import MemoryStore, PostgresStore, SQLiteStore
from agentgraph.llm import Image, Message
from tests.checkpoint.support import Crash, chain

pytestmark = pytest.mark.anyio

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d4944415478da63f8cfc0f01f0005000201a5f5a1e20000000049454e44ae426082"
)
IMAGE = Image.from_bytes(PNG)
EVERY = ("memory", "sqlite", "postgres")


@attrs.frozen
class Damage:
    """A column of one kind of record overwritten with `value` (or, by store, `values`)."""

    name: str
    table: str  # runs, steps, effects, leases or blobs
    column: str
    value: object
    message: str  # what the error says, after "run 'r': "
    values: dict = attrs.field(factory=dict)  # a store's own form of the damage
    stores: tuple[str, ...] = EVERY  # the stores that keep this kind of record

    def on(self, kind: str) -> object:
        return self.values.get(kind, self.value)


DAMAGES = [
    # The run record.
    Damage("run-context-cut", "runs", "context", b'{"H":[{"r":"user"', "initial context"),
    Damage("run-context-text", "runs", "context", b'"text"', "initial context.*not an object"),
    Damage("run-context-list", "runs", "context", b"[1, 2]", "initial context.*not an object"),
    Damage("run-structure-cut", "runs", "structure", b'{"graph"', "graph structure is damaged"),
    Damage("run-forked-nowhere", "runs", "parent_step", 99, "forked at step 99"),
    Damage(
        "run-graph-bytes",
        "runs",
        "graph",
        b"g",
        "run record is damaged: its graph is bytes",
        stores=("sqlite",),
    ),
    # Step records.
    Damage("step-context-cut", "steps", "context", b'{"h":[', "step record 1 cannot be decoded"),
    Damage("step-context-list", "steps", "context", b"[]", "step record 1 cannot be decoded"),
    Damage(
        "step-path-hole",
        "steps",
        "path",
        ("g", None),
        "step record 1 is damaged: its path holds",
        values={"sqlite": '["g", null]', "postgres": ["g", None]},
    ),
    Damage(
        "step-path-cut",
        "steps",
        "path",
        '["g"',
        "step record 1 is damaged: its path is not JSON",
        stores=("sqlite",),
    ),
    Damage(
        "step-index-text",
        "steps",
        "step",
        "one",
        "step record 1 is damaged: its step is str",
        stores=("sqlite",),
    ),
    # Effects.
    Damage(
        "effect-cut", "effects", "value", b'{"v":', r"effect '.*' \('value'\) is damaged: not JSON"
    ),
    Damage(
        "effect-list",
        "effects",
        "value",
        b"[1]",
        r"\('value'\) is damaged: JSON list, not an object",
    ),
    Damage("effect-empty", "effects", "value", b"{}", r"\('value'\) is damaged: its value lacks v"),
    Damage("effect-kind", "effects", "kind", "bogus", "no effect is of kind 'bogus'"),
    # Leases (kept in memory by the memory store, never read back).
    Damage(
        "lease-expiry",
        "leases",
        "expires",
        "soon",
        "its lease is damaged",
        values={"postgres": float("nan")},
        stores=("sqlite", "postgres"),
    ),
    Damage("lease-fence", "leases", "fence", "x", "its lease is damaged", stores=("sqlite",)),
    # Blobs.
    Damage(
        "blob-changed",
        "blobs",
        "data",
        b"other bytes",
        "blob '[0-9a-f]{64}' does not match its digest",
    ),
    Damage(
        "blob-text",
        "blobs",
        "data",
        "text",
        "blob '[0-9a-f]{64}' is damaged: it holds str",
        stores=("sqlite",),
    ),
]
"""Every way a record is damaged; a new kind of record adds its cases here."""


@node
async def look(ctx: AgentContext[int], rt) -> AgentContext[int]:
    seen = await rt.once("seen", lambda: ctx.input + 1)
    return ctx.with_input(seen).append(Message.user("look", IMAGE))


crash = {"on": True}


@node
async def stop(ctx: AgentContext[int]) -> AgentContext[int]:
    if crash["on"]:
        raise Crash("the process dies")
    return ctx


GRAPH = chain("g", look, stop)


def damage(store, case: Damage, kind: str) -> None:
    value = case.on(kind)
    if kind == "memory":
        if case.table == "blobs":
            store._blobs = dict.fromkeys(store._blobs, value)
            return
        where = {"runs": store._runs, "steps": store._steps, "effects": store._effects}[case.table]
        for key, held in where.items():
            if case.table == "runs":
                where[key] = attrs.evolve(held, **{case.column: value})
            elif case.table == "steps":
                where[key] = [attrs.evolve(r, **{case.column: value}) for r in held]
            else:
                where[key] = {k: attrs.evolve(e, **{case.column: value}) for k, e in held.items()}
        return
    query = f"UPDATE {case.table} SET {case.column} = %s"
    if kind == "sqlite":
        with sqlite3.connect(store.path) as conn:
            conn.execute(query.replace("%s", "?"), (value,))
        return
    import psycopg
    from psycopg import sql

    with psycopg.connect(store.conninfo, autocommit=True) as conn:
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(store.schema)))
        conn.execute(query, (value,))


def kind_of(store) -> str:
    return {MemoryStore: "memory", SQLiteStore: "sqlite", PostgresStore: "postgres"}[type(store)]


# Each case on each store that keeps its kind of record.
PAIRS = [(kind, case) for case in DAMAGES for kind in case.stores]


@pytest.mark.parametrize(
    ("store", "case"), PAIRS, ids=[f"{k}-{c.name}" for k, c in PAIRS], indirect=["store"]
)
async def test_a_damaged_record_is_a_checkpoint_error_naming_the_run(store, case):
    kind = kind_of(store)
    crash["on"] = True
    with pytest.raises(Crash):
        await GraphRunner().run(GRAPH, AgentContext(0), store=store, run_id="r")
    await store.flush()
    if case.table == "leases":  # a lease is read when a runner takes it: a live one is held
        await store.acquire("r", owner="a runner of another process")
    crash["on"] = False
    damage(store, case, kind)
    with pytest.raises(CheckpointError, match=f"run 'r': .*{case.message}"):
        await GraphRunner().resume(GRAPH, "r", store)
    if case.table != "leases":  # a replay reads the same records, and takes no lease
        with pytest.raises(CheckpointError, match=f"run 'r': .*{case.message}"):
            await GraphRunner().replay(GRAPH, "r", store)

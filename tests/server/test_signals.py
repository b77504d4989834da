"""Readers of a run are woken by word of its changes, not by reading the store on a timer."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from agentgraph.server._connections import Connections
from agentgraph.server._queue import RunQueue
from agentgraph.server._signals import RunSignals, Signal
from tests.pg_server import drop_schema, fresh_schema

pytestmark = pytest.mark.timeout(120)

NEVER = 3600.0
"""A wait's own limit, so long that only a poke can end it within the test."""


@pytest.fixture
def pg(postgres_server: Any) -> Iterator[tuple[str, str]]:
    schema = fresh_schema()
    yield postgres_server.dsn, schema
    drop_schema(postgres_server.dsn, schema)


@pytest.mark.anyio
async def test_a_notify_from_another_thread_wakes_the_reader():
    signals = RunSignals()
    with signals.watching("r") as changed:
        threading.Thread(target=signals.notify, args=("r",)).start()
        with anyio.fail_after(30):
            await changed.wait(NEVER)


@pytest.mark.anyio
async def test_a_notify_before_the_wait_is_not_lost_and_other_runs_do_not_wake():
    signals = RunSignals()
    with signals.watching("r") as changed, signals.watching("other") as unrelated:
        signals.notify("r")
        with anyio.fail_after(30):
            await changed.wait(NEVER)
        with anyio.move_on_after(0.2) as waited:
            await unrelated.wait(NEVER)
        assert waited.cancelled_caught
    assert signals._waiting == {}


@pytest.mark.anyio
async def test_events_added_by_another_queue_on_the_same_sqlite_file_wake_the_reader(
    tmp_path: Path,
):
    path = str(tmp_path / "server.db")
    reader, writer = RunQueue(path), RunQueue(path)
    try:
        with reader.signals.watching("r") as changed:
            await anyio.to_thread.run_sync(writer.add_events, "r", [("values", {"n": 1})])
            with anyio.fail_after(30):
                await changed.wait(NEVER)
        assert [(seq, name) for seq, name, _ in reader.events("r", 0)] == [(1, "values")]
    finally:
        reader.close()
        writer.close()


@pytest.mark.anyio
async def test_a_run_finished_in_another_process_wakes_the_reader_through_notify(
    pg: tuple[str, str],
):
    dsn, schema = pg
    reader = RunQueue(dsn, schema=schema, signals=RunSignals())
    writer = RunQueue(dsn, schema=schema, signals=RunSignals())  # as another process's
    stopping = threading.Event()
    listener = threading.Thread(target=reader.listen_events, args=(stopping,))
    try:
        with reader.signals.watching("r") as changed:
            listener.start()
            # Until the listener listens, a NOTIFY reaches nobody: say it until one does.
            with anyio.fail_after(60):
                while True:
                    await anyio.to_thread.run_sync(writer.add_events, "r", [("values", {})])
                    with anyio.move_on_after(1.0) as waited:
                        await changed.wait(NEVER)
                    if not waited.cancelled_caught:
                        break
    finally:
        stopping.set()
        if listener.is_alive():
            listener.join()
        reader.close()
        writer.close()


def test_connections_lend_each_thread_its_own_up_to_the_size():
    opened: list[object] = []

    class Fake:
        def __init__(self) -> None:
            opened.append(self)
            self.closed = False

        def close(self) -> None:
            self.closed = True

    connections = Connections(Fake, 2)
    inside = threading.Barrier(2, timeout=30)
    lent: list[object] = []

    def use() -> None:
        with connections:
            lent.append(connections.current)
            inside.wait()

    threads = [threading.Thread(target=use) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(map(id, lent))) == 2
    with connections:  # a third user gets one of the two again
        assert connections.current in opened
    assert len(opened) == 2
    connections.close()
    assert all(isinstance(c, Fake) and c.closed for c in opened)


def test_a_poke_after_the_readers_loop_closed_is_dropped():
    async def make() -> Signal:
        return Signal()

    signal = anyio.run(make)
    signal.poke()  # its loop is gone: nothing to wake, and the writer goes on


def test_the_listener_listens_again_after_losing_its_connection():
    import psycopg

    stopping = threading.Event()
    signals = RunSignals()
    heard: list[str] = []
    signals.notify = heard.append  # type: ignore[method-assign]
    attempts: list[str] = []

    class Note:
        payload = "r"

    class Listener:
        def execute(self, sql: str) -> None:
            attempts.append(sql)

        def notifies(self, *, timeout: float) -> Iterator[Note]:
            if len(attempts) == 1:
                raise psycopg.OperationalError("the server closed the connection")
            stopping.set()
            yield Note()

        def close(self) -> None:
            pass

    signals.listen(Listener, stopping)
    assert attempts == ["LISTEN agentgraph_events"] * 2
    assert heard == ["r"]

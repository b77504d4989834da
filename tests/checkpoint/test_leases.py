"""One owner per run, across store objects and processes: leases, fencing, expiry, blobs."""

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import anyio
import pytest

from agentgraph import AgentContext, GraphRunner, LeaseLost, ResumeError, RunBusy, node
from agentgraph.checkpoint import MemoryStore, SQLiteStore, StepRecord
from tests.checkpoint.crash_graph import RUN_ID, build, start
from tests.checkpoint.places import Place
from tests.helpers import chain
from tests.pg_server import fresh_schema

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
TRIALS = int(os.environ.get("AGENTGRAPH_LEASE_TRIALS", "10"))
"""Seeds of the two-resumers trial per backend (20 in all); `make test-long` runs 100 each."""
LEASE = 0.3


async def test_a_second_store_object_on_the_file_gets_run_busy(places):
    db = places("runs")
    async with db.store() as first, db.store() as second:
        lease = await first.acquire("r", owner="first")
        with pytest.raises(RunBusy) as busy:
            await second.acquire("r", owner="second")
        # Postgres measures terms on the database's clock: its expiry, told in ours, may
        # differ from the one the taker computed by the few microseconds between the clocks.
        assert busy.value.owner == "first" and abs(busy.value.expires - lease.expires) < 0.5
        assert "first" in str(busy.value) and busy.value.run_id == "r"
        assert isinstance(busy.value, ResumeError)
        first.release(lease)
        await first.flush()  # a release is written behind, like records
        taken = await second.acquire("r", owner="second")
        assert taken.fence == lease.fence + 1 and second.held("r") == taken
        assert first.held("r") is None


async def test_a_lapsed_lease_passes_on_and_fences_out_the_old_owner(places):
    db = places("runs")
    async with db.store(lease=LEASE) as old, db.store() as new:
        graph = chain("g", counting())
        await GraphRunner().run(graph, AgentContext(0), store=new, run_id="r")  # a run record
        lease = await old.acquire("r", owner="old")
        await take_over(db, new, "r", "new")
        step = StepRecord("r", 9, 9, ("g",), "n", "finish", 1, 9, b"{}", 0.0, 0.0)
        old.write((step,))
        with pytest.raises(LeaseLost, match="no longer ours"):
            await old.flush(run_id="r")
        await anyio.sleep(LEASE * 0.8)  # the old store's renewal finds the lease gone
        assert old.held("r") is None and new.held("r").fence == lease.fence + 1
        log = await new.load("r")
        assert log is not None and all(s.seq != 9 for s in log.steps)


async def take_over(db: Place, store, run_id: str, owner: str):
    """Expire the run's lease and take it; again, should its owner renew it in between."""
    with anyio.fail_after(20):
        while True:
            db.expire(run_id)
            try:
                return await store.acquire(run_id, owner=owner)
            except RunBusy:
                await anyio.sleep(0.001)


def counting(seen: Counter | None = None, *, name: str = "n"):
    @node(name=name)
    async def n(ctx):
        if seen is not None:
            seen["n"] += 1
        return ctx.with_input(ctx.input + 1)

    return n


async def test_a_runner_whose_lease_was_taken_over_stops_itself(places):
    db = places("runs")
    release = anyio.Event()

    @node
    async def slow(ctx):
        await release.wait()
        return ctx.with_input(ctx.input + 1)

    graph = chain("g", counting(), slow, counting(name="n2"))
    async with db.store(lease=LEASE) as store, db.store() as thief:
        async with anyio.create_task_group() as tg:
            failures: list[BaseException] = []

            async def owner():
                try:
                    await GraphRunner().run(graph, AgentContext(0), store=store, run_id="r")
                except LeaseLost as error:
                    failures.append(error)

            tg.start_soon(owner)
            with anyio.fail_after(20):  # the owner runs, holding the lease
                while store.held("r") is None:
                    await anyio.sleep(0.01)
            await take_over(db, thief, "r", "thief")
            await anyio.sleep(LEASE)  # the owner's store tries to renew, and finds it gone
            release.set()
        assert len(failures) == 1 and failures[0].run_id == "r"


async def test_memory_stores_lease_too():
    store = MemoryStore()
    lease = await store.acquire("r", owner="a")
    with pytest.raises(RunBusy, match="'r' is already being run"):
        await store.acquire("r", owner="b")
    store.release(lease)
    assert (await store.acquire("r", owner="b")).owner == "b"


class CountingReleases(MemoryStore):
    """A store that counts each giving back of a lease, by the lease's key."""

    def __init__(self) -> None:
        super().__init__()
        self.released: Counter[str] = Counter()

    def release(self, lease) -> None:
        self.released[lease.run_id] += 1
        super().release(lease)


async def test_a_resume_that_fails_to_open_releases_each_lease_once():
    store = CountingReleases()
    graph = chain("g", counting())
    await GraphRunner().run(graph, AgentContext(0), store=store, run_id="r")
    store.released.clear()
    with pytest.raises(ResumeError, match="no question is waiting"):
        await GraphRunner().resume(graph, "r", store, answer="late")
    assert store.released == {"r": 1}
    # A turn of a thread resumed while another run holds the thread: refused, its lease given back.
    await GraphRunner().run(graph, AgentContext(0), store=store, run_id="t1", thread_id="t")
    held = await store.acquire("thread:t", owner="another")
    store.released.clear()
    with pytest.raises(RunBusy):
        await GraphRunner().resume(graph, "t1", store)
    assert store.released == {"t1": 1}
    store.release(held)


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
async def test_blobs_are_stored_by_content(kind, tmp_path, request):
    if kind == "postgres":
        store = Place(request.getfixturevalue("postgres_server").dsn, fresh_schema()).store()
    else:
        store = MemoryStore() if kind == "memory" else SQLiteStore(tmp_path / "b.db")
    data = os.urandom(100_000)
    digest = store.put_blob(data)
    assert store.put_blob(data) == digest and len(digest) == 64
    assert await store.get_blob(digest) == data
    with pytest.raises(Exception, match="no blob"):
        await store.get_blob("0" * 64)
    await store.aclose()


# -- processes --------------------------------------------------------------------------


def worker(db: Place, counter: Path, *options: str) -> list[str]:
    return [
        *[sys.executable, "-m", "tests.checkpoint.crash_graph", *db.args(), str(counter)],
        *["0.002", "--lease", str(LEASE), *options],
    ]


class Worker:
    """A worker process, its output lines so far, and how it ended."""

    def __init__(self, process: anyio.abc.Process) -> None:
        self.process = process
        self.lines: list[str] = []
        self.code: int | None = None

    @property
    def steps(self) -> list[int]:
        return [int(line) for line in self.lines if line.isdigit()]


async def watch(work: Worker, kill_at: int | None, refused: Path | None = None) -> None:
    """Read the worker's output; SIGKILL it at step `kill_at` (0: at its first tool call).

    When it says it was refused (`busy`), create the file `refused`.
    """
    assert work.process.stdout is not None
    buffer = b""
    async for chunk in work.process.stdout:
        buffer += chunk
        *done, buffer = buffer.split(b"\n")
        work.lines.extend(line.decode() for line in done)
        if refused is not None and "busy" in work.lines:
            refused.touch()
        if kill_at == 0:  # at the first tool call
            killing = any(line.startswith("tool") for line in work.lines)
        else:
            killing = kill_at is not None and bool(work.steps) and max(work.steps) >= kill_at
        if killing:
            work.process.send_signal(signal.SIGKILL)
            break
    work.code = await work.process.wait()


async def wait_for_lapse(db: Place) -> None:
    expires = db.expires(RUN_ID)
    if expires is not None:
        await anyio.sleep(max(0.0, expires - time.time()) + 0.02)


def executions(counter: Path) -> list[tuple[int, int]]:
    if not counter.exists():
        return []
    return [
        (int(n), int(pid))
        for n, pid in (line.split() for line in counter.read_text().split("\n") if line)
    ]


async def finished(db: Place) -> bool:
    """Whether the run's last step committed: a kill that lands between that commit and
    the worker's exit leaves nothing to resume."""
    async with db.store() as store:
        log = await store.load(RUN_ID)
    return log is not None and any(s.next == "finish" and len(s.path) == 1 for s in log.steps)


async def committed_calls(db: Place) -> set[int]:
    async with db.store() as store:
        log = await store.load(RUN_ID)
    assert log is not None
    return {int(e.key.rsplit(" c", 1)[1]) for e in log.effects if e.kind == "result"}


@pytest.mark.timeout(600)
async def test_two_resumers_one_owner_and_a_third_after_the_owner_dies(
    tmp_path, anyio_backend, places
):
    expected = await GraphRunner().run(build(tmp_path / "baseline.txt"), start())
    rng = random.Random(f"leases-{anyio_backend}-{places.kind}")
    outcomes = Counter[str]()
    for trial in range(TRIALS):
        # The first runner is killed once it reported step N; on a busy machine the
        # kill can land after the run ended, which leaves nothing to resume: again,
        # on a fresh store, until one dies mid-run.
        for attempt in range(10):
            db, counter = places(f"t{trial}-{attempt}"), tmp_path / f"t{trial}-{attempt}.txt"
            first = Worker(await anyio.open_process(worker(db, counter), cwd=ROOT))
            await watch(first, rng.randint(3, 60))
            if first.code != 0 and not await finished(db):
                break
        assert first.code == -signal.SIGKILL, first.lines
        await wait_for_lapse(db)
        before = Counter(n for n, _ in executions(counter))
        committed = await committed_calls(db)
        # Two runners resume the crashed run at once: one owns it, the other is refused.
        # The owner's steps wait until the other was refused: on a busy machine, the
        # other might start so late that the owner is dead, or done, by then.
        at, refused = str(time.time() + 0.8), tmp_path / f"t{trial}.refused"
        options = ("--resume", "--start-at", at, "--hold", str(refused))
        pair = [
            Worker(await anyio.open_process(worker(db, counter, *options), cwd=ROOT))
            for _ in range(2)
        ]
        kill_at = rng.choice([None, rng.randint(3, 80)])
        async with anyio.create_task_group() as tg:
            for work in pair:
                tg.start_soon(watch, work, kill_at, refused)
        busy = [w for w in pair if "busy" in w.lines]
        owner = [w for w in pair if "busy" not in w.lines]
        assert len(busy) == 1 and len(owner) == 1, [w.lines for w in pair]
        assert busy[0].code == 3 and busy[0].steps == []
        assert busy[0].process.pid not in {pid for _, pid in executions(counter)}
        for n in committed:  # a committed result is not produced again
            assert Counter(n for n, _ in executions(counter))[n] == before[n]
        if owner[0].code == 0:
            outcomes["owner finished"] += 1
        else:
            outcomes["owner killed"] += 1
            await wait_for_lapse(db)
            async with db.store() as store:
                out = await GraphRunner().resume(build(counter), RUN_ID, store)
            assert out == expected, trial
        runs = Counter(n for n, _ in executions(counter))
        assert set(runs) == set(range(10))
        assert all(count <= 3 for count in runs.values()), runs  # at most once per resume
    assert outcomes["owner killed"] >= TRIALS // 4 and outcomes["owner finished"] >= 1


async def test_an_unsafe_tool_in_flight_at_the_owners_death_stops_the_next_resume(tmp_path, places):
    db, counter = places("u"), tmp_path / "u.txt"
    work = Worker(await anyio.open_process(worker(db, counter, "--unsafe"), cwd=ROOT))
    with anyio.fail_after(20):
        await watch(work, 0)
    assert work.code == -signal.SIGKILL
    await wait_for_lapse(db)
    async with db.store() as store:
        with pytest.raises(ResumeError, match="in flight when the run stopped"):
            await GraphRunner().resume(build(counter, unsafe=True), RUN_ID, store)
    assert len(executions(counter)) == 1


def test_the_worker_script_exists():
    # The trials above run the worker as a module; a failure to start it must not pass.
    done = subprocess.run(
        [sys.executable, "-m", "tests.checkpoint.crash_graph", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0 and "--resume" in done.stdout


async def test_the_lease_of_a_dead_process_on_this_machine_is_free_at_once(tmp_path, places):
    db, counter = places("dead"), tmp_path / "dead.txt"
    command = [
        *[sys.executable, "-m", "tests.checkpoint.crash_graph", *db.args(), str(counter)],
        *["0.002", "--lease", "30"],
    ]
    work = Worker(await anyio.open_process(command, cwd=ROOT))
    await watch(work, 10)
    assert work.code == -signal.SIGKILL
    expected = await GraphRunner().run(build(tmp_path / "baseline.txt"), start())
    with anyio.fail_after(10):  # no waiting out the 30 s term: nobody can renew it
        async with db.store() as store:
            out = await GraphRunner().resume(build(counter), RUN_ID, store)
    assert out == expected

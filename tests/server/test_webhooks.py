"""Webhooks that arrive: a run's end is delivered, signed, retried until a 2xx, and never
sent where it may not go. A receiver on loopback fails, hangs and restarts; every
signature is verified with the `standardwebhooks` package."""

from __future__ import annotations

import base64
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import standardwebhooks
from langgraph_sdk import get_client

from agentgraph.server import WebhookSettings, Worker, _destinations
from agentgraph.server._api import Refused
from agentgraph.server._destinations import destination
from agentgraph.server._queue import RunQueue
from tests.pg_server import drop_schema, fresh_schema

from .support import GRAPHS, said, serving

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

SECRET = "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Received:
    """One request the receiver got, and what it answered."""

    def __init__(self, path: str, headers: dict[str, str], body: bytes) -> None:
        self.path = path
        self.headers = headers
        self.body = body
        self.answer = 0


class Receiver:
    """An HTTP server on loopback that answers as `plan` says, given how many requests
    of the same `webhook-id` it got before: a status, or `"hang"` (answers 500 after
    `hang` seconds). It can stop and start again on the same port."""

    def __init__(self, plan: Callable[[int], int | str], *, hang: float = 2.0) -> None:
        self.plan = plan
        self.hang = hang
        self.then: Callable[[], None] = lambda: None
        """Called after each answer is sent."""
        self.got: list[Received] = []
        self.lock = threading.Lock()
        self.port = 0
        self.server: ThreadingHTTPServer | None = None

    def start(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                got = Received(self.path, dict(self.headers.items()), self.rfile.read(length))
                with receiver.lock:
                    seen = sum(
                        r.headers.get("webhook-id") == got.headers.get("webhook-id")
                        for r in receiver.got
                    )
                    receiver.got.append(got)
                answer = receiver.plan(seen)
                if answer == "hang":
                    time.sleep(receiver.hang)
                    answer = 500
                assert isinstance(answer, int)
                got.answer = answer
                self.send_response(answer)
                if 300 <= answer < 400:
                    self.send_header("Location", "/elsewhere")
                self.send_header("Content-Length", "0")
                self.end_headers()
                self.wfile.flush()
                receiver.then()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        assert self.server is not None
        self.server.shutdown()
        self.server.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def by_id(self) -> dict[str, list[Received]]:
        found: dict[str, list[Received]] = {}
        with self.lock:
            for got in self.got:
                found.setdefault(got.headers["webhook-id"], []).append(got)
        return found


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    receiver = Receiver(lambda seen: 200)
    receiver.start()
    yield receiver
    receiver.stop()


def settings(**changes: Any) -> WebhookSettings:
    """Fast retries for the tests, loopback allowed."""
    base: dict[str, Any] = {
        "secret": SECRET,
        "allow_loopback": True,
        "timeout": 1.0,
        "backoff": 0.05,
        "max_backoff": 0.2,
        "max_attempts": 1000,
    }
    return WebhookSettings(**{**base, **changes})


async def logs_of(client: Any, runs: list[dict[str, Any]]) -> list[Any]:
    """Each run's delivery log."""
    return [
        await client.http.get(f"/threads/{r['thread_id']}/runs/{r['run_id']}/webhooks")
        for r in runs
    ]


async def settled(client: Any, runs: list[dict[str, Any]], *, deadline: float = 60.0) -> list[Any]:
    """Each run's delivery log once none is pending."""
    with anyio.fail_after(deadline):
        while True:
            logs = await logs_of(client, runs)
            if all(log and log[0]["status"] != "pending" for log in logs):
                return logs
            await anyio.sleep(0.1)


async def ended(client: Any, thread_id: str, run_id: str) -> dict[str, Any]:
    with anyio.fail_after(30):
        while True:
            run: dict[str, Any] = await client.runs.get(thread_id, run_id)
            if run["status"] not in ("pending", "running"):
                return run
            await anyio.sleep(0.05)


# -- a receiver that fails, hangs and restarts, on SQLite and PostgreSQL ----------------


@pytest.fixture(params=["sqlite", "postgresql"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, Any]]:
    if request.param == "sqlite":
        yield {"where": str(tmp_path / "server.db")}
        return
    dsn = request.getfixturevalue("postgres_server").dsn
    schema = fresh_schema()
    yield {"where": dsn, "schema": schema}
    drop_schema(dsn, schema)


async def test_every_end_arrives_signed_once_acknowledged_through_failures_hangs_and_restarts(
    tmp_path: Path, where: dict[str, Any]
):
    # Each delivery meets a down receiver first, then a 500, then a hang, then a 200.
    plan = {0: 500, 1: "hang"}
    receiver = Receiver(lambda seen: plan.get(seen, 200), hang=3.0)
    receiver.start()
    receiver.stop()
    hooks = settings()
    with serving(tmp_path, run_timeout=1.5, webhooks=hooks, **where) as url:
        async with get_client(url=url) as client:
            expected: dict[str, str] = {}
            runs = []
            for graph, status in (
                ("echo", "success"),
                ("fails", "error"),
                ("asks", "success"),
                ("slow", "timeout"),
            ):
                thread = await client.threads.create()
                run = await client.runs.create(
                    thread["thread_id"], graph, input=said(graph), webhook=receiver.url
                )
                runs.append(run)
                expected[run["run_id"]] = status
            thread = await client.threads.create()
            cancelled = await client.runs.create(
                thread["thread_id"], "slow", input=said("x"), webhook=receiver.url
            )
            await client.runs.cancel(thread["thread_id"], cancelled["run_id"])
            runs.append(cancelled)
            expected[cancelled["run_id"]] = "interrupted"
            stateless = await client.runs.create(
                None, "echo", input=said("stateless"), webhook=receiver.url
            )
            runs.append(stateless)
            expected[stateless["run_id"]] = "success"
            for run in runs:
                assert (await ended(client, run["thread_id"], run["run_id"]))["status"] == (
                    expected[run["run_id"]]
                )
            with anyio.fail_after(60):  # every delivery meets the receiver down first
                while not all(log and log[0]["attempts"] for log in await logs_of(client, runs)):
                    await anyio.sleep(0.05)
            receiver.start()
            try:
                logs = await settled(client, runs)
                quiet = len(receiver.got)
                await anyio.sleep(2.5)  # past every backoff and the hang: nothing more comes
                assert len(receiver.got) == quiet
            finally:
                receiver.stop()
    verifier = standardwebhooks.Webhook(SECRET)
    received = receiver.by_id()
    assert len(received) == len(runs)
    for run, log in zip(runs, logs, strict=True):
        (delivery,) = log
        assert delivery["status"] == "delivered"
        attempts = delivery["attempts"]
        # Down (connection refused) at least once, a 500, a hang past the timeout, a 200.
        assert attempts[0]["status_code"] is None and "Connect" in attempts[0]["error"]
        assert [a["status_code"] for a in attempts[-3:]] == [500, None, 200]
        assert "no answer within" in attempts[-2]["error"]
        assert [a["attempt"] for a in attempts] == list(range(1, len(attempts) + 1))
        got = received[delivery["webhook_id"]]
        # Every attempt that reached the receiver carried the same id; the one 200 is the last.
        assert [g.answer for g in got] == [500, 500, 200]
        for one in got:
            body = verifier.verify(one.body, one.headers)
            assert body["run_id"] == run["run_id"]
            assert body["thread_id"] == run["thread_id"]
            assert body["status"] == expected[run["run_id"]]
            assert {"values", "error", "run_started_at", "run_ended_at", "webhook_sent_at"} <= set(
                body
            )
            assert body["kwargs"]["webhook"] == receiver.url
        bodies = [verifier.verify(g.body, g.headers) for g in got]
        assert len({b["webhook_sent_at"] for b in bodies}) == len(bodies)
        last = bodies[-1]
        if last["status"] == "error":
            assert last["error"]["message"].endswith("ValueError: the node failed")
        elif last["status"] == "timeout":
            assert last["error"]["error"] == "GraphTimeout"
        else:
            assert last["error"] is None
        if run["run_id"] == runs[0]["run_id"]:
            assert [m["content"] for m in last["values"]["messages"]] == ["echo", "echo: echo"]
            assert last["run_started_at"] <= last["run_ended_at"]


# -- destinations refused when the run is created --------------------------------------


REFUSED = [
    "http://10.1.2.3/hook",
    "http://169.254.169.254/latest/meta-data/",
    "http://[::1]:8080/hook",
    "http://127.0.0.1:8080/hook",
    "http://localhost:8080/hook",
    "http://[::ffff:127.0.0.1]/hook",
    "http://0.0.0.0/hook",
    "ftp://example.com/hook",
    "not a url",
]


async def test_destinations_outside_the_allow_list_are_refused_with_nothing_stored(
    tmp_path: Path, where: dict[str, Any]
):
    with serving(tmp_path, webhooks=settings(allow_loopback=False), **where) as url:
        async with get_client(url=url) as client:
            thread = await client.threads.create()
            for hook in REFUSED:
                for thread_id in (thread["thread_id"], None):
                    with pytest.raises(httpx.HTTPStatusError) as refused:
                        await client.runs.create(thread_id, "echo", input=said("x"), webhook=hook)
                    assert refused.value.response.status_code == 422, hook
            assert await client.runs.list(thread["thread_id"]) == []
    queue = RunQueue(where["where"], schema=where.get("schema", "agentgraph"))
    try:
        for table, rows in (("server_runs", 0), ("server_threads", 1), ("server_events", 0)):
            assert queue._all(f"SELECT COUNT(*) FROM {table}") == [(rows,)], table
    finally:
        queue.close()


async def test_a_server_without_a_secret_refuses_webhooks_rather_than_send_them_unsigned(
    tmp_path: Path, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv("AGENTGRAPH_WEBHOOK_SECRET", raising=False)
    with serving(tmp_path, webhooks=WebhookSettings(allow_loopback=True)) as url:
        async with get_client(url=url) as client:
            thread = await client.threads.create()
            with pytest.raises(httpx.HTTPStatusError) as refused:
                await client.runs.create(
                    thread["thread_id"], "echo", input=said("x"), webhook=receiver.url
                )
            assert refused.value.response.status_code == 422
            assert "AGENTGRAPH_WEBHOOK_SECRET" in refused.value.response.text
            assert await client.runs.list(thread["thread_id"]) == []


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("10.0.0.1", {"allow_private": True}),
        ("169.254.169.254", {"allow_link_local": True}),
        ("127.0.0.1", {"allow_loopback": True}),
    ],
)
async def test_each_kind_of_address_is_allowed_only_by_its_own_setting(
    host: str, allowed: dict[str, bool]
):
    strict = settings(allow_loopback=False)
    with pytest.raises(Refused):
        await destination(f"http://{host}/hook", strict)
    found = await destination(
        f"http://{host}/hook", settings(**{"allow_loopback": False, **allowed})
    )
    assert [str(a) for a in found.addresses] == [host]


async def test_hosts_ports_and_schemes_are_an_allow_list():
    narrow = settings(hosts=frozenset({"localhost", ".loop.test"}), ports=frozenset({8443}))
    assert (await destination("http://localhost:8443/x", narrow)).addresses
    for refused in (
        "http://127.0.0.1:8443/x",  # not a named host
        "http://localhost:8444/x",  # another port
    ):
        with pytest.raises(Refused):
            await destination(refused, narrow)
    with pytest.raises(Refused):
        await destination("https://localhost:8443/x", settings(schemes=frozenset({"http"})))
    with pytest.raises(Refused):
        await destination("http://nowhere.invalid/x", settings())


def test_the_environment_gives_the_secret_and_the_loopback_flag(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("AGENTGRAPH_WEBHOOK_SECRET", SECRET)
    monkeypatch.setenv("AGENTGRAPH_WEBHOOK_ALLOW_LOOPBACK", "1")
    found = WebhookSettings()
    assert found.secret == SECRET and found.allow_loopback
    assert SECRET not in repr(found)
    monkeypatch.delenv("AGENTGRAPH_WEBHOOK_ALLOW_LOOPBACK")
    assert not WebhookSettings().allow_loopback
    with pytest.raises(ValueError, match="whsec_"):
        WebhookSettings(secret="not a secret")


# -- delivery: checked again, limits, redirects ----------------------------------------


async def test_the_destination_is_checked_again_at_delivery(tmp_path: Path, receiver: Receiver):
    """The API allowed loopback; the worker does not (a name that later resolves to a
    private address is refused the same way): the attempts are refused and logged, and
    nothing reaches the receiver."""
    db = str(tmp_path / "server.db")
    worker = Worker(db, GRAPHS, webhooks=settings(allow_loopback=False, max_attempts=2), grace=0.5)
    with serving(tmp_path, workers=0, webhooks=settings()) as url:
        worker.start()
        try:
            async with get_client(url=url) as client:
                thread = await client.threads.create()
                run = await client.runs.create(
                    thread["thread_id"], "echo", input=said("x"), webhook=receiver.url
                )
                (log,) = await settled(client, [run])
        finally:
            worker.stop()
    (delivery,) = log
    assert delivery["status"] == "failed"
    assert [a["attempt"] for a in delivery["attempts"]] == [1, 2]
    assert all("loopback" in a["error"] for a in delivery["attempts"])
    assert receiver.got == []


@pytest.mark.parametrize(("answer", "code"), [(500, 500), (302, 302)])
async def test_a_delivery_gives_up_at_its_limit_and_follows_no_redirect(
    tmp_path: Path, receiver: Receiver, answer: int, code: int
):
    receiver.plan = lambda seen: answer
    with serving(tmp_path, webhooks=settings(max_attempts=3)) as url:
        async with get_client(url=url) as client:
            thread = await client.threads.create()
            run = await client.runs.create(
                thread["thread_id"], "echo", input=said("x"), webhook=receiver.url
            )
            (log,) = await settled(client, [run])
    (delivery,) = log
    assert delivery["status"] == "failed"
    assert delivery["next_attempt_at"] is None
    assert [a["status_code"] for a in delivery["attempts"]] == [code] * 3
    assert [g.path for g in receiver.got] == ["/hook"] * 3
    assert {g.headers["webhook-id"] for g in receiver.got} == {delivery["webhook_id"]}


async def test_a_run_without_a_webhook_has_an_empty_log_and_other_threads_runs_are_404(
    tmp_path: Path,
):
    with serving(tmp_path, webhooks=settings()) as url:
        async with get_client(url=url) as client:
            thread = await client.threads.create()
            other = await client.threads.create()
            run = await client.runs.wait(thread["thread_id"], "echo", input=said("x"))
            del run
            (listed,) = await client.runs.list(thread["thread_id"])
            base = f"/runs/{listed['run_id']}/webhooks"
            assert await client.http.get(f"/threads/{thread['thread_id']}{base}") == []
            with pytest.raises(httpx.HTTPStatusError) as missing:
                await client.http.get(f"/threads/{other['thread_id']}{base}")
            assert missing.value.response.status_code == 404


WORKER = """
import sys, time
from tests.server.support import GRAPHS
from tests.server.test_webhooks import settings
from agentgraph.server import Worker
Worker(sys.argv[1], GRAPHS, webhooks=settings(secret=sys.argv[2])).start()
print("ready", flush=True)
while True:
    time.sleep(1)
"""


@pytest.mark.timeout(240)
async def test_a_worker_killed_as_its_delivery_is_acknowledged_leaves_it_to_another(
    tmp_path: Path, receiver: Receiver
):
    """The receiver answers 200, then the worker that sent it is SIGKILLed: whether or
    not it recorded the answer, the delivery ends delivered, with one logged attempt. Its
    claim lapsed, another worker sent it again when it had not: a duplicate with the same
    `webhook-id`, which is what the guide tells receivers to drop."""
    db = str(tmp_path / "server.db")
    process = subprocess.Popen(
        [sys.executable, "-c", WORKER, db, SECRET], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None

    def kill() -> None:
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)

    receiver.then = kill
    try:
        with serving(tmp_path, workers=0, webhooks=settings()) as url:
            assert process.stdout.readline().strip() == "ready"
            async with get_client(url=url) as client:
                thread = await client.threads.create()
                run = await client.runs.create(
                    thread["thread_id"], "echo", input=said("x"), webhook=receiver.url
                )
                with anyio.fail_after(60):
                    while process.poll() is None:
                        await anyio.sleep(0.05)
                assert process.returncode == -signal.SIGKILL
                taker = Worker(db, GRAPHS, webhooks=settings(), grace=0.5)
                taker.start()
                try:
                    (log,) = await settled(client, [run])
                finally:
                    taker.stop()
    finally:
        kill()
        process.wait()
        process.stdout.close()
    (delivery,) = log
    assert delivery["status"] == "delivered"
    assert [a["status_code"] for a in delivery["attempts"]] == [200]
    assert 1 <= len(receiver.got) <= 2
    verifier = standardwebhooks.Webhook(SECRET)
    for got in receiver.got:
        assert got.headers["webhook-id"] == delivery["webhook_id"]
        assert got.answer == 200
        assert verifier.verify(got.body, got.headers)["run_id"] == run["run_id"]


async def test_the_runs_an_interrupt_double_text_cancels_each_send_their_end(
    tmp_path: Path, receiver: Receiver
):
    """The running run ends on its worker, the pending one in the transaction that queues
    the double text: both send `interrupted`, the one that never started without a start."""
    with serving(tmp_path, webhooks=settings()) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            running = await client.runs.create(tid, "gated", input=said("a"), webhook=receiver.url)
            with anyio.fail_after(30):
                while (await client.runs.get(tid, running["run_id"]))["status"] != "running":
                    await anyio.sleep(0.05)
            pending = await client.runs.create(tid, "gated", input=said("b"), webhook=receiver.url)
            await client.runs.create(tid, "echo", input=said("c"), multitask_strategy="interrupt")
            logs = await settled(client, [running, pending])
    assert [log[0]["status"] for log in logs] == ["delivered", "delivered"]
    verifier = standardwebhooks.Webhook(SECRET)
    ends = {
        body["run_id"]: body
        for body in (verifier.verify(got.body, got.headers) for got in receiver.got)
    }
    assert set(ends) == {running["run_id"], pending["run_id"]}
    assert {end["status"] for end in ends.values()} == {"interrupted"}
    assert ends[running["run_id"]]["run_started_at"] is not None
    assert ends[pending["run_id"]]["run_started_at"] is None


async def test_a_body_over_the_bound_is_sent_without_its_values(tmp_path: Path, receiver: Receiver):
    with serving(tmp_path, webhooks=settings(max_body=1500)) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            small = await client.runs.create(tid, "echo", input=said("x"), webhook=receiver.url)
            big = await client.runs.create(
                tid, "echo", input=said("y" * 1000), webhook=receiver.url
            )
            await settled(client, [small, big])
    verifier = standardwebhooks.Webhook(SECRET)
    bodies = {
        body["run_id"]: (body, len(got.body))
        for body, got in ((verifier.verify(got.body, got.headers), got) for got in receiver.got)
    }
    assert bodies[small["run_id"]][0]["values"]["messages"][-1]["content"] == "echo: x"
    body, size = bodies[big["run_id"]]
    assert body["values"] is None and body["kwargs"] is None and size <= 1500
    assert body["status"] == "success" and body["run_id"] == big["run_id"]


@pytest.fixture
def names(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """Host names under `.test` resolve to the addresses listed here, in turn: the first
    answer once, the next ones after (a DNS rebinding); other names as the system says."""
    table: dict[str, list[str]] = {}
    system = _destinations.resolve

    async def resolve(host: str, port: int) -> list[tuple[Any, ...]]:
        if not host.endswith(".test"):
            return await system(host, port)
        answers = table[host]
        address = answers.pop(0) if len(answers) > 1 else answers[0]
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

    monkeypatch.setattr(_destinations, "resolve", resolve)
    return table


async def test_a_name_rebound_to_loopback_after_the_check_is_refused_at_delivery(
    tmp_path: Path, receiver: Receiver, names: dict[str, list[str]]
):
    names["rebind.test"] = ["93.184.216.34", "127.0.0.1"]
    hook = f"http://rebind.test:{receiver.port}/hook"
    with serving(tmp_path, webhooks=settings(allow_loopback=False, max_attempts=2)) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            run = await client.runs.create(tid, "echo", input=said("x"), webhook=hook)
            ((delivery,),) = await settled(client, [run])
    assert delivery["status"] == "failed"
    assert all("127.0.0.1, a loopback address" in a["error"] for a in delivery["attempts"])
    assert receiver.got == []


async def test_an_attempt_connects_to_the_address_checked_and_names_the_host(
    tmp_path: Path, receiver: Receiver, names: dict[str, list[str]]
):
    names["hooks.test"] = ["127.0.0.1"]
    hook = f"http://hooks.test:{receiver.port}/hook"
    with serving(tmp_path, webhooks=settings()) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            run = await client.runs.create(tid, "echo", input=said("x"), webhook=hook)
            ((delivery,),) = await settled(client, [run])
    assert delivery["status"] == "delivered"
    (got,) = receiver.got
    assert {k.lower(): v for k, v in got.headers.items()}["host"] == f"hooks.test:{receiver.port}"


async def test_a_crons_runs_are_delivered_to_its_webhook_and_a_bad_one_is_refused(
    tmp_path: Path, receiver: Receiver
):
    with serving(tmp_path, webhooks=settings()) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            cron = await client.crons.create_for_thread(
                tid, "echo", schedule="* * * * * *", input=said("tick"), webhook=receiver.url
            )
            with anyio.fail_after(30):
                while not receiver.got:
                    await anyio.sleep(0.05)
            await client.crons.update(cron["cron_id"], enabled=False)
            first = standardwebhooks.Webhook(SECRET).verify(
                receiver.got[0].body, receiver.got[0].headers
            )
            assert first["thread_id"] == tid and first["status"] == "success"
            assert first["metadata"]["cron_id"] == cron["cron_id"]
            assert first["kwargs"]["webhook"] == receiver.url
    strict = settings(allow_loopback=False)
    (tmp_path / "strict").mkdir()
    with serving(tmp_path / "strict", webhooks=strict) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            for create in (
                client.crons.create_for_thread(
                    tid, "echo", schedule="* * * * *", webhook=receiver.url
                ),
                client.crons.create("echo", schedule="* * * * *", webhook=receiver.url),
            ):
                with pytest.raises(httpx.HTTPStatusError) as refused:
                    await create
                assert refused.value.response.status_code == 422
                assert "loopback" in refused.value.response.json()["detail"]
            cron = await client.crons.create("echo", schedule="* * * * *")
            with pytest.raises(httpx.HTTPStatusError) as refused:
                await client.crons.update(cron["cron_id"], webhook=receiver.url)
            assert refused.value.response.status_code == 422
            (kept,) = await client.crons.search()
            assert kept["cron_id"] == cron["cron_id"] and "webhook" not in kept["payload"]

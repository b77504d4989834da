"""Reconnect addresses, thread streams and the stream modes, through `langgraph-sdk`."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from langgraph_sdk import get_client

from .support import GATE, said, serving

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_wait_join_and_cancel_answer_with_a_location_to_reconnect_to(tmp_path: Path):
    with serving(tmp_path) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            seen: list[httpx.Headers] = []
            result = await client.http.request_reconnect(
                f"/threads/{tid}/runs/wait",
                "POST",
                json={"assistant_id": "echo", "input": said("hi")},
                on_response=lambda r: seen.append(r.headers),
            )
            base = seen[0]["content-location"]
            assert base.startswith(f"/threads/{tid}/runs/")
            assert seen[0]["location"] == f"{base}/join"
            assert await client.http.get(seen[0]["location"]) == result
            run_id = base.rsplit("/", 1)[1]
            await client.http.request_reconnect(
                f"{base}/join", "GET", on_response=lambda r: seen.append(r.headers)
            )
            assert seen[1]["location"] == f"{base}/join"
            slow = await client.runs.create(tid, "slow", input={})
            where = f"/threads/{tid}/runs/{slow['run_id']}"
            await client.http.request_reconnect(
                f"{where}/cancel",
                "POST",
                params={"wait": 1},
                on_response=lambda r: seen.append(r.headers),
            )
            assert seen[2]["location"] == f"{where}/join"
            assert (await client.runs.get(tid, slow["run_id"]))["status"] == "interrupted"
            assert (await client.runs.get(tid, run_id))["status"] == "success"


async def test_a_thread_stream_joins_the_run_in_flight_and_honours_last_event_id(
    tmp_path: Path,
):
    with serving(tmp_path) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            run = await client.runs.create(
                tid, "gated", input=said("x"), stream_mode=["values", "updates"]
            )
            joined = []
            async for part in await client.threads.join_stream(tid):
                joined.append(part)
                GATE.set()  # the run is in flight while the stream is joined
            assert [p.event for p in joined] == ["metadata", "values", "updates"]
            assert joined[0].data["run_id"] == run["run_id"]
            assert joined[1].data["messages"][-1]["content"] == "gated: x"
            rest = [p.event async for p in await client.threads.join_stream(tid, last_event_id="2")]
            assert rest == ["updates"]
            with pytest.raises(httpx.HTTPStatusError) as refused:
                async for _ in await client.threads.join_stream(tid, stream_mode="lifecycle"):
                    pass
            assert refused.value.response.status_code == 422
            empty = (await client.threads.create())["thread_id"]
            with pytest.raises(httpx.HTTPStatusError) as missing:
                async for _ in await client.threads.join_stream(empty):
                    pass
            assert missing.value.response.status_code == 404

"""Values the server cannot take are a 422 naming them, never a 500, with nothing stored."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from .support import said, serving

pytestmark = pytest.mark.timeout(90)


def test_what_a_run_cannot_take_is_refused_before_anything_is_written(tmp_path: Path):
    with serving(tmp_path) as url, httpx.Client(base_url=url) as http:
        tid = http.post("/threads", json={}).json()["thread_id"]
        for after in (-1, "abc", [1], 10**12, True):
            body = {"assistant_id": "echo", "input": said("hi"), "after_seconds": after}
            answer = http.post(f"/threads/{tid}/runs", json=body)
            assert answer.status_code == 422, after
            assert "after_seconds" in answer.json()["detail"]
            stateless = http.post("/runs", json=body)
            assert stateless.status_code == 422, after
        assert http.get(f"/threads/{tid}/runs").json() == []
        assert http.post("/threads/search", json={}).json() == [http.get(f"/threads/{tid}").json()]


def test_counts_a_database_cannot_hold_are_refused(tmp_path: Path):
    with serving(tmp_path) as url, httpx.Client(base_url=url) as http:
        tid = http.post("/threads", json={}).json()["thread_id"]
        for path in (f"/threads/{tid}/runs?limit={2**63}", f"/threads/{tid}/runs?offset={2**64}"):
            assert http.get(path).status_code == 422, path
        huge = http.post(f"/threads/{tid}/history", json={"limit": 2**63})
        assert huge.status_code == 422
        # A ttl past a hundred years would overflow the expiry's arithmetic in every sweep.
        for ttl in (1e308, {"ttl": 10**12, "strategy": "delete"}):
            assert http.post("/threads", json={"ttl": ttl}).status_code == 422
            assert http.patch(f"/threads/{tid}", json={"ttl": ttl}).status_code == 422
        assert http.patch(f"/threads/{tid}", json={"ttl": 60}).status_code == 200


def test_a_bulk_cancel_and_a_batch_refuse_what_they_cannot_read(tmp_path: Path):
    with serving(tmp_path) as url, httpx.Client(base_url=url) as http:
        for body in (
            {"run_ids": [], "action": "explode"},
            {"run_ids": "one"},
            {"run_ids": ["not-a-uuid"]},
        ):
            assert http.post("/runs/cancel", json=body).status_code == 422, body
        for raw in (b"{not json", b"[1, 2]", b'[{"assistant_id": "echo"}, "two"]', b"{}"):
            answer = http.post("/runs/batch", content=raw)
            assert answer.status_code == 422, raw
        assert http.post("/threads/search", json={}).json() == []  # the batch made nothing

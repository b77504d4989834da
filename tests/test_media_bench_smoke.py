"""The media benchmark's checkpoint case runs end to end; its byte counts are exact."""

import pytest

from tests.helpers import load_benchmark


@pytest.fixture(scope="module")
def bench():
    yield from load_benchmark("media")


def test_a_run_with_two_files_stores_their_bytes_once_and_small_records(bench):
    figures = bench.checkpoint()
    assert figures["steps"] == 11
    assert figures["blob_bytes"] == figures["file_bytes"] > 2_000_000
    assert figures["record_bytes"] < 20_000  # digests, not base64 of the files


def test_the_timed_cases_run_once_each(bench, monkeypatch):
    monkeypatch.setattr(bench, "best", lambda fn, number: fn() and 1.0)
    assert bench.cached() == {"anthropic_cached_body_us": 1.0}
    assert set(bench.image()) == {"openai_body_with_1mb_image_us"}

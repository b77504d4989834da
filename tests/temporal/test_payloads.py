"""Payload conversion and the blob codec without a server; the refusal on trio."""

import attrs
import pytest
from temporalio.api.common.v1 import Payload

from agentgraph import (
    AgentContext,
    CheckpointError,
    ContextDecodingError,
    Message,
    Types,
    UsageError,
)
from agentgraph.checkpoint import MemoryStore, SQLiteStore
from agentgraph.temporal import (
    ActivityPolicy,
    BlobCodec,
    ContextPayloadConverter,
    TemporalRunner,
    data_converter,
    worker,
)


@attrs.frozen
class Ticket:
    id: int
    tags: tuple[str, ...]


class Opaque:
    pass


def test_contexts_travel_as_typed_json_and_decode_only_known_types():
    ctx = AgentContext(Ticket(7, ("a", "b"))).append(Message.user("hi"))
    converter = data_converter(Types.of(Ticket)).payload_converter
    (payload,) = converter.to_payloads([ctx])
    assert payload.metadata["encoding"] == b"json/agentgraph"
    assert converter.from_payloads([payload])[0] == ctx
    stranger = data_converter().payload_converter  # does not know Ticket
    with pytest.raises(ContextDecodingError):
        stranger.from_payloads([payload])


def test_bytes_and_none_keep_temporals_encodings_and_other_values_are_refused():
    converter = data_converter().payload_converter
    none, raw = converter.to_payloads([None, b"\x00\x01"])
    assert none.metadata["encoding"] == b"binary/null"
    assert raw.metadata["encoding"] == b"binary/plain"
    assert ContextPayloadConverter().to_payload(Opaque()) is None
    with pytest.raises(RuntimeError):
        converter.to_payloads([Opaque()])


@pytest.mark.anyio
async def test_the_codec_offloads_large_payloads_and_restores_them(tmp_path):
    store = SQLiteStore(tmp_path / "blobs.db")
    try:
        codec = BlobCodec(store, threshold=100)
        small = Payload(metadata={"encoding": b"json/agentgraph"}, data=b"1")
        large = Payload(metadata={"encoding": b"json/agentgraph"}, data=b"x" * 1000)
        encoded = await codec.encode([small, large])
        assert encoded[0] == small
        assert encoded[1].metadata["encoding"] == b"agentgraph/blob" and not encoded[1].data
        assert await codec.decode(encoded) == [small, large]
    finally:
        await store.aclose()


@pytest.mark.anyio
async def test_a_missing_or_altered_blob_is_refused():
    store = MemoryStore()
    codec = BlobCodec(store, threshold=10)
    (reference,) = await codec.encode([Payload(data=b"y" * 100)])
    digest = reference.metadata["digest"].decode()
    store._blobs[digest] = b"tampered"
    with pytest.raises(CheckpointError, match="does not match its digest"):
        await codec.decode([reference])
    with pytest.raises(CheckpointError, match="no blob"):
        await BlobCodec(MemoryStore(), threshold=10).decode([reference])


def test_the_codec_needs_a_blob_store_and_a_positive_threshold():
    with pytest.raises(TypeError, match="not a blob store"):
        BlobCodec(object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="threshold"):
        BlobCodec(MemoryStore(), threshold=0)


def test_a_tool_that_is_not_retry_safe_gets_exactly_one_attempt():
    policy = ActivityPolicy(attempts=4)
    assert policy.options()["retry_policy"].maximum_attempts == 4
    assert policy.options(retry_safe=False)["retry_policy"].maximum_attempts == 1
    assert ActivityPolicy(heartbeat=None).options()["heartbeat_timeout"] is None


def test_each_kind_of_effect_may_have_its_own_policy():
    from agentgraph.temporal._registry import _policies

    tools = ActivityPolicy(attempts=5)
    chosen = _policies({"tool": tools})
    assert chosen["tool"] is tools and chosen["default"] == ActivityPolicy()
    with pytest.raises(ValueError, match="not tools"):
        _policies({"tools": tools})
    with pytest.raises(TypeError, match="ActivityPolicy"):
        _policies({"model": 3})  # type: ignore[dict-item]


def test_a_worker_refuses_no_graphs_and_two_graphs_of_one_name():
    from tests.temporal.graphs import counter

    with pytest.raises(UsageError, match="at least one graph"):
        worker(object(), task_queue="q", graphs=[])  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="both named 'counter'"):
        worker(object(), task_queue="q", graphs=[counter(1), counter(2)])  # type: ignore[arg-type]


@pytest.mark.parametrize("anyio_backend", ["trio"])
@pytest.mark.anyio
async def test_trio_is_refused_clearly(anyio_backend):
    from tests.temporal.graphs import counter

    runner = TemporalRunner(object(), task_queue="q")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="asyncio only, not trio"):
        await runner.run(counter(1), AgentContext(0))

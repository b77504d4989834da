"""Images and documents in checkpoints: stored once by content hash, never inline."""

import base64
import sqlite3

import pytest

from agentgraph import (
    AgentContext,
    CheckpointError,
    ContextEncodingError,
    GraphBuilder,
    GraphRunner,
    Interrupted,
    node,
)
from agentgraph.checkpoint import (
    MemoryStore,
    PostgresStore,
    SQLiteStore,
    StoreBase,
    decode_contexts,
    log_blobs,
)
from agentgraph.llm import Document, Image, Message
from agentgraph.nodes import chat
from agentgraph.testing import ScriptedModel
from agentgraph.tracing import JsonlSink

pytestmark = pytest.mark.anyio

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d4944415478da63f8cfc0f01f0005000201a5f5a1e20000000049454e44ae426082"
)
PDF = b"%PDF-1.4\n" + b"Q" * 4000 + b"\n%%EOF\n"
IMAGE, DOCUMENT = Image.from_bytes(PNG), Document.from_bytes(PDF, name="report.pdf")
QUESTION = Message.user("What is in the picture and the report?", IMAGE, DOCUMENT)


def graph(model):
    @node
    async def confirm(ctx: AgentContext[Message], rt) -> AgentContext[str]:
        verdict = await rt.interrupt("send it?")
        return ctx.with_input(f"{ctx.input.content} ({verdict})")

    with GraphBuilder[str, str]("describe") as g:
        g.start.edge_to(chat(model)).edge_to(confirm).edge_to(g.finish)
    return g.build()


def blob_count(store) -> int:
    if isinstance(store, MemoryStore):
        return len(store._blobs)
    if isinstance(store, PostgresStore):
        import psycopg
        from psycopg import sql

        with psycopg.connect(store.conninfo) as conn:
            query = sql.SQL("SELECT count(*) FROM {}.blobs").format(sql.Identifier(store.schema))
            row = conn.execute(query).fetchone()
            assert row is not None
            return int(row[0])
    with sqlite3.connect(store.path) as conn:
        return conn.execute("SELECT count(*) FROM blobs").fetchone()[0]


async def run_until_asked(store) -> str:
    start = AgentContext("describe", history=[QUESTION])
    with pytest.raises(Interrupted) as info:
        await GraphRunner().run(graph(ScriptedModel("A cat and sales.")), start, store=store)
    return info.value.run_id


async def test_bytes_are_stored_once_and_resume_and_replay_get_them_back(store):
    model = ScriptedModel("A cat and sales.")
    start = AgentContext("describe", history=[QUESTION])
    with pytest.raises(Interrupted) as info:
        await GraphRunner().run(graph(model), start, store=store)
    run_id = info.value.run_id
    assert model.requests[0].messages == (QUESTION,)
    out = await GraphRunner().resume(graph(ScriptedModel()), run_id, store, answer="yes")
    assert out.input == "A cat and sales. (yes)"
    assert out.history[0] == QUESTION  # the bytes came back from the blobs
    replayed = await GraphRunner().replay(graph(ScriptedModel()), run_id, store)
    assert replayed == out
    assert blob_count(store) == 2  # one image, one document, however often they were written
    log = await store.load(run_id)
    records = [log.run.context, *(r.context for r in log.steps), *(e.value for e in log.effects)]
    inline = base64.b64encode(PDF)[:40]
    assert not any(inline in record for record in records)  # named by digest, never inline
    assert any(IMAGE.digest.encode() in record for record in records)
    contexts = decode_contexts(log, blobs=await log_blobs(store, log))
    assert contexts[-1].history[0] == QUESTION


async def test_a_changed_blob_is_refused_on_resume():
    store = MemoryStore()
    run_id = await run_until_asked(store)
    store._blobs[IMAGE.digest] = PNG + b"tampered"
    with pytest.raises(CheckpointError, match="does not match its digest"):
        await GraphRunner().resume(graph(ScriptedModel()), run_id, store, answer="yes")


async def test_a_changed_blob_in_sqlite_is_refused_on_replay(tmp_path):
    store = SQLiteStore(tmp_path / "runs.db")
    try:
        run_id = await run_until_asked(store)
        with sqlite3.connect(store.path) as conn:
            conn.execute("UPDATE blobs SET data = ? WHERE digest = ?", (b"x", DOCUMENT.digest))
        with pytest.raises(CheckpointError, match=f"blob '{DOCUMENT.digest}' does not match"):
            await GraphRunner().replay(graph(ScriptedModel()), run_id, store)
    finally:
        await store.aclose()


async def test_a_missing_blob_is_refused_on_resume():
    store = MemoryStore()
    run_id = await run_until_asked(store)
    del store._blobs[DOCUMENT.digest]
    with pytest.raises(CheckpointError, match="which the store does not have"):
        await GraphRunner().resume(graph(ScriptedModel()), run_id, store, answer="yes")


class NoBlobs(MemoryStore):
    """A store of one's own that keeps no blobs (StoreBase's default)."""

    put_blob = StoreBase.put_blob
    get_blob = StoreBase.get_blob


async def test_a_store_without_blobs_refuses_a_run_with_files_before_it_starts():
    model = ScriptedModel("never asked")
    start = AgentContext("describe", history=[QUESTION])
    with pytest.raises(ContextEncodingError, match="need a store with blobs"):
        await GraphRunner().run(graph(model), start, store=NoBlobs())
    assert model.requests == ()


async def test_a_trace_shows_media_type_size_and_digest_not_the_bytes(tmp_path):
    path = tmp_path / "run.jsonl"
    with JsonlSink(path) as sink:
        await GraphRunner(sinks=[sink]).run(
            chat(ScriptedModel("A cat.")), AgentContext("describe", history=[QUESTION])
        )
    text = path.read_text()
    assert base64.b64encode(PNG).decode() not in text
    assert "QQQQQQQQ" not in text and base64.b64encode(PDF).decode()[:40] not in text
    assert '"media_type":"image/png","url":null' in text
    assert f'"data":{{"size":{len(PDF)},"sha256":"{DOCUMENT.digest}"}}' in text


async def test_a_recording_carries_its_files_and_replays_without_the_model(tmp_path):
    from agentgraph.testing import Recording

    recording = Recording(tmp_path / "describe.jsonl")
    start = AgentContext("describe", history=[QUESTION])
    first = await recording.run(GraphRunner(), chat(ScriptedModel("A cat.")), start)
    text = (tmp_path / "describe.jsonl").read_text()
    assert text.count(base64.b64encode(PNG).decode()) == 1  # once, as a blob line
    again = await recording.run(GraphRunner(), chat(ScriptedModel()), start)
    assert again == first and again.history[0] == QUESTION
    # A file changed in the recording no longer matches the digest its message names.
    changed = text.replace(base64.b64encode(PNG).decode(), base64.b64encode(PNG + b"x").decode())
    (tmp_path / "describe.jsonl").write_text(changed)
    with pytest.raises(CheckpointError, match="which the store does not have"):
        await recording.run(GraphRunner(), chat(ScriptedModel()), start)


async def test_data_that_looks_like_a_blob_name_does_not_stop_a_resume(store):
    start = AgentContext("describe", history=[QUESTION], state={"blob": "ab" * 32})
    with pytest.raises(Interrupted) as info:
        await GraphRunner().run(graph(ScriptedModel("A cat.")), start, store=store)
    out = await GraphRunner().resume(graph(ScriptedModel()), info.value.run_id, store, answer="ok")
    assert out.state["blob"] == "ab" * 32 and out.history[0] == QUESTION

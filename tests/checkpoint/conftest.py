import pytest

from agentgraph.checkpoint import MemoryStore, SQLiteStore


@pytest.fixture(params=["memory", "sqlite"])
async def store(request, tmp_path):
    """Each checkpoint store the library ships."""
    if request.param == "memory":
        yield MemoryStore()
        return
    sqlite = SQLiteStore(tmp_path / "runs.db")
    yield sqlite
    await sqlite.aclose()

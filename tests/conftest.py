import pytest

from tests.pg_server import postgres_server as postgres_server  # a session fixture


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


# `make test` runs the suite on several processes (pytest-xdist, `--dist loadgroup`). The
# tests that start a Ray cluster or the Temporal dev server share one process each, so
# no two clusters or dev servers run at once; the rest go wherever a process is free.
_GROUPS = (
    ("tests/raybatch/", "ray"),
    ("docs/guides/ray.md", "ray"),
    ("tests/temporal/", "temporal"),
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for part, group in _GROUPS:
            if part in item.nodeid:
                item.add_marker(pytest.mark.xdist_group(group))
                break

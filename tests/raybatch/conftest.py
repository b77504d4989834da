"""A Ray cluster on this machine for the whole session: a head node with 2 CPUs, on loopback.

Tests that need more nodes add them with `ray_cluster.add_node` and remove them
again. Outside CI, a machine where Ray cannot start skips these tests and says
why; in CI (`CI` set) that is a failure.
"""

import os

import pytest

from agentgraph.ray._local import local_only

HEAD_CPUS = 2


def _unavailable(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"Ray is needed in CI: {why}")
    pytest.skip(f"Ray cannot start on this machine: {why}")


@pytest.fixture(scope="session")
def ray_cluster():
    local_only()  # before Ray is imported: loopback only, no usage reports
    try:
        import ray
        from ray.cluster_utils import Cluster
    except ImportError as error:
        _unavailable(f"install the ray extra (pip install 'agentgraph-engine[ray]'): {error}")
    if ray.is_initialized():  # a run_batch before this fixture started Ray on its own
        ray.shutdown()
    try:
        cluster = Cluster(
            initialize_head=True,
            head_node_args={
                "num_cpus": HEAD_CPUS,
                "include_dashboard": False,
                "node_ip_address": "127.0.0.1",
            },
        )
        ray.init(address=cluster.address, log_to_driver=False)
    except Exception as error:
        _unavailable(f"{type(error).__name__}: {error}")
    try:
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()

"""Starting Ray for a batch: on loopback, authenticated, quiet about what no caller can act on.

Every setting here is a default: an environment variable the caller set, a
Ray the caller started, or a cluster given by address is left as it is.
"""

from __future__ import annotations

import logging
import os
import secrets
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ("connect", "local_only", "ray_data_quietly")

_AUTH = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")


def local_only() -> None:
    """Keep a Ray started on this machine on loopback, without usage reports, its token in memory.

    Ray resolves even an explicit 127.0.0.1 to the machine's outward address
    unless its multi-machine mode is off; the switch is read when Ray is
    first imported, so this must come before that. A local Ray enables token
    authentication and, left to itself, writes a new token to `~/.ray` and
    warns about it; a token of this process's own, handed to the processes
    Ray starts through the environment, keeps the cluster authenticated
    without writing to the home directory.
    """
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if not any(name in os.environ for name in _AUTH):
        os.environ["RAY_AUTH_MODE"] = "token"
        os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)


def connect(ray: Any, address: str | None) -> None:
    """Join the cluster at `address`, or start Ray on this machine, on loopback only.

    Ray's notes on starting ("Started a local Ray instance") are left out:
    its warnings and errors still show.
    """
    if ray.is_initialized():
        return
    if address is None:
        ray.init(
            address="local",
            include_dashboard=False,
            _node_ip_address="127.0.0.1",
            log_to_driver=False,
            logging_level=logging.WARNING,
        )
    else:
        ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)


@contextmanager
def ray_data_quietly() -> Iterator[None]:
    """Ray Data's settings object warns about its own deprecated fields whenever it is
    made, whatever the caller set: nothing a caller can act on, so not passed on."""
    logger = logging.getLogger("ray.data")  # its notes on each execution would break the bar
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"ray\.data")
            yield
    finally:
        logger.setLevel(level)

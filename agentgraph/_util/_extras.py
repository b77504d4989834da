"""How to install an optional extra: the one place error messages take the pip line from.

A part of agentgraph that needs an extra fails, without it, with an
`ImportError` (or a `FileNotFoundError` for a binary) naming the line that
installs it, built here from the distribution's name.
"""

from __future__ import annotations

__all__ = ("DISTRIBUTION", "pip_install")

DISTRIBUTION = "agentgraph-engine"
"""The name the package is installed by."""


def pip_install(extra: str, *first: str) -> str:
    """`pip install '<distribution>[extra]'`, after any pinned packages that must come first.

    ```python
    assert pip_install("ray") == "pip install 'agentgraph-engine[ray]'"
    ```
    """
    return " ".join(("pip install", *first, f"'{DISTRIBUTION}[{extra}]'"))

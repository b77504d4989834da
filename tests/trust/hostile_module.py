"""A module with a side effect on import: it writes the file its environment names."""

import os
from pathlib import Path

Path(os.environ.get("AGENTGRAPH_HOSTILE_SENTINEL", "/nonexistent/sentinel")).touch()


class Payload:
    def __init__(self, *args, **kwargs):
        Path(os.environ["AGENTGRAPH_HOSTILE_SENTINEL"]).write_text("constructed")

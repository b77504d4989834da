"""The engine: graphs, nodes, contexts, the runner and its runtime, the layers every
effect passes, the journal protocol, events, errors, and the data they carry. It
imports no feature (see `tests/test_layering.py`)."""

"""`python -m agentgraph`: run, draw and show graphs from the command line."""

from ._cli import main

if __name__ == "__main__":
    raise SystemExit(main())

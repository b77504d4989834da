"""`python -m agentgraph` runs the `agentgraph` command: run, draw, show, serve, mcp, eval."""

from ._cli import main

if __name__ == "__main__":
    raise SystemExit(main())

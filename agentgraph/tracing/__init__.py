"""Drawing graphs and consuming step events."""

from ._mermaid import graph_to_mermaid as graph_to_mermaid

__all__ = ("graph_to_mermaid",)

"""Pictures of runs: Mermaid with the edges taken, the laid-out diagram, the HTML page."""

import re

import pytest

from agentgraph import AgentContext, GraphBuilder, GraphRunner, NodeFailed, node
from agentgraph._core._mermaid import TIMES
from agentgraph.tracing import TraceRecorder, graph_to_mermaid, run_to_mermaid, trace_to_html
from agentgraph.tracing._diagram import Diagram, diagram_from_graph, diagram_from_trace
from agentgraph.tracing._layout import layout

from .support import nested_graph, scripted_agent

pytestmark = pytest.mark.anyio


async def failed_run():
    graph, recorder = nested_graph(fail=True), TraceRecorder()
    with pytest.raises(NodeFailed):
        await GraphRunner(sinks=[recorder]).run(graph, AgentContext(1))
    return graph, recorder.trace()


async def test_run_to_mermaid_marks_edges_taken_with_counts():
    graph, trace = await failed_run()
    expected = (
        "flowchart TD\n"
        "    n0([start])\n"
        '    n1["prepare"]\n'
        '    subgraph n2 ["inner"]\n'
        "        n2_0([start])\n"
        '        n2_1["flaky"]\n'
        '        n2_2["double @4"]\n'
        '        n2_3["check"]\n'
        "        n2_4([finish])\n"
        '        n2_0 ==>|"@1"| n2_1\n'
        '        n2_1 ==>|"@1"| n2_2\n'
        '        n2_2 -.->|"again @3"| n2_2\n'
        '        n2_2 -.->|"again @1"| n2_3\n'
        "        n2_3 --> n2_4\n"
        "    end\n"
        "    n3([finish])\n"
        '    n0 ==>|"@1"| n1\n'
        '    n1 ==>|"@1"| n2\n'
        "    n2 --> n3\n"
        "    classDef ran fill:#dff3e4,stroke:#2e9d5b,color:#123\n"
        "    classDef retried fill:#fdf0d5,stroke:#e69b23,color:#321\n"
        "    classDef failed fill:#fde2e2,stroke:#d64545,color:#400\n"
        "    class n2_3,n2 failed\n"
        "    class n1,n2_2 ran\n"
        "    class n2_1 retried\n"
        "    linkStyle 0,1,2,3,5,6 stroke:#2e9d5b,stroke-width:3px\n"
    ).replace("@", TIMES)
    assert run_to_mermaid(graph, trace) == expected
    # The plain drawing is unchanged by all this.
    assert TIMES not in graph_to_mermaid(graph) and "classDef" not in graph.to_mermaid()


async def test_a_router_without_declared_targets_shows_where_it_went():
    @node
    def a(ctx):
        return ctx.with_input(ctx.input + 1)

    @node
    def b(ctx):
        return ctx

    with GraphBuilder[int, int]("g") as g:
        g.start.edge_to(a)
        a.edge_to(lambda ctx: b if ctx.input < 3 else g.finish)
        b.edge_to(a)
    graph, recorder = g.build(), TraceRecorder()
    await GraphRunner(sinks=[recorder]).run(graph, AgentContext(0))
    text = run_to_mermaid(graph, recorder.trace())
    assert "n1 -. router .-> n1_any{{any}}" in text
    text = text.replace(TIMES, "@")
    assert 'n1 -.->|"router @2"| n2' in text and 'n1 -.->|"router @1"| n3' in text
    assert 'n2 ==>|"@2"| n1' in text and 'n1["a @3"]' in text


def boxes_overlap(diagram: Diagram) -> bool:
    boxes = list(diagram.boxes.values())
    for i, p in enumerate(boxes):
        for q in boxes[i + 1 :]:
            if p.x < q.x + q.w and q.x < p.x + p.w and p.y < q.y + q.h and q.y < p.y + p.h:
                return True
    return any(b.inner is not None and boxes_overlap(b.inner) for b in boxes)


async def test_layout_places_columns_left_to_right_without_overlaps():
    agent, _ = scripted_agent()
    recorder = TraceRecorder()
    await GraphRunner(sinks=[recorder]).run(agent, AgentContext("2 + 3?"))
    trace = recorder.trace()
    for diagram in (diagram_from_graph(agent, trace), diagram_from_trace(trace)):
        layout(diagram)
        assert not boxes_overlap(diagram)
        columns = {b.label: b.layer for b in diagram.boxes.values()}
        assert columns["start"] == 0 and columns["finish"] == max(columns.values())
        assert columns["user_turn"] < columns["chat"] < min(columns["tools"], columns["answer"])
        for edge in diagram.edges:  # long edges run in lanes outside the boxes
            if edge.lane is not None:
                assert edge.lane < min(b.y for b in diagram.boxes.values()) or edge.lane > max(
                    b.y + b.h for b in diagram.boxes.values()
                )
    full = diagram_from_graph(agent, trace)
    status = {b.label: (b.status, b.runs) for b in full.boxes.values() if b.kind == "node"}
    assert status == {
        "user_turn": ("ran", 1),
        "chat": ("ran", 2),
        "tools": ("ran", 1),
        "answer": ("ran", 1),
        "final_chat": (None, 0),
    }
    taken = {(full.boxes[e.source].label, full.boxes[e.target].label): e.count for e in full.edges}
    assert taken[("chat", "tools")] == 1 and taken[("tools", "final_chat")] == 0


async def test_the_page_is_self_contained_and_escapes_what_it_shows():
    @node(name="<b>bold</b>")
    def sneaky(ctx):
        return ctx.with_input("</script><script>alert(1)</script> & more")

    with GraphBuilder[str, str]("g & <co>") as g:
        g.start.edge_to(sneaky).edge_to(g.finish)
    graph, recorder = g.build(), TraceRecorder()
    await GraphRunner(sinks=[recorder]).run(graph, AgentContext("x"))
    page = trace_to_html(recorder.trace(), graph=graph)
    assert page.count("</script>") == 2 and page.count("<script") == 2  # our own two
    assert "<b>bold</b>" not in page and "&lt;b&gt;bold&lt;/b&gt;" in page
    assert "g &amp; &lt;co&gt;" in page
    assert re.findall(r"""(?:src|href)\s*=""", page) == []  # nothing is fetched
    assert set(re.findall(r"https?://[^\s\"'<>]+", page)) == {"http://www.w3.org/2000/svg"}
    assert '<svg id="graph-svg"' in page and '<svg id="timeline-svg"' in page


async def test_the_page_draws_from_the_trace_alone_and_shows_the_mermaid_given():
    graph, trace = await failed_run()
    page = trace_to_html(trace, "flowchart TD\n  a --> b\n", title="my run")
    assert "<title>my run</title>" in page and "flowchart TD\n  a --&gt; b" in page
    assert page.count('class="row status-') == 8
    assert page.count('class="box box-node status-ran"') == 2  # prepare, double
    assert 'class="box box-graph status-failed"' in page
    assert "32 is too big" in page
    with_graph = trace_to_html(trace, graph=graph)
    assert "linkStyle" in with_graph  # run_to_mermaid by default when the graph is known
    assert with_graph.count('class="box box-finish') == 2

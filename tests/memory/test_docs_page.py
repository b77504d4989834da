"""Every Python block of docs/guides/memory.md runs."""

from pathlib import Path

from tests.test_docs import python_blocks

ROOT = Path(__file__).resolve().parents[2]


def test_memory_page_blocks_run(capsys):
    blocks = python_blocks(ROOT / "docs" / "guides" / "memory.md")
    assert len(blocks) == 4 and not blocks[0][1]
    namespace: dict[str, object] = {}
    for number, (block, continues) in enumerate(blocks, 1):
        if not continues:
            namespace = {"__name__": f"memory_block_{number}"}
        exec(compile(block, f"memory.md block {number}", "exec"), namespace)
    out = capsys.readouterr().out
    assert out.split("\n")[:3] == [f"welcome, visit number {n}" for n in (1, 2, 3)]
    assert out.split("\n")[3] == "noted (version 1) / Done."

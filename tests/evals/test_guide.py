"""Every Python block of the evaluations guide runs, in order, where it says it continues."""

from pathlib import Path

from tests.test_docs import python_blocks

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "evals.md"


def test_the_guide_runs(capsys):
    blocks = python_blocks(GUIDE)
    assert len(blocks) >= 4 and not blocks[0][1]
    namespace: dict[str, object] = {}
    for number, (block, continues) in enumerate(blocks, 1):
        if not continues:
            namespace = {"__name__": f"evals_guide_{number}"}
        exec(compile(block, f"evals.md block {number}", "exec"), namespace)
    assert "sums: 2 cases x 3 repeats" in capsys.readouterr().out

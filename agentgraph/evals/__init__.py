"""Evaluations: score a graph on a dataset of cases, repeat it, compare with a baseline.

```python
dataset = Dataset([Case("sum", "What is 2 + 3?", expected="5")])
report = await evaluate(agent, dataset, [Contains("5"), MaxToolCalls(2)], repeat=3)
render_report(report, sys.stdout)
```

Datasets (`Case`, `Dataset`: JSON lines and YAML, and pydantic-evals files)
live apart from evaluators (one small class each, all returning `Score`s
from an `Outcome`: what a run left behind, never the runner) and from
reporting (`Report`, the console table, JUnit XML, HTML, `compare`, `check`).
Runs that already ran are scored from their journal or trace (`score_runs`,
calling no model), and `what_if` replays recorded runs with one change.
YAML needs the `evals` extra (PyYAML); the table uses rich when installed.
"""

from .._core._errors import DatasetError as DatasetError
from .._core._errors import JudgeError as JudgeError
from .._core._errors import RecordedRunError as RecordedRunError
from .._core._errors import UnsupportedCase as UnsupportedCase
from ._adk import read_adk_evalset as read_adk_evalset
from ._checks import Contains as Contains
from ._checks import Equals as Equals
from ._checks import EqualsExpected as EqualsExpected
from ._checks import IsInstance as IsInstance
from ._checks import MaxCost as MaxCost
from ._checks import MaxDuration as MaxDuration
from ._checks import MaxSteps as MaxSteps
from ._checks import MaxTokens as MaxTokens
from ._checks import ValidatesAs as ValidatesAs
from ._compare import Change as Change
from ._compare import Comparison as Comparison
from ._compare import check as check
from ._compare import compare as compare
from ._dataset import Case as Case
from ._dataset import Dataset as Dataset
from ._evaluate import evaluate as evaluate
from ._evaluate import read_runs as read_runs
from ._evaluate import run_cost as run_cost
from ._evaluate import score_runs as score_runs
from ._foreign import read_pydantic_evals as read_pydantic_evals
from ._html import report_to_html as report_to_html
from ._html import write_html as write_html
from ._judge import Judge as Judge
from ._judge import Judgement as Judgement
from ._judge import Verdict as Verdict
from ._render import render_report as render_report
from ._render import to_junit as to_junit
from ._render import write_junit as write_junit
from ._report import CaseSummary as CaseSummary
from ._report import Report as Report
from ._report import RunResult as RunResult
from ._report import pass_at_k as pass_at_k
from ._report import pass_hat_k as pass_hat_k
from ._score import Evaluator as Evaluator
from ._score import Outcome as Outcome
from ._score import Score as Score
from ._traced import read_trace_runs as read_trace_runs
from ._trajectory import Call as Call
from ._trajectory import MaxModelRequests as MaxModelRequests
from ._trajectory import MaxToolCalls as MaxToolCalls
from ._trajectory import ToolArguments as ToolArguments
from ._trajectory import Trajectory as Trajectory
from ._trajectory import model_requests as model_requests
from ._trajectory import tool_calls as tool_calls
from ._whatif import Variant as Variant
from ._whatif import WhatIfCase as WhatIfCase
from ._whatif import WhatIfReport as WhatIfReport
from ._whatif import what_if as what_if

__all__ = (
    "Call",
    "Case",
    "CaseSummary",
    "Change",
    "Comparison",
    "Contains",
    "Dataset",
    "DatasetError",
    "Equals",
    "EqualsExpected",
    "Evaluator",
    "IsInstance",
    "Judge",
    "JudgeError",
    "Judgement",
    "MaxCost",
    "MaxDuration",
    "MaxModelRequests",
    "MaxSteps",
    "MaxTokens",
    "MaxToolCalls",
    "Outcome",
    "RecordedRunError",
    "Report",
    "RunResult",
    "Score",
    "ToolArguments",
    "Trajectory",
    "UnsupportedCase",
    "ValidatesAs",
    "Variant",
    "Verdict",
    "WhatIfCase",
    "WhatIfReport",
    "check",
    "compare",
    "evaluate",
    "model_requests",
    "pass_at_k",
    "pass_hat_k",
    "read_adk_evalset",
    "read_pydantic_evals",
    "read_runs",
    "read_trace_runs",
    "render_report",
    "report_to_html",
    "run_cost",
    "score_runs",
    "to_junit",
    "tool_calls",
    "what_if",
    "write_html",
    "write_junit",
)

from .._util._public import publish as _publish

_publish(__name__, __all__, globals())

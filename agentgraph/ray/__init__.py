"""Run a graph over many inputs on a Ray cluster (the `ray` extra).

`run_batch("package.module:graph", inputs, ...)` spreads the inputs over a
pool of Ray Data actors. Each actor imports the graph by that reference and
runs many runs at once on one event loop; every input gets one `BatchRow`
(output, status, typed and masked error, usage, steps, run id), and a failing
row never fails the batch. With a shared checkpoint store and a batch id, a
batch run again after a lost driver or worker reads back what finished and
resumes what was interrupted. `RateLimit`s are shared by every actor through
one Ray actor that keeps a token bucket per provider. `evaluate_on_ray` and
`score_runs_on_ray` give the reports `agentgraph.evals` gives locally.

Needs the `ray` extra (Ray Data and tqdm); without it, importing this package
is an `ImportError` naming the line that installs it. Ray itself is imported
only when a batch runs, since how it starts on this machine is set before that.
"""

import importlib.util as _util

from .._util._extras import pip_install as _pip_install

if _util.find_spec("ray") is None or _util.find_spec("tqdm") is None:
    _missing = "ray" if _util.find_spec("ray") is None else "tqdm"
    raise ImportError(
        f"agentgraph.ray needs the ray extra ({_missing} is missing): {_pip_install('ray')}"
    )

from ._batch import BatchRow as BatchRow
from ._batch import run_batch as run_batch
from ._evals import evaluate_on_ray as evaluate_on_ray
from ._evals import score_runs_on_ray as score_runs_on_ray
from ._limits import RateLimit as RateLimit

__all__ = ("BatchRow", "RateLimit", "evaluate_on_ray", "run_batch", "score_runs_on_ray")

from .._util._public import publish as _publish

_publish(__name__, __all__, globals())

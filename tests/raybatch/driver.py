"""A batch driver the tests kill: `python -m tests.raybatch.driver DB COUNTER BATCH_ID`.

It starts Ray on this machine itself and runs the batch of `test_recovery`
with an SQLite store, so that a SIGKILL takes the driver and its Ray down
mid-batch.
"""

import functools
import sys
from pathlib import Path

from agentgraph.checkpoint import SQLiteStore
from agentgraph.ray import run_batch
from tests.raybatch.test_recovery import AGENT, LEASE, questions

if __name__ == "__main__":
    db, counter, batch_id = sys.argv[1:4]
    store = functools.partial(SQLiteStore, db, lease_term=LEASE)
    run_batch(
        AGENT,
        questions(Path(counter), 0.4),
        store=store,
        batch_id=batch_id,
        concurrency=4,
        progress=False,
    )

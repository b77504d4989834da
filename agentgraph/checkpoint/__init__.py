"""Durable runs: checkpoint stores, resume, replay and forks.

Pass a store to `GraphRunner.run(graph, ctx, store=...)` and every completed
step is recorded; `GraphRunner.resume(graph, run_id, store)` continues a run
after a crash or an interrupt, `GraphRunner.replay(...)` runs a recorded run
again from its record, and `fork(store, run_id, step)` starts a new run from
any committed step.
"""

from ._codec import BlobDamaged as BlobDamaged
from ._journal import StoreJournal as StoreJournal
from ._lease import LEASE_TERM as LEASE_TERM
from ._lease import Lease as Lease
from ._postgres import PostgresStore as PostgresStore
from ._records import Effect as Effect
from ._records import RunLog as RunLog
from ._records import RunRecord as RunRecord
from ._records import StepRecord as StepRecord
from ._resume import decode_contexts as decode_contexts
from ._resume import log_blobs as log_blobs
from ._sqlite import SQLiteStore as SQLiteStore
from ._store import CheckpointStore as CheckpointStore
from ._store import MemoryStore as MemoryStore
from ._store import StoreBase as StoreBase
from ._store import fork as fork

__all__ = (
    "BlobDamaged",
    "CheckpointStore",
    "Effect",
    "LEASE_TERM",
    "Lease",
    "MemoryStore",
    "PostgresStore",
    "RunLog",
    "RunRecord",
    "SQLiteStore",
    "StepRecord",
    "StoreBase",
    "StoreJournal",
    "decode_contexts",
    "fork",
    "log_blobs",
)

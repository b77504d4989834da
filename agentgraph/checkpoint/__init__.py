"""Durable runs: checkpoint stores, resume, replay and forks.

Pass a store to `GraphRunner.run(graph, ctx, store=...)` and every completed
step is recorded; `GraphRunner.resume(graph, run_id, store)` continues a run
after a crash or an interrupt, `GraphRunner.replay(...)` runs a recorded run
again from its record, and `fork(store, run_id, step)` starts a new run from
any committed step.

Threads: `GraphRunner.run(graph, ctx, store=..., thread_id=...)` runs the next
turn of a conversation kept in the store; `list_threads`, `read_thread`,
`fork_thread`, `rewind_thread` and `delete_thread` manage them, and a
`Compaction` policy keeps a thread within a token budget.

Graph versions: `check_runs` lists the unfinished runs a graph could not
resume (before a deploy), `resume_problem` says why one run could not be
(a worker holding some versions asks it before claiming a run), and
`migrate_runs` applies a graph's context migrations to every run in a batch.
"""

from .._core._errors_threads import CompactionFailed as CompactionFailed
from .._core._errors_threads import ThreadBusy as ThreadBusy
from .._core._errors_threads import ThreadDamaged as ThreadDamaged
from .._core._errors_threads import ThreadError as ThreadError
from .._core._errors_threads import ThreadMoved as ThreadMoved
from .._core._errors_threads import ThreadNotFound as ThreadNotFound
from ._codec import BlobDamaged as BlobDamaged
from ._compaction import Compacted as Compacted
from ._compaction import Compaction as Compaction
from ._compaction import apply_compaction as apply_compaction
from ._journal import StoreJournal as StoreJournal
from ._lease import LEASE_TERM as LEASE_TERM
from ._lease import Lease as Lease
from ._postgres import PostgresStore as PostgresStore
from ._records import Effect as Effect
from ._records import RunLog as RunLog
from ._records import RunRecord as RunRecord
from ._records import StepRecord as StepRecord
from ._records import ThreadHead as ThreadHead
from ._records import ThreadLog as ThreadLog
from ._resume import decode_contexts as decode_contexts
from ._resume import log_blobs as log_blobs
from ._sqlite import SQLiteStore as SQLiteStore
from ._store import CheckpointStore as CheckpointStore
from ._store import MemoryStore as MemoryStore
from ._store import StoreBase as StoreBase
from ._store import fork as fork
from ._threads import Thread as Thread
from ._threads import ThreadStore as ThreadStore
from ._threads import delete_thread as delete_thread
from ._threads import fork_thread as fork_thread
from ._threads import list_threads as list_threads
from ._threads import read_thread as read_thread
from ._threads import rewind_thread as rewind_thread
from ._upgrades import Stranded as Stranded
from ._upgrades import check_runs as check_runs
from ._upgrades import migrate_runs as migrate_runs
from ._upgrades import resume_problem as resume_problem

__all__ = (
    "BlobDamaged",
    "CheckpointStore",
    "Compacted",
    "Compaction",
    "CompactionFailed",
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
    "Stranded",
    "Thread",
    "ThreadBusy",
    "ThreadDamaged",
    "ThreadError",
    "ThreadHead",
    "ThreadLog",
    "ThreadMoved",
    "ThreadNotFound",
    "ThreadStore",
    "apply_compaction",
    "check_runs",
    "decode_contexts",
    "delete_thread",
    "fork",
    "fork_thread",
    "list_threads",
    "log_blobs",
    "migrate_runs",
    "read_thread",
    "resume_problem",
    "rewind_thread",
)

from .._util._public import publish as _publish

_publish(__name__, __all__, globals())

"""Long-term memory: JSON objects under tuple namespaces, kept across runs.

Three stores share one protocol (`Memory`) and one contract: `InMemoryMemory`
(a dict), `SQLiteMemory` (one file several processes share) and
`PostgresMemory` (a database many machines share). With an `Embedder` a
search compares meaning; without one, words. Nodes reach memory through
`journaled(memory, rt)`, so a run's reads and writes are effects of its
journal: a replay is served what the run read and writes nothing, and a
resumed step never writes twice. `memory_tools` gives an agent `remember`,
`recall` and `forget` in a namespace the graph fixes, never the model.

Needs numpy (`pip install 'agentgraph-engine[rag]'`); `PostgresMemory` also psycopg.
"""

import importlib.util as _util

from .._util._extras import pip_install as _pip_install

if _util.find_spec("numpy") is None:
    raise ImportError(f"agentgraph.memory needs numpy: {_pip_install('rag')}")

from ..rag._rows import Filter as Filter
from ..rag._store import Hit as Hit
from ._base import MemoryBase as MemoryBase
from ._errors import LongTermMemoryError as LongTermMemoryError
from ._errors import MemoryBackendError as MemoryBackendError
from ._errors import MemoryDataError as MemoryDataError
from ._errors import MemoryEmbedError as MemoryEmbedError
from ._errors import MemoryInputError as MemoryInputError
from ._inmemory import InMemoryMemory as InMemoryMemory
from ._items import MAX_KEY as MAX_KEY
from ._items import Item as Item
from ._items import Memory as Memory
from ._items import MemoryHit as MemoryHit
from ._items import Namespace as Namespace
from ._journaled import JournaledMemory as JournaledMemory
from ._journaled import journaled as journaled
from ._postgres import PostgresMemory as PostgresMemory
from ._sqlite import SQLiteMemory as SQLiteMemory
from ._tools import memory_tools as memory_tools

__all__ = (
    "Filter",
    "Hit",
    "InMemoryMemory",
    "Item",
    "JournaledMemory",
    "LongTermMemoryError",
    "MAX_KEY",
    "Memory",
    "MemoryBackendError",
    "MemoryBase",
    "MemoryDataError",
    "MemoryEmbedError",
    "MemoryHit",
    "MemoryInputError",
    "Namespace",
    "PostgresMemory",
    "SQLiteMemory",
    "journaled",
    "memory_tools",
)

from .._util._public import publish as _publish

_publish(__name__, __all__, globals())

"""Ready-made nodes and combinators."""

from ._combinators import MapEach as MapEach
from ._combinators import Parallel as Parallel
from ._combinators import map_each as map_each
from ._combinators import parallel as parallel

__all__ = ("MapEach", "Parallel", "map_each", "parallel")

"""Guardrails: input, output and tool guards that allow, block or rewrite.

```python
runner = GraphRunner(guards=Guards(tools=[ToolPolicy(deny=["delete_*"])]))
```

See the guide page "Guards" for the whole story.
"""

from .._core._errors_guards import GuardError as GuardError
from .._core._errors_guards import GuardrailTripped as GuardrailTripped
from .._core._events import GuardDecided as GuardDecided
from ._builtin import JudgeGuard as JudgeGuard
from ._builtin import MaskSecrets as MaskSecrets
from ._builtin import MaxLength as MaxLength
from ._builtin import ToolPolicy as ToolPolicy
from ._builtin import text_of as text_of
from ._effects import PARTIAL as PARTIAL
from ._guard import DEFAULT_TIMEOUT as DEFAULT_TIMEOUT
from ._guard import Decision as Decision
from ._guard import FunctionGuard as FunctionGuard
from ._guard import Guard as Guard
from ._guard import Guards as Guards
from ._guard import Stage as Stage
from ._guard import guard as guard
from ._node import CheckOutput as CheckOutput
from ._node import check_output as check_output
from ._pii import MaskPII as MaskPII
from ._pii import luhn_valid as luhn_valid
from ._text import TextGuard as TextGuard

__all__ = (
    "CheckOutput",
    "DEFAULT_TIMEOUT",
    "Decision",
    "FunctionGuard",
    "Guard",
    "GuardDecided",
    "GuardError",
    "GuardrailTripped",
    "Guards",
    "JudgeGuard",
    "MaskPII",
    "MaskSecrets",
    "MaxLength",
    "PARTIAL",
    "Stage",
    "TextGuard",
    "ToolPolicy",
    "check_output",
    "guard",
    "luhn_valid",
    "text_of",
)

from .._util._public import publish as _publish

_publish(__name__, __all__, globals())

"""Keep paramiko's import from paying for `invoke` until an SSH config line actually needs it.

paramiko.config runs `import invoke` when paramiko is imported, only so that a `Match exec` line in
~/.ssh/config can later call `invoke.run`. Importing invoke costs about as much as the rest of
paramiko (~85 ms: asyncio, unittest.mock, a vendored YAML). A placeholder module stands in for it
and imports the real one on first attribute access, so `Match exec` still works, at its own cost.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from typing import Any

_NAME = "invoke"


class _DeferredInvoke(types.ModuleType):
    """Stands in for `invoke` in sys.modules; the first attribute lookup swaps in the real module."""

    def __getattr__(self, attr: str) -> Any:
        # Only attributes the placeholder lacks get here; `__spec__` is set, so the import machinery's
        # own checks never trigger the real import.
        if sys.modules.get(_NAME) is self:
            del sys.modules[_NAME]
        return getattr(importlib.import_module(_NAME), attr)


def defer_invoke() -> None:
    """Install the placeholder, unless invoke is already imported or not installed at all."""
    if _NAME in sys.modules:
        return
    spec = importlib.util.find_spec(_NAME)
    if spec is None:
        return  # paramiko handles a missing invoke itself (Match exec then says so)
    placeholder = _DeferredInvoke(_NAME)
    placeholder.__spec__ = None  # not "initializing": `import invoke` returns the placeholder as is
    sys.modules[_NAME] = placeholder

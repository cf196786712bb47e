"""What the ``orch`` process skips at start-up (the CLI only; never the tasks, never the Python API).

pydantic looks for plugins the first time a model class is built: its loader imports
``importlib.metadata`` (and with it ``email``, ``csv``, ``socket``, ``calendar``, ...) and reads the
entry points of every installed distribution, about a fifth of a dry run's time. orch's CLI uses no
pydantic plugin, so :func:`skip_pydantic_plugins` answers "no plugins" in this process, as
``PYDANTIC_DISABLE_PLUGINS=__all__`` would, without setting that variable: sbatch, ``orch run``'s
ranks and every other child inherit the environment unchanged. ``ORCH_PYDANTIC_PLUGINS=1`` keeps
the plugins (and the scan).
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterable, Mapping
from typing import Any

PLUGIN_LOADER = "pydantic.plugin._loader"
KEEP_PLUGINS_ENV_VAR = "ORCH_PYDANTIC_PLUGINS"


def _no_plugins() -> Iterable[Any]:
    return ()


def skip_pydantic_plugins(environ: Mapping[str, str]) -> bool:
    """Install a plugin loader that finds none, unless pydantic's own loader is already imported or
    the user asked for plugins. True when installed."""
    if environ.get(KEEP_PLUGINS_ENV_VAR) == "1" or PLUGIN_LOADER in sys.modules:
        return False
    loader = types.ModuleType(PLUGIN_LOADER, "orch: no pydantic plugins in the CLI process (orchestrator.lean)")
    loader.get_plugins = _no_plugins  # type: ignore[attr-defined]  # the one name pydantic imports from it
    loader.PYDANTIC_ENTRY_POINT_GROUP = "pydantic"  # type: ignore[attr-defined]
    sys.modules[PLUGIN_LOADER] = loader
    return True

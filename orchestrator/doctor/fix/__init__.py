"""``orch doctor --fix``: the fixes of the mechanical pitfalls, written with libcst so that the rest of the
script keeps its formatting and comments. One module per fix; :data:`FIXERS` maps a finding's code to it.

This package imports libcst: import it only where a fix is asked for (never on the CLI's start-up path)::

    from orchestrator.doctor.fix import fix_source, unified_diff
    fixed = fix_source(text, "train.py")
    print(unified_diff(text, fixed.text, "train.py"))
"""

from __future__ import annotations

from orchestrator.doctor.fix.apply import FIXERS, Fixed, fix_source, unified_diff
from orchestrator.doctor.fix.write import ScriptChanged, write_fixed

__all__ = ["FIXERS", "Fixed", "ScriptChanged", "fix_source", "unified_diff", "write_fixed"]

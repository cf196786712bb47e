"""A device chosen and never used: ``self.device = torch.device(f"cuda:{rank}")`` (CosyVoice's executor) where
nothing in the file, nor in the script for a helper, reads ``.device`` again: DDP010 takes no device from the global
rank there (the model goes where the script's own binding puts it)."""

from __future__ import annotations

import ast

from orchestrator.doctor.analysis import Analysis


def stored_unread(a: Analysis, call: ast.Call) -> bool:
    """``self.device = torch.device(f"cuda:{rank}")`` (CosyVoice's executor) where nothing in the file, nor in the
    script for a helper, reads ``.device`` again (nor the name, for ``device = ...``): a device chosen, never used."""
    parent = a.module.parents.get(call)
    if not (isinstance(parent, ast.Assign) and len(parent.targets) == 1 and parent.value is call
            and a.module.qualname(call.func) == "torch.device"):
        return False  # (``m = model.to(dev)`` uses the device, whether or not ``m`` is read)
    target = parent.targets[0]
    modules = [a.module, *([a.outer.module] if a.outer is not None else [])]
    if isinstance(target, ast.Attribute):  # not ``torch.device(...)`` itself: a call's function is no read of it
        calls = {id(n.func) for m in modules for n in m.nodes if isinstance(n, ast.Call)}
        return not any(isinstance(n, ast.Attribute) and n.attr == target.attr and isinstance(n.ctx, ast.Load)
                       and id(n) not in calls for m in modules for n in m.nodes)
    if isinstance(target, ast.Name):
        return not any(isinstance(n, ast.Name) and n.id == target.id and isinstance(n.ctx, ast.Load)
                       for n in a.module.nodes)
    return False

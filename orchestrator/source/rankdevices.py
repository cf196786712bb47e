"""Devices: which values name a CUDA device (the current one or a numbered one), and whether a device is numbered by
the global rank. A part of :class:`orchestrator.source.ranks.Ranks`, which reads the ranks these rest on."""

from __future__ import annotations

import ast
from typing import Literal

from orchestrator.source.exprnames import dotted
from orchestrator.source.names import Module

DeviceKind = Literal["default", "index"]

_MAX_DEPTH = 8


class Devices:
    """What :class:`Ranks` reads about devices; ``source`` and ``dependent`` are its readings of ranks."""

    module: Module
    device_names: frozenset[str] = frozenset()  # names that hold a rank (a device numbered by one)

    def source(self, expr: ast.expr, depth: int = 0) -> str | None:
        raise NotImplementedError

    def dependent(self, expr: ast.expr, depth: int = 0) -> bool:
        raise NotImplementedError

    # -- devices ------------------------------------------------------------------------------------
    def device_kind(self, expr: ast.expr, depth: int = 0) -> DeviceKind | None:
        """``default`` for the current CUDA device ("cuda", torch.device("cuda")), ``index`` for a
        numbered one (3, "cuda:1", f"cuda:{local_rank}", a rank), None when not a CUDA device."""
        if depth > _MAX_DEPTH:
            return None
        if isinstance(expr, ast.Constant):
            const = expr.value
            if isinstance(const, str):
                return "default" if const == "cuda" else "index" if const.startswith("cuda:") else None
            return "index" if isinstance(const, int) and not isinstance(const, bool) else None
        if isinstance(expr, ast.JoinedStr):
            head = expr.values[0] if expr.values else None
            if isinstance(head, ast.Constant) and isinstance(head.value, str) and head.value.startswith("cuda"):
                return "index" if len(expr.values) > 1 else self.device_kind(head, depth + 1)
            return None
        if isinstance(expr, ast.IfExp):
            return self.device_kind(expr.body, depth + 1) or self.device_kind(expr.orelse, depth + 1)
        if isinstance(expr, ast.Call):
            q = self.module.qualname(expr.func)
            if q == "torch.device":
                if len(expr.args) >= 2 or any(k.arg == "index" for k in expr.keywords):
                    return "index"
                return self.device_kind(expr.args[0], depth + 1) if expr.args else None
            if isinstance(expr.func, ast.Attribute) and expr.func.attr == "format":
                return self.device_kind(expr.func.value, depth + 1) and "index"
            return "index" if self.source(expr, depth + 1) else None
        if isinstance(expr, ast.BinOp):
            if isinstance(expr.left, ast.Constant) and isinstance(expr.left.value, str):
                return "index" if expr.left.value.startswith("cuda:") else None
            return "index" if self.dependent(expr, depth + 1) else None
        if isinstance(expr, ast.Name):
            _, value = self.module.resolve(expr.id, expr)
            if value is not None:
                return self.device_kind(value, depth + 1)
            return "index" if expr.id in self.device_names else None
        if isinstance(expr, ast.Attribute):
            return "index" if expr.attr in self.device_names else None
        return "index" if self.source(expr, depth + 1) else None

    def _passed(self, expr: ast.Attribute, key: str) -> list[ast.expr]:
        """``config.rank`` in ``def train(config)``, never assigned as such: what the callers in this file set on
        the object they pass (``CFG.rank = int(os.environ["RANK"])``, then ``train(CFG)``)."""
        root: ast.expr = expr
        while isinstance(root, ast.Attribute):
            root = root.value
        rest = key.partition(".")[2]
        return [value for arg in (self.module.passed_for(root) if isinstance(root, ast.Name) else [])
                if (name := dotted(arg)) is not None for value in self.module.values_anywhere(f"{name}.{rest}")]

    def _int_constant(self, expr: ast.expr) -> bool:
        if isinstance(expr, ast.Name):
            expr = self.module.resolve(expr.id, expr)[1] or expr
        return isinstance(expr, ast.Constant) and isinstance(expr.value, int) and not isinstance(expr.value, bool)

    def device_from_global_rank(self, expr: ast.expr, depth: int = 0) -> bool:
        """Whether the device ``expr`` names is numbered by the global rank (RANK, get_rank())."""
        if depth > _MAX_DEPTH:
            return False
        if self.source(expr, depth) == "global":
            return True
        if isinstance(expr, ast.Name):
            found, value = self.module.resolve(expr.id, expr)
            if value is None and found:  # a parameter: what the callers in this file pass for it
                function = self.module.function_of(expr)
                params = [p.arg for p in function.args.args] if function is not None else []
                if function is None or expr.id not in params or self.module.spawned(function):
                    return False
                return any(self.device_from_global_rank(arg, depth + 2)
                           for arg in self.module.argument_for(function, expr.id))
            return value is not None and self.device_from_global_rank(value, depth + 1)
        if isinstance(expr, ast.Attribute):
            key = dotted(expr)
            if key is None or "." not in key:
                return False
            found, value = self.module.resolve(key, expr)
            values = [value] if value is not None else (self.module.values_anywhere(key) or self._passed(expr, key))
            return any(self.device_from_global_rank(v, depth + 2) for v in values)
        if isinstance(expr, ast.Call):
            parts = list(expr.args)
            if isinstance(expr.func, ast.Attribute) and expr.func.attr == "format":
                parts = list(expr.args)
            elif self.module.qualname(expr.func) not in ("torch.device", "str", "int"):
                return False
            return any(self.device_from_global_rank(part, depth + 1) for part in parts)
        if isinstance(expr, ast.JoinedStr):
            return any(self.device_from_global_rank(v.value, depth + 1)
                       for v in expr.values if isinstance(v, ast.FormattedValue))
        if isinstance(expr, ast.BinOp) and isinstance(expr.left, ast.Constant) and isinstance(expr.left.value, str):
            return self.device_from_global_rank(expr.right, depth + 1)
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mod) and self._int_constant(expr.right):
            # rank % 8: a GPU count written in the code, wrong on a node with another count
            return self.device_from_global_rank(expr.left, depth + 1)
        if isinstance(expr, ast.IfExp):
            return self.device_from_global_rank(expr.body, depth + 1) or self.device_from_global_rank(
                expr.orelse, depth + 1)
        return False


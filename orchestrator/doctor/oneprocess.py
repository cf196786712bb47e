"""Code that one process runs in a distributed script, where the current CUDA device is the only one (DDP001 has
nothing to say there): the single-process side of a distributed switch, and the spawner's own work before it starts
the ranks; and a file that masks each process to its own GPU, where ``cuda:0`` is that process's (DDP009 neither)."""

from __future__ import annotations

import ast

from orchestrator.launchstyles.spawns import spawns
from orchestrator.source.analysis import INIT, WRAPPERS
from orchestrator.source.analysis import Analysis as Reading
from orchestrator.source.argflags import local_rank_flags
from orchestrator.source.branches import enclosing_ifs, other_side
from orchestrator.source.flow import Site
from orchestrator.source.ranks import Ranks
from orchestrator.source.walk import walk


def undistributed_side(a: Reading, site: Site) -> bool:
    """``site`` sits on one side of an ``if`` whose other side joins the group or wraps the model in DDP (``if
    distributed: ... DDP(model, device_ids=[local_rank])`` / ``else: model = DataParallel(model).cuda()``): the run
    of one process, where the current device is the only one."""
    return any(isinstance(n, ast.Call) and a.module.qualname(n.func) in WRAPPERS | INIT
               for statement, in_body in enclosing_ifs(a.module.parents, site.call)
               for stmt in other_side(statement, in_body) for n in walk(stmt))


def before_a_spawn(a: Reading, sites: list[Site]) -> list[Site]:
    """The ``sites`` that run in the process that spawns the ranks, before the spawn in the same function (RelBench's
    preprocessing on ``"cuda"`` ahead of ``mp.spawn(run_main, ...)``): one process, not a rank (the file's spawns read
    once for all of them)."""
    started = [s.node for s in spawns(a)] if a.spawns and sites else []
    return [site for site in sites if any(a.module.function_of(node) is site.function and site.call.lineno < node.lineno
                                          for node in started)]


def masked_to_own_gpu(a: Reading) -> bool:
    """``os.environ["CUDA_VISIBLE_DEVICES"] = str(args.local_rank)``: each process sees its own GPU alone (scGPT's).
    The value must hold a rank by where it comes from (the environment's local rank, a spawn index, the legacy
    ``--local_rank`` flag the file declares), not by a name alone: ``args.gpu_id``, a flag of default ``'0,1'``, is
    a list of every GPU."""
    masks = visible_device_masks(a)
    if not masks:
        return False
    flags = local_rank_flags(a.module.tree)
    sourced = Ranks(a.module)  # its own reading, names off (the script's keeps its caches as they are)
    sourced.names = False
    for node in masks:
        inner = node.value.args[0] if isinstance(node.value, ast.Call) and node.value.args else node.value
        if (isinstance(inner, ast.Attribute) and inner.attr in flags) or sourced.source(inner) is not None:
            return True
    return False


def visible_device_masks(a: Reading) -> list[ast.Assign]:
    """The file's ``os.environ["CUDA_VISIBLE_DEVICES"] = ...`` assignments."""
    return [node for node in a.module.nodes if isinstance(node, ast.Assign)
            and any(a.ranks.env_key(t) == "CUDA_VISIBLE_DEVICES" for t in node.targets)]

"""A node-local rank shifted by its node's offset holds the global rank from there on (source/nodeshift.py)."""

from __future__ import annotations

import ast

from orchestrator.source.names import Module
from orchestrator.source.nodeshift import shifted
from orchestrator.source.ranks import Ranks

SCRIPT = '''
def train(args):
    if args.local_rank in [-1, 0]:
        save()


def main(args, gpu, node_rank, ngpus):
    set_device(args.local_rank)
    args.local_rank += args.node_index * args.gpu_per_node
    log(args.local_rank)
    use(gpu)
    gpu += node_rank * ngpus
    use(gpu)
    args.other += args.node_index + 1
    use(args.other)
'''


def _uses(module: Module, text: str) -> list[ast.expr]:
    return [n for n in module.nodes if isinstance(n, ast.Name | ast.Attribute) and ast.unparse(n) == text
            and isinstance(module.parents[n], ast.Call | ast.Compare)]


def test_a_use_after_the_shift_or_in_another_function_holds_the_global_rank() -> None:
    module = Module(ast.parse(SCRIPT))
    ranks = Ranks(module)
    in_train, before, after = _uses(module, "args.local_rank")
    assert shifted(module, in_train) and ranks.source(in_train) == "global"  # train() runs once the ranks are set
    assert not shifted(module, before) and ranks.source(before) == "local"  # the device is bound before the shift
    assert shifted(module, after) and ranks.source(after) == "global"
    local, shifted_gpu = _uses(module, "gpu")  # a name (gpu: a local rank by its name) before and after its shift
    assert ranks.source(local) == "local" and ranks.source(shifted_gpu) == "global"


def test_an_offset_that_is_no_node_index_times_a_count_is_no_shift() -> None:
    module = Module(ast.parse(SCRIPT))
    [other] = _uses(module, "args.other")
    assert not shifted(module, other)

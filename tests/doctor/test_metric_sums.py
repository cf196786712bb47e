"""What an evaluation loop adds up (``metric_sums``): the names it accumulates into, the values it reads, and whether
a reduction covers a name."""

from __future__ import annotations

import ast

from orchestrator.doctor.metric_sums import accumulations, collected, covers, iterated, refs


def _loop(source: str) -> ast.For:
    return next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.For))


def test_sums_lists_averagers_and_stores_are_accumulations() -> None:
    loop = _loop("for b in loader:\n    total += f(b)\n    losses.append(l)\n    meter.update(v, n=2)\n"
                 "    out[k] = w\n    sums[k] += x\n    stats.update()\n    bar.set_postfix(loss=l)\n")
    assert set(accumulations(loop)) == {"total", "losses", "meter", "out", "sums"}
    assert not collected(loop, "total") and collected(loop, "meter") and not collected(loop, "sums")


def test_refs_leave_out_methods_and_modules() -> None:
    expr = ast.parse("torch.stack([outputs.loss.detach().float(), np.mean(xs)]).item()", mode="eval").body
    assert refs([expr], {"torch", "np"}) == {"outputs.loss", "xs"}


def _covers(source: str, names: set[str]) -> bool:
    scope = ast.parse(source)
    call = [n for n in ast.walk(scope) if isinstance(n, ast.Call)][-1]
    return covers(call, scope, names, {"torch", "dist"})


def test_a_reduction_covers_what_it_is_handed_or_what_that_is_computed_from() -> None:
    assert _covers("dist.all_reduce(total)\n", {"total"})
    assert _covers("stats = torch.tensor([correct, n])\ndist.all_reduce(stats)\n", {"correct"})
    assert _covers("gather(outputs)\n", {"outputs.loss"})
    assert _covers("meters.sync()\n", {"total"})  # handed nothing the reader can follow


def test_a_reduction_of_another_value_does_not_cover() -> None:
    assert not _covers("acc = torch.tensor(correct)\ndist.all_reduce(acc)\n", {"eval_losses", "logits"})
    assert not _covers("gather(outputs.logits.argmax(-1))\n", {"eval_loss", "outputs.loss"})
    assert not _covers("meters = Meters()\nmeters.sync()\n", {"total"})


def test_a_reduction_in_a_loop_over_a_list_of_values_covers_each_of_them() -> None:
    tree = ast.parse("for t in [loss, accuracy]:\n    dist.all_reduce(t)\ntotal += loss\n")
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call))
    assert [ast.unparse(v) for v in iterated(tree, "t", call)] == ["loss", "accuracy"]
    assert covers(call, tree, {"accuracy"}, set()) and not covers(call, tree, {"total_steps"}, set())

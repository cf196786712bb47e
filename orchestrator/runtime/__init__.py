"""The training runtime, torch's side of a task: the only package that imports torch.

Nothing outside this package imports it (an import-linter contract). Importing the package itself is
cheap (no torch): ``launch`` (``python -m orchestrator.runtime.launch``, the task process) runs the
torch-free :mod:`orchestrator.task.launch` first and imports the rest only when the task gets that
far. The modules that need torch import it themselves:

- ``launch``: the task process; torch's side handed to ``task.launch`` (train, bind a script's GPU)
- ``imports``: ``import torch`` timed, ``torch._dynamo`` prefetched during the rendezvous
- ``bind``: a script task's GPU bound before the script runs (the choice is ``env.devices``)
- ``dist``: process group setup/teardown, reductions that return floats, stop votes, parameter checksums
- ``data``: ``TensorData`` (in-memory sets), sharding and padding, nested batches
- ``sources``: per data set, the in-memory fast path or a DataLoader (workers, seeds per batch)
- ``task``: ``TrainTask`` (what a job's ``build`` returns) and ``BuildContext`` (what it gets)
- ``measures``: task metrics (batch sums), accuracy for classification, the running tally
- ``schedule``: learning-rate schedules as pure functions of the optimizer step
- ``loop``: one training epoch (accumulation, non-finite guard) and a sharded evaluation
- ``setup``: the task placed, wrapped in DDP and checked; its data sources
- ``progress``: progress lines and ``progress.json`` inside an epoch
- ``metrics``: the per-epoch line, ``metrics.jsonl`` and ``result.json`` (strict JSON)
- ``state``: the typed contents of a checkpoint (``Resume``)
- ``checkpoint``: atomic save, resume, fallback to the previous checkpoint
- ``identity``: is this checkpoint this job's (name, counters, model keys and shapes), on every rank
- ``selftest``: the cluster self-test's measurements (the verdicts are ``task.selftest``)
- ``entry``: the shared entrypoint tying them together (``Trainer.run``: the loop)
"""

"""The training runtime: the only package that imports torch.

Importing the package itself is cheap (no torch): ``launch`` installs the preemption handler from
``runtime.preempt`` before torch is imported. The modules that need torch import it themselves:

- ``device``: which device and backend a rank uses (pure, no torch), duplicate (host, device) check
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
- ``preempt``: the signal flag and the step at which every rank agrees to stop
- ``entry``: the shared entrypoint tying them together (``Trainer.run``: the loop)
"""

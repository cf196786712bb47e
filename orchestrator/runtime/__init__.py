"""The training runtime: the only package that imports torch.

Importing the package itself is cheap (no torch): ``launch`` installs the preemption handler from
``runtime.preempt`` before torch is imported. The modules that need torch import it themselves:

- ``device``: which device and backend a rank uses (pure, no torch), duplicate (host, device) check
- ``dist``: process group setup/teardown, reductions that return floats, parameter checksums
- ``data``: MNIST IDX and CIFAR-10 decoding into tensors, batches gathered from sampler indices
- ``task``: ``TrainTask`` (what a job's ``build`` returns) and ``BuildContext`` (what it gets)
- ``loop``: one training epoch and a sharded evaluation
- ``metrics``: the per-epoch line, ``metrics.jsonl`` and ``result.json``
- ``checkpoint``: atomic save, resume, fallback to the previous checkpoint
- ``preempt``: the signal flag and the step at which every rank agrees to stop
- ``entry``: the shared entrypoint tying them together
"""

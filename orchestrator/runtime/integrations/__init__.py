"""Preemption for scripts written for a framework: checkpoint on orch's signal, exit for a requeue, resume.

Each module imports its framework itself, so importing one never imports the others (the frameworks are
the ``frameworks`` extra; orch's CLI never imports this package):

- ``preempt``: what every integration shares, and what Fabric / Accelerate / plain-torch loops call:
  :class:`Preemption` (every rank agrees on the step, then ``requeue()`` exits with 75)
- ``lightning``: :class:`OrchPreemption`, a Lightning callback (resume with ``ckpt_path="last"``)
- ``hf``: :class:`OrchPreemptionCallback`, a ``transformers`` ``TrainerCallback``, and
  :func:`last_checkpoint` for ``trainer.train(resume_from_checkpoint=...)``
"""

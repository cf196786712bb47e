"""The service under every interface: what ``orch``'s verbs, ``orchestrator.submit()``, ``orch mcp`` and ``orch top``
do, as functions over plain values that return plain dataclasses. The interfaces (``commands/``, ``api.py``,
``views/``) format what these return and reach Slurm and job folders only through them (docs/layout.md)."""

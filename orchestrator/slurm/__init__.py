"""Slurm: plan and render the batch script, submit it, the one client that runs Slurm's commands, read its answers."""

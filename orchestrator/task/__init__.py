"""One task's process, torch-free: the launcher, the script runner, outcome records, hang evidence, preemption."""

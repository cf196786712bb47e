"""Where a task is (pure): hostlists, the derived rank variables, the master port, task environments, GPUs."""

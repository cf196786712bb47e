"""What the user declares: job files, cluster.yaml, site options, containers, the script target, job.json (pure)."""

"""When a job fails: the blamed rank, whether another attempt is worth it, the nodes to avoid, the ledger."""

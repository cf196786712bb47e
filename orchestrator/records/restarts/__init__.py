"""When a job fails: the blamed rank, the nodes to avoid, attempts.json and the ledger (whether another attempt is
worth it, and in-process restarts: orchestrator/restarts/)."""

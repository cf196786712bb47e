"""Submission from another machine over SSH: the transport (ssh.py), shipping the code (ship.py),
forwarding orch's verbs to the cluster's own orch (forward.py, follow.py). See docs/remote.md."""

"""What orch shows of a job's logs and writes on request: the log views, the follower's reader check, output files."""

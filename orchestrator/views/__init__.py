"""What a terminal view of the jobs shows (orch top): the rows, one job\x27s detail, and the textual app."""

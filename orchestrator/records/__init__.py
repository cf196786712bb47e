"""What a job folder holds and what is read back from it: layout, trust, blame, resume checks, start-up phases."""

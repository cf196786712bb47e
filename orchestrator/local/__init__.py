"""Local runs (``orch run``): plan the job folder, start the ranks as processes on this machine."""

"""What a job folder holds and what is read back from it: layout, trust, atomic writes, the cache, training
records and start-up phases; code snapshots, restarts and logs in their own sub-packages."""

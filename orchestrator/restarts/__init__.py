"""In-process restarts (``launcher.restart: in-process``): one package, from the store's keys to the forked worker."""

"""Built-in jobs: one small file per job (model, data, defaults); no distributed code."""

"""One module per CLI verb (its help line is in ``cli.VERBS``): ``add_arguments(parser)``, ``run(args) -> int``."""

"""The reader of users' code: one script's analysis (names, ranks, call sites), the script's own project (the
local modules its calls reach), the folders it puts on ``sys.path``, and the files it is made of. It parses
(``orchestrator.spec.pysource``), never imports or runs the code, and judges nothing: the doctor's rules
(``orchestrator.doctor``) and the launch styles (``orchestrator.launchstyles``) read what it finds."""

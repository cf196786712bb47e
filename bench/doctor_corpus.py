"""orch doctor on the real corpus (tests/doctor/real/): precision, error precision, recall and the per-code
table that docs/doctor.md ("Judged on real code") shows.

Run: .venv/bin/python bench/doctor_corpus.py [--findings] [--default | --shown] [--heldout | --tuned | --set N]
     [SCRIPT ...]
``--default`` scores the doctor's certain and likely findings (its possible findings left out, as without ``--all``);
``--shown`` scores exactly what ``orch doctor SCRIPT`` prints without ``--all`` (the finding the script's launch style
answers dropped as well: DDP014 for a per-node script, DDP015 for a ``--local_rank`` one).
``--launch`` instead scores how orch would start the scripts whose truth records it (set 9 on: launch style,
framework, and the 2-node verdict of ``orch submit --nodes 2 --gpus 8 --dry-run``: tests/doctor/real_launch.py),
one line per script with ``--findings``.
``--findings`` lists every finding with its verdict (TRUE/FALSE) and every missed pitfall first; SCRIPT
names folders of tests/doctor/real/ to score only those; ``--heldout`` scores only the scripts judged after
the doctor was tuned (``heldout: true`` in truth.yaml), ``--tuned`` only the others. The table ends with one
figures line per subset.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "doctor"))

from real_corpus import main, set_label, truth  # noqa: E402
from real_launch import main as launch_main  # noqa: E402


def launch(argv: list[str]) -> int:
    """``--launch``: real_launch.py on the scripts asked (``--set N`` or names), those whose truth records it."""
    names = [a for a in argv if not a.startswith("-") and not a.isdigit()]
    if "--set" in argv:
        wanted = f"set {argv[argv.index('--set') + 1]}"
        names = [n for n, e in sorted(truth().items()) if set_label(e) == wanted and "launch" in e]
        if not names:  # not every script of the corpus: none of this set records how it must be started
            print(f"no script of {wanted} records how it must be started (launch, framework, two_nodes)")
            return 0
    return launch_main([*names, *(["--scripts"] if "--findings" in argv else [])])


if __name__ == "__main__":
    sys.exit(launch(sys.argv[1:]) if "--launch" in sys.argv else main(sys.argv[1:]))
